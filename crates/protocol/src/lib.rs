//! The vocabulary that crosses module boundaries: a chat message, token
//! usage, an output stream, a failure's location.
//!
//! A leaf: it uses nothing else of the crate, so `session`, `llm` and `exec`
//! can all speak it while knowing nothing of each other. Each idea has one type
//! here and one way to print it; and `sanitize`, the one filter for
//! untrusted text bound for a terminal.
#![warn(unreachable_pub)]

// codeloop runs only on Linux. Said here, in the leaf every crate of the
// workspace depends on, so a build for another system stops at this one
// message before any crate that needs Linux (the sandbox's namespaces,
// seccomp and Landlock) or Unix (file locks, terminal reads) is compiled.
#[cfg(not(target_os = "linux"))]
compile_error!(
    "codeloop runs only on Linux: its sandbox is made of Linux's user namespaces, seccomp and Landlock. On macOS or Windows, build and run it inside a Linux virtual machine or WSL2 (README.md, \"Where it runs\")."
);

pub mod coverage;
pub mod failure;
pub mod picture;
pub mod present;
pub mod python;
pub mod resources;
pub mod sanitize;
pub mod tokens;

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::System,
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// Tokens a model call spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, how many the server took from its prompt cache
    /// (did not compute again), when it says: OpenAI's
    /// `usage.prompt_tokens_details.cached_tokens`, llama.cpp's
    /// `timings.cache_n`. `None`: the server did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
}

impl Usage {
    pub fn new(prompt_tokens: u64, completion_tokens: u64) -> Usage {
        Usage {
            prompt_tokens,
            completion_tokens,
            cached_tokens: None,
        }
    }

    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    /// `120 in (80 cached) + 30 out`: the one way usage is said.
    pub fn words(&self) -> String {
        let cached = match self.cached_tokens {
            Some(c) => format!(" ({c} cached)"),
            None => String::new(),
        };
        format!(
            "{} in{cached} + {} out",
            self.prompt_tokens, self.completion_tokens
        )
    }
}

/// Two calls' usage together. Cached tokens add up where either said; one
/// that did not say counts as none cached.
impl std::ops::Add for Usage {
    type Output = Usage;

    fn add(self, other: Usage) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens + other.prompt_tokens,
            completion_tokens: self.completion_tokens + other.completion_tokens,
            cached_tokens: match (self.cached_tokens, other.cached_tokens) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            },
        }
    }
}

/// Which of a process's output streams a piece of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Stdout,
    Stderr,
}

/// A failure pinned to a place in the code: file, line, column, function, the
/// exception, expected vs actual where a test compared values, and a few lines
/// of the code around it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Location {
    /// The file as the program saw it ("parse_line.py", "test_parse_line.py").
    pub file: String,
    /// 1-based line in that file, when known.
    pub line: Option<u32>,
    /// 1-based column, when Python gives it.
    #[serde(default)]
    pub column: Option<u32>,
    /// The function the line is in, when known.
    #[serde(default)]
    pub function: Option<String>,
    /// "AssertionError", "ZeroDivisionError", "Timeout", "MemoryLimit", ...
    pub error_type: String,
    pub message: String,
    /// The failing test's name, when a test failed.
    #[serde(default)]
    pub test: Option<String>,
    #[serde(default)]
    pub expected: Option<String>,
    #[serde(default)]
    pub actual: Option<String>,
    /// A few numbered lines around `line`.
    #[serde(default)]
    pub context: Vec<(u32, String)>,
    /// Whether the line is in the node's own code (as opposed to its tests).
    #[serde(default)]
    pub in_node_code: bool,
    /// The node's local variables along the failing test's path, in
    /// execution order: where its code returned or raised, and the lines of
    /// the last iteration of each loop on the way. Lines are lines of the
    /// node's own file (`{node}.py`), whichever file `file` names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<Snapshot>,
    /// What the values leave out and why (a loop too long to record line by
    /// line, a re-run that took another path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values_note: Option<String>,
    /// Coverage of the failing path: the lines of the node's own file
    /// (`{node}.py`, like `values`) that ran in the failing test, recorded
    /// by the same trace. Empty when no trace took the failing path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub executed_lines: Vec<u32>,
    /// The lines of the functions that path went through which could have
    /// run and did not (empty where that is not known: a loop too long to
    /// trace line by line).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missed_lines: Vec<u32>,
}

/// The values of a function's local variables when one line ran.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Snapshot {
    /// 1-based line in the node's file.
    pub line: u32,
    /// Calls of the node's own code deep: 0 in the call the test made,
    /// more in the functions it called (recursion, helpers).
    #[serde(default)]
    pub depth: u32,
    /// (name, repr cut short), in the function's own order.
    pub vars: Vec<(String, String)>,
}

impl Location {
    /// `file:line:col`, `file:line` or `file`: where, in one token.
    pub(crate) fn place(&self) -> String {
        match (self.line, self.column) {
            (Some(l), Some(c)) => format!("{}:{l}:{c}", self.file),
            (Some(l), None) => format!("{}:{l}", self.file),
            _ => self.file.clone(),
        }
    }

    /// The 0-based line of `code` (a node's code or its tests) this failure
    /// points at, for every view that marks it (the code pane, the
    /// browser's player). The location's line number is in the file the
    /// program ran (which may hold more than this node), so the line is
    /// found by its text from the context, nearest to the number; failing
    /// that, the number itself when it is in the node's own code.
    pub fn line_in(&self, code: &str) -> Option<usize> {
        let line = self.line? as usize;
        let lines: Vec<&str> = code.lines().collect();
        if let Some((_, text)) = self.context.iter().find(|(n, _)| *n as usize == line) {
            let want = text.trim();
            if !want.is_empty() {
                let best = lines
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| l.trim() == want)
                    .min_by_key(|(i, _)| (*i as i64 - (line as i64 - 1)).unsigned_abs())
                    .map(|(i, _)| i);
                if best.is_some() {
                    return best;
                }
            }
        }
        (self.in_node_code && line >= 1 && line <= lines.len()).then(|| line - 1)
    }

    /// `ErrorType: message`, or the type alone.
    pub fn what(&self) -> String {
        if self.message.is_empty() {
            self.error_type.clone()
        } else {
            format!("{}: {}", self.error_type, self.message)
        }
    }

    /// Several lines of plain text: where, what, and the code around it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str(&self.place());
        if let Some(f) = &self.function {
            out.push_str(&format!(" in {f}()"));
        }
        if let Some(t) = &self.test {
            out.push_str(&format!(" (test {t})"));
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&self.what());
        out.push('\n');
        out.push_str(&self.detail());
        out
    }

    /// The lines under a failure's headline: what a test expected and
    /// got, and the code around its line (`>` at the line).
    pub fn detail(&self) -> String {
        let mut out = String::new();
        if let (Some(e), Some(a)) = (&self.expected, &self.actual)
            && !self.message.starts_with("expected ")
        {
            out.push_str(&format!("  expected {e}\n  actual   {a}\n"));
        }
        let width = self
            .context
            .last()
            .map(|(n, _)| n.to_string().len())
            .unwrap_or(1);
        for (n, text) in &self.context {
            let mark = if Some(*n) == self.line { ">" } else { " " };
            out.push_str(&format!("{mark} {n:>width$} | {text}\n"));
        }
        out
    }

    /// The runtime values as a short trace for a prompt, one snapshot a
    /// line: `line 7: total=2216, ch='V'`. A line shows the variables that
    /// changed since the line before it at the same depth (all of them the
    /// first time), `no change` when none did; the note follows in
    /// parentheses. Empty when no values were recorded.
    pub fn values_trace(&self) -> String {
        let mut out = String::new();
        let mut before: Vec<&Snapshot> = Vec::new();
        for snapshot in &self.values {
            let previous = before.iter().rev().find(|s| s.depth == snapshot.depth);
            let changed: Vec<&(String, String)> = snapshot
                .vars
                .iter()
                .filter(|v| previous.is_none_or(|p| !p.vars.contains(v)))
                .collect();
            let empty = if snapshot.vars.is_empty() {
                "no local variables"
            } else {
                "no change"
            };
            out.push_str(&snapshot_line(snapshot, &changed, empty));
            out.push('\n');
            before.push(snapshot);
        }
        if let Some(note) = &self.values_note {
            out.push_str(&format!("({note})\n"));
        }
        out
    }
}

/// `line 7 (depth 2): a=1, b='x'`, or `line 7: {empty}` with no variables.
fn snapshot_line(snapshot: &Snapshot, vars: &[&(String, String)], empty: &str) -> String {
    let mut out = format!("line {}", snapshot.line);
    if snapshot.depth > 0 {
        out.push_str(&format!(" (depth {})", snapshot.depth));
    }
    out.push_str(": ");
    if vars.is_empty() {
        out.push_str(empty);
    }
    for (i, (name, value)) in vars.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!("{name}={value}"));
    }
    out
}

/// One line with every variable: `line 7: total=2216, ch='V'`, with
/// `(depth 2)` after the line number inside deeper calls.
impl fmt::Display for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let vars: Vec<&(String, String)> = self.vars.iter().collect();
        f.write_str(&snapshot_line(self, &vars, "no local variables"))
    }
}

/// One line: `ErrorType: message at file:line:col`.
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.what())?;
        if !self.file.is_empty() {
            write!(f, " at {}", self.place())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_and_many() {
        let l = Location {
            file: "f.py".into(),
            line: Some(7),
            column: Some(17),
            function: Some("f".into()),
            error_type: "KeyError".into(),
            message: "'x'".into(),
            context: vec![(6, "a".into()), (7, "b".into())],
            ..Location::default()
        };
        assert_eq!(l.to_string(), "KeyError: 'x' at f.py:7:17");
        assert_eq!(
            l.render(),
            "f.py:7:17 in f()\nKeyError: 'x'\n  6 | a\n> 7 | b\n"
        );
        let bare = Location {
            error_type: "Timeout".into(),
            ..Location::default()
        };
        assert_eq!(bare.to_string(), "Timeout");
    }

    #[test]
    fn a_failure_is_found_in_a_text_by_its_line_nearest_its_number() {
        // The program's file holds more than the node: line 9 there is the
        // node's line 3, found by its text; of two equal lines, the nearest.
        let at = |line, text: &str, own| Location {
            line: Some(line),
            context: vec![(line, text.into())],
            in_node_code: own,
            ..Location::default()
        };
        let code = "def f(x):\n    y = x\n    return y[0]\n    return y[0]\n";
        assert_eq!(at(9, "return y[0]", true).line_in(code), Some(3));
        assert_eq!(at(3, "return y[0]", true).line_in(code), Some(2));
        // A line not in the text: its number, only in the node's own code.
        assert_eq!(at(2, "other()", true).line_in(code), Some(1));
        assert_eq!(at(2, "other()", false).line_in(code), None);
        assert_eq!(at(9, "other()", true).line_in(code), None);
        assert_eq!(Location::default().line_in(code), None);
    }

    #[test]
    fn values_make_a_short_trace_and_old_locations_still_read() {
        let snap = |line, depth, vars: &[(&str, &str)]| Snapshot {
            line,
            depth,
            vars: vars
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        };
        let l = Location {
            values: vec![
                snap(5, 0, &[("total", "2211"), ("ch", "'V'"), ("v", "1")]),
                snap(6, 0, &[("total", "2211"), ("ch", "'V'"), ("v", "5")]),
                snap(3, 2, &[]),
                snap(9, 0, &[("total", "2211"), ("ch", "'V'"), ("v", "5")]),
                snap(10, 0, &[("total", "2216"), ("ch", "'V'"), ("v", "5")]),
            ],
            values_note: Some("a loop ran too long".into()),
            ..Location::default()
        };
        assert_eq!(
            l.values_trace(),
            "line 5: total=2211, ch='V', v=1\n\
             line 6: v=5\n\
             line 3 (depth 2): no local variables\n\
             line 9: no change\n\
             line 10: total=2216\n\
             (a loop ran too long)\n"
        );
        assert_eq!(l.values[4].to_string(), "line 10: total=2216, ch='V', v=5");
        assert_eq!(Location::default().values_trace(), "");
        let old = r#"{"file":"f.py","line":2,"error_type":"E","message":"m"}"#;
        let read: Location = serde_json::from_str(old).unwrap();
        assert!(read.values.is_empty() && read.values_note.is_none());
        assert!(!serde_json::to_string(&read).unwrap().contains("values"));
        let json = serde_json::to_string(&l).unwrap();
        assert_eq!(serde_json::from_str::<Location>(&json).unwrap(), l);
    }

    #[test]
    fn usage_adds_up_and_says_what_the_server_cached() {
        let told = Usage {
            cached_tokens: Some(80),
            ..Usage::new(120, 30)
        };
        let silent = Usage::new(10, 5);
        assert_eq!(silent + silent, Usage::new(20, 10));
        assert_eq!((told + silent).cached_tokens, Some(80));
        assert_eq!((told + silent).words(), "130 in (80 cached) + 35 out");
        assert_eq!(silent.words(), "10 in + 5 out");
        // A tape written before the field reads as "not said".
        let old: Usage =
            serde_json::from_str(r#"{"prompt_tokens":1,"completion_tokens":2}"#).unwrap();
        assert_eq!(old, Usage::new(1, 2));
        assert!(!serde_json::to_string(&old).unwrap().contains("cached"));
    }
}
