//! Coverage of the failing path: which lines of the node's function ran in
//! the failing test (`Location::executed_lines`), and which could have run
//! and did not (`Location::missed_lines`). One reading for every view: the
//! code pane's gutter, the repair prompt's executed blocks (as LDB shows a
//! debugger the blocks a failing run went through), the HTML export.

use crate::Location;
use crate::present::count;

/// What a line of the failing function did in the failing test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineRun {
    Ran,
    /// Code that could have run and did not.
    Missed,
    /// Not code (blank, a comment, `else:`), or not known.
    Neither,
}

/// Lines shown in a prompt's executed blocks, at most.
pub(crate) const PROMPT_LINES: usize = 60;

/// The 1-based first and last line of the top-level `def name` in
/// `source` (its decorators and comments after it left out).
pub fn function_span(source: &str, name: &str) -> Option<(u32, u32)> {
    let lines: Vec<&str> = source.lines().collect();
    let start = lines.iter().position(|l| {
        l.strip_prefix("def ")
            .or_else(|| l.strip_prefix("async def "))
            .and_then(|rest| rest.strip_prefix(name))
            .is_some_and(|rest| rest.trim_start().starts_with('('))
    })?;
    let mut end = start;
    for (i, l) in lines.iter().enumerate().skip(start + 1) {
        let t = l.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if l.len() == t.len() && !t.starts_with(')') {
            break;
        }
        end = i;
    }
    Some((start as u32 + 1, end as u32 + 1))
}

impl Location {
    /// Whether coverage was recorded for this failure.
    pub fn has_coverage(&self) -> bool {
        !self.executed_lines.is_empty()
    }

    /// What `line` of the node's file did in the failing test.
    pub fn line_run(&self, line: u32) -> LineRun {
        if self.executed_lines.binary_search(&line).is_ok() {
            LineRun::Ran
        } else if self.missed_lines.binary_search(&line).is_ok() {
            LineRun::Missed
        } else {
            LineRun::Neither
        }
    }

    /// The failing function `name` of `source` (the node's file) with each
    /// line marked: `>` ran, `!` could have run and did not, blank neither;
    /// three or more lines in a row that are not code (a docstring, blank
    /// lines, comments) as one `...` line; at most `PROMPT_LINES` lines,
    /// then how many more. Empty without coverage or without that function.
    pub fn executed_blocks(&self, source: &str, name: &str) -> String {
        if !self.has_coverage() {
            return String::new();
        }
        let Some((first, last)) = function_span(source, name) else {
            return String::new();
        };
        let width = last.to_string().len();
        let prose = prose_lines(source);
        let mut out = String::new();
        let mut shown = 0usize;
        // Lines that are not code, waiting to be shown or folded: (number, text).
        let mut quiet: Vec<(u32, &str)> = Vec::new();
        let flush = |quiet: &mut Vec<(u32, &str)>, out: &mut String, shown: &mut usize| {
            if quiet.len() >= 3 {
                let (a, b) = (quiet[0].0, quiet[quiet.len() - 1].0);
                out.push_str(&format!(
                    "  {:>width$} | ... (lines {a}-{b}: no code)\n",
                    ""
                ));
                *shown += 1;
            } else {
                for (n, text) in quiet.iter() {
                    out.push_str(format!("  {n:>width$} | {text}").trim_end());
                    out.push('\n');
                    *shown += 1;
                }
            }
            quiet.clear();
        };
        for (i, text) in source.lines().enumerate() {
            let n = i as u32 + 1;
            if n < first || n > last {
                continue;
            }
            if shown >= PROMPT_LINES {
                out.push_str(&format!("  ... {} more lines of {name}\n", last + 1 - n));
                quiet.clear();
                break;
            }
            let mark = match self.line_run(n) {
                LineRun::Ran => '>',
                LineRun::Missed => '!',
                LineRun::Neither if prose.get(i).copied().unwrap_or(false) => {
                    quiet.push((n, text));
                    continue;
                }
                LineRun::Neither => ' ',
            };
            flush(&mut quiet, &mut out, &mut shown);
            out.push_str(format!("{mark} {n:>width$} | {text}").trim_end());
            out.push('\n');
            shown += 1;
        }
        flush(&mut quiet, &mut out, &mut shown);
        let ran = (first..=last)
            .filter(|n| self.line_run(*n) == LineRun::Ran)
            .count();
        let missed = (first..=last)
            .filter(|n| self.line_run(*n) == LineRun::Missed)
            .count();
        // No line seen skipped: every line ran, or the trace was too long
        // to follow line by line. Either way, nothing more is known.
        out.push_str(&if missed > 0 {
            format!("({} ran, {missed} did not)\n", count(ran, "line"))
        } else {
            format!(
                "({} ran; none is known to have been skipped)\n",
                count(ran, "line")
            )
        });
        out
    }
}

/// For each line of `source`, whether it is not code: blank, a comment, or
/// inside (or the whole of) a triple-quoted string that stands alone, such
/// as a docstring.
fn prose_lines(source: &str) -> Vec<bool> {
    let mut out = Vec::new();
    let mut open: Option<&str> = None;
    for line in source.lines() {
        let t = line.trim();
        match open {
            Some(quote) => {
                out.push(true);
                if t.contains(quote) {
                    open = None;
                }
            }
            None => {
                let start = t.trim_start_matches(['r', 'u', 'R', 'U']);
                match ["\"\"\"", "'''"].into_iter().find(|q| start.starts_with(q)) {
                    Some(q) => {
                        out.push(true);
                        if !start[3..].contains(q) {
                            open = Some(q);
                        }
                    }
                    None => out.push(t.is_empty() || t.starts_with('#')),
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "import math\n\n@cache\ndef sign(x):\n    \"\"\"Doc.\"\"\"\n    if x > 0:\n        y = 1\n    else:\n        y = -1\n    # done\n    return y\n\n\ndef other():\n    pass\n";

    #[test]
    fn a_functions_span_ends_before_the_next_top_level_line() {
        assert_eq!(function_span(SOURCE, "sign"), Some((4, 11)));
        assert_eq!(function_span(SOURCE, "other"), Some((14, 15)));
        assert_eq!(function_span(SOURCE, "sig"), None);
    }

    #[test]
    fn the_executed_blocks_mark_what_ran_and_what_did_not() {
        let loc = Location {
            executed_lines: vec![6, 9, 11],
            missed_lines: vec![7],
            ..Location::default()
        };
        let text = loc.executed_blocks(SOURCE, "sign");
        assert!(text.contains(">  6 |     if x > 0:\n"), "{text}");
        assert!(text.contains("!  7 |         y = 1\n"), "{text}");
        assert!(text.contains("   8 |     else:\n"), "{text}");
        assert!(text.contains(">  9 |         y = -1\n"), "{text}");
        assert!(text.contains("(3 lines ran, 1 did not)"), "{text}");
        assert_eq!(Location::default().executed_blocks(SOURCE, "sign"), "");
    }

    #[test]
    fn a_docstring_of_three_lines_or_more_is_folded_to_one() {
        let source = "def f(x):\n    \"\"\"\n    Doc one.\n\n    Doc two.\n    \"\"\"\n    # why\n    y = x\n    '''short'''\n    return y\n";
        let loc = Location {
            executed_lines: vec![8, 10],
            ..Location::default()
        };
        let text = loc.executed_blocks(source, "f");
        assert!(text.contains("   | ... (lines 2-7: no code)\n"), "{text}");
        assert!(!text.contains("Doc one"), "{text}");
        assert!(text.contains(">  8 |     y = x\n"), "{text}");
        // One line of prose stays as it is.
        assert!(text.contains("   9 |     '''short'''\n"), "{text}");
        assert!(
            text.contains("(2 lines ran; none is known to have been skipped)"),
            "{text}"
        );
        assert_eq!(
            prose_lines("x = 1\n\"\"\"a\nb\"\"\"\n# c\n"),
            vec![false, true, true, true]
        );
    }
}
