//! The vocabulary that crosses module boundaries: a chat message, token
//! usage, an output stream, a failure's location.
//!
//! A leaf: it uses nothing else of the crate, so `session`, `llm` and `exec`
//! can all speak it while knowing nothing of each other. Each idea has one type
//! here and one way to print it.

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
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
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
}

impl Location {
    /// `file:line:col`, `file:line` or `file`: where, in one token.
    pub fn place(&self) -> String {
        match (self.line, self.column) {
            (Some(l), Some(c)) => format!("{}:{l}:{c}", self.file),
            (Some(l), None) => format!("{}:{l}", self.file),
            _ => self.file.clone(),
        }
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
}
