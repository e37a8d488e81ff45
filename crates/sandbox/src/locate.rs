//! Turning a failure into a location: file, line, column, function, the
//! exception, expected vs actual where a test compared values, and a few lines
//! of the code around it.
//!
//! Two sources: the harness's structured report (tests of a node) and a plain
//! Python traceback on stderr (`codeloop exec`, evaluation samples).

use super::harness::{CaseError, TestReport};
use codeloop_protocol::Location;

/// Lines of code shown before and after the failing line.
const CONTEXT_LINES: u32 = 2;

/// Numbered lines around `line` of `source`.
pub fn context_of(source: &str, line: u32) -> Vec<(u32, String)> {
    let first = line.saturating_sub(CONTEXT_LINES).max(1);
    let last = line + CONTEXT_LINES;
    source
        .lines()
        .enumerate()
        .map(|(i, text)| (i as u32 + 1, text))
        .filter(|(n, _)| *n >= first && *n <= last)
        .map(|(n, text)| (n, text.to_string()))
        .collect()
}

fn source_of<'a>(sources: &'a [(String, String)], file: &str) -> Option<&'a str> {
    sources
        .iter()
        .find(|(name, _)| name == file)
        .map(|(_, code)| code.as_str())
}

/// Localize the first failure of a harness report. `code_files` are the files
/// that count as the code under test (as opposed to tests): the deepest frame
/// in one of them is blamed; a wrong value is pinned to the line the code
/// returned it from; otherwise the failing line of the test.
pub fn from_report(
    report: &TestReport,
    sources: &[(String, String)],
    code_files: &[String],
    target_file: &str,
) -> Option<Location> {
    let (test, err) = report.first_failure()?;
    Some(from_case(test, err, sources, code_files, target_file))
}

fn from_case(
    test: Option<&str>,
    err: &CaseError,
    sources: &[(String, String)],
    code_files: &[String],
    target_file: &str,
) -> Location {
    let in_code = err
        .frames
        .iter()
        .rev()
        .find(|f| code_files.contains(&f.file));
    let mut loc = Location {
        error_type: err.error_type.clone(),
        message: err.message.clone(),
        test: test.map(str::to_string),
        expected: err.expected.clone(),
        actual: err.actual.clone(),
        values: err.values.clone(),
        values_note: err.values_note.clone(),
        executed_lines: err.executed_lines.clone(),
        missed_lines: err.missed_lines.clone(),
        ..Location::default()
    };
    let frame = match (in_code, err.returned_from) {
        (Some(f), _) => Some((f.file.clone(), f.line, f.column, f.function.clone())),
        (None, Some(line)) => Some((target_file.to_string(), Some(line), None, None)),
        (None, None) => err
            .frames
            .last()
            .map(|f| (f.file.clone(), f.line, f.column, f.function.clone())),
    };
    if let Some((file, line, column, function)) = frame {
        loc.file = file;
        loc.line = line;
        loc.column = column;
        loc.function = function.filter(|f| f != "<module>");
    }
    if loc.message.is_empty() && loc.expected.is_some() {
        loc.message = format!(
            "expected {}, got {}",
            loc.expected.as_deref().unwrap_or(""),
            loc.actual.as_deref().unwrap_or("")
        );
    }
    if let (Some(line), Some(src)) = (loc.line, source_of(sources, &loc.file)) {
        loc.context = context_of(src, line);
    }
    loc
}

/// Localize a plain Python traceback (the last one on `stderr`). The deepest
/// frame in one of `sources` is blamed (library frames are skipped); a
/// SyntaxError is pinned to the line and column Python reports.
pub fn locate(stderr: &str, sources: &[(String, String)]) -> Option<Location> {
    let tb_start = stderr.rfind("Traceback (most recent call last):");
    let text = match tb_start {
        Some(i) => &stderr[i..],
        None => stderr,
    };
    let lines: Vec<&str> = text.lines().collect();
    let Traceback {
        frames,
        caret_col,
        last_frame_line,
    } = Traceback::read(&lines);
    let (error_type, message) = exception_of(&lines[last_frame_line..])?;
    let known = |f: &str| sources.iter().any(|(n, _)| n == f);
    let blamed = frames
        .iter()
        .rev()
        .find(|(f, _, _)| known(f))
        .or(frames.last())
        .cloned();
    let mut loc = Location {
        error_type,
        message,
        ..Location::default()
    };
    if let Some((file, line, function)) = blamed {
        loc.column = if frames.last().map(|(f, l, _)| (f, *l)) == Some((&file, line)) {
            caret_col
        } else {
            None
        };
        loc.file = file;
        loc.line = Some(line);
        loc.function = function.filter(|f| f != "<module>");
    }
    if matches!(
        loc.error_type.as_str(),
        "SyntaxError" | "IndentationError" | "TabError"
    ) {
        // For syntax errors Python's last "File" line is the offending line,
        // and the caret under the code gives the column.
        loc.function = None;
    }
    if let (Some(line), Some(src)) = (loc.line, source_of(sources, &loc.file)) {
        let text = src
            .lines()
            .nth(line.saturating_sub(1) as usize)
            .unwrap_or("");
        let indent = (text.len() - text.trim_start().len()) as u32;
        loc.column = loc.column.map(|c| c + indent + 1);
        loc.context = context_of(src, line);
    } else {
        loc.column = loc.column.map(|c| c + 1);
    }
    Some(loc)
}

/// A traceback's frames (file name, line, function), oldest first; the
/// column Python 3.11 marks under the last frame's code; the line of the
/// last frame.
struct Traceback {
    frames: Vec<(String, u32, Option<String>)>,
    caret_col: Option<u32>,
    last_frame_line: usize,
}

impl Traceback {
    fn read(lines: &[&str]) -> Traceback {
        let mut frames: Vec<(String, u32, Option<String>)> = Vec::new();
        let mut caret_col: Option<u32> = None;
        let mut last_frame_line = 0;
        for (i, l) in lines.iter().enumerate() {
            let t = l.trim_start();
            if let Some(rest) = t.strip_prefix("File \"") {
                if let Some((path, after)) = rest.split_once('"') {
                    let line = after
                        .split("line ")
                        .nth(1)
                        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
                        .and_then(|s| s.parse().ok());
                    let function = after.split(", in ").nth(1).map(|s| s.trim().to_string());
                    if let Some(line) = line {
                        let file = path.rsplit('/').next().unwrap_or(path).to_string();
                        frames.push((file, line, function));
                        caret_col = None;
                    }
                }
                last_frame_line = i;
            } else if !t.is_empty() && t.chars().all(|c| c == '^' || c == '~') && i > 0 {
                // Python 3.11 marks the failing expression under the code line,
                // which it prints with its own indentation stripped.
                let code_line = lines[i - 1];
                let code_start = code_line.len() - code_line.trim_start().len();
                let mark = l.len() - t.len();
                caret_col = mark.checked_sub(code_start).map(|c| c as u32);
            }
        }
        Traceback {
            frames,
            caret_col,
            last_frame_line,
        }
    }
}

/// The exception's type (its last dotted part) and message: the last
/// non-empty, unindented line of `after_frames`.
fn exception_of(after_frames: &[&str]) -> Option<(String, String)> {
    let exc_line = after_frames
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty() && !l.starts_with(' '))?;
    let (error_type, message) = match exc_line.split_once(": ") {
        Some((t, m)) if is_exception_name(t) => (t.to_string(), m.to_string()),
        _ if is_exception_name(exc_line.trim()) => (exc_line.trim().to_string(), String::new()),
        _ => return None,
    };
    let error_type = error_type
        .rsplit('.')
        .next()
        .unwrap_or(&error_type)
        .to_string();
    Some((error_type, message))
}

fn is_exception_name(s: &str) -> bool {
    let last = s.rsplit('.').next().unwrap_or(s);
    !last.is_empty()
        && last.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && last.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && (last.ends_with("Error")
            || last.ends_with("Exception")
            || last.ends_with("Interrupt")
            || last.ends_with("Exit")
            || last.ends_with("Warning")
            || last == "StopIteration")
}

/// A location for a run a limit ended: no traceback, but the limit in words.
pub fn from_limit(error_type: &str, message: String) -> Location {
    Location {
        error_type: error_type.to_string(),
        message,
        ..Location::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(name: &str, code: &str) -> Vec<(String, String)> {
        vec![(name.to_string(), code.to_string())]
    }

    #[test]
    fn a_runtime_error_is_pinned_to_the_deepest_frame_in_our_code() {
        let code = "def f(x):\n    y = 1\n    return x / 0\n\nf(3)\n";
        let stderr = "Traceback (most recent call last):\n  File \"/tmp/w/main.py\", line 5, in <module>\n    f(3)\n  File \"/tmp/w/main.py\", line 3, in f\n    return x / 0\n           ~~^~~\nZeroDivisionError: division by zero\n";
        let loc = locate(stderr, &src("main.py", code)).unwrap();
        assert_eq!(loc.file, "main.py");
        assert_eq!(loc.line, Some(3));
        assert_eq!(loc.column, Some(12));
        assert_eq!(loc.function.as_deref(), Some("f"));
        assert_eq!(loc.error_type, "ZeroDivisionError");
        assert_eq!(loc.message, "division by zero");
        assert_eq!(
            loc.context,
            vec![
                (1, "def f(x):".to_string()),
                (2, "    y = 1".to_string()),
                (3, "    return x / 0".to_string()),
                (4, String::new()),
                (5, "f(3)".to_string()),
            ]
        );
        let text = loc.render();
        assert!(text.starts_with("main.py:3:12 in f()\n"), "{text}");
        assert!(text.contains("> 3 |     return x / 0"), "{text}");
    }

    #[test]
    fn library_frames_are_skipped_for_the_blame() {
        let stderr = "Traceback (most recent call last):\n  File \"/w/main.py\", line 2, in <module>\n    json.loads('x')\n  File \"/usr/lib/python3.11/json/__init__.py\", line 346, in loads\n    return _default_decoder.decode(s)\njson.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n";
        let loc = locate(stderr, &src("main.py", "import json\njson.loads('x')\n")).unwrap();
        assert_eq!((loc.file.as_str(), loc.line), ("main.py", Some(2)));
        assert_eq!(loc.error_type, "JSONDecodeError");
        assert_eq!(loc.column, None);
    }

    #[test]
    fn a_syntax_error_gets_its_line_and_column() {
        let stderr = "  File \"/w/main.py\", line 2\n    return (1 +\n           ^\nSyntaxError: '(' was never closed\n";
        let loc = locate(stderr, &src("main.py", "def f():\n    return (1 +\n")).unwrap();
        assert_eq!(loc.error_type, "SyntaxError");
        assert_eq!(loc.line, Some(2));
        assert_eq!(loc.column, Some(12));
        assert_eq!(loc.message, "'(' was never closed");
    }

    #[test]
    fn output_without_a_traceback_is_not_a_location() {
        assert_eq!(locate("hello\nworld\n", &[]), None);
    }
}
