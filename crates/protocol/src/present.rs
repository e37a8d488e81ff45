//! Words for people, in one place and with no terminal code: counts and
//! their plurals, and the ways a failure is said in one line. `run`'s
//! progress, the report, the HTML export, the workbench's panes and the
//! prompts all say these things; they say them through here.

use crate::Location;

/// The plural ending of a count: `""` for one, `"s"` for any other.
pub fn plural<N: PartialEq + From<u8>>(n: N) -> &'static str {
    if n == N::from(1) { "" } else { "s" }
}

/// A model's name as people are shown it: a path by its file name
/// (llama.cpp's server lists the GGUF it loaded by its whole path, from
/// the cache folder down), any other name as it is. Requests and the tape
/// keep the whole name: the server knows the model by it.
pub fn model_shown(name: &str) -> &str {
    if name.contains('/') && name.to_ascii_lowercase().ends_with(".gguf") {
        name.rsplit('/').next().unwrap_or(name)
    } else {
        name
    }
}

/// A size in bytes, in words ("2.0 GB", "512 B").
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// `1 function`, `2 functions`, `0 functions`.
pub fn count<N: PartialEq + From<u8> + std::fmt::Display + Copy>(n: N, noun: &str) -> String {
    format!("{n} {noun}{}", plural(n))
}

impl Location {
    /// Where, with the function: `f.py:7:17 in f`.
    pub fn place_in(&self) -> String {
        let mut place = self.place();
        if let Some(f) = &self.function {
            place.push_str(&format!(" in {f}"));
        }
        place
    }

    /// The message's first line.
    pub(crate) fn first_message_line(&self) -> &str {
        self.message.lines().next().unwrap_or("")
    }

    /// A failure in one line for a person: `KeyError at f.py:7 in f: 'x'`,
    /// with `(expected 3, got 2)` when a test compared values and the
    /// message does not already say both.
    pub fn headline(&self) -> String {
        let mut text = match self.place_in() {
            // A failure of no place (no test ran, a limit, the sandbox).
            place if place.is_empty() => {
                format!("{}: {}", self.error_type, self.first_message_line())
            }
            place => format!(
                "{} at {place}: {}",
                self.error_type,
                self.first_message_line()
            ),
        };
        if let (Some(x), Some(a)) = (&self.expected, &self.actual)
            && !(text.contains(x.as_str()) && text.contains(a.as_str()))
        {
            text.push_str(&format!(" (expected {x}, got {a})"));
        }
        text
    }

    /// A failure in one line for a prompt: the whole message, the test, and
    /// what the test expected when it compared values:
    /// `AssertionError: ... at t.py:3 (test test_a): expected 3, got 2`.
    pub fn prompt_line(&self) -> String {
        let mut out = self.to_string();
        if let Some(t) = &self.test {
            out.push_str(&format!(" (test {t})"));
        }
        if let (Some(e), Some(a)) = (&self.expected, &self.actual)
            && !self.message.starts_with("expected ")
        {
            out.push_str(&format!(": expected {e}, got {a}"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gguf_path_is_shown_by_its_file_name_other_names_as_they_are() {
        assert_eq!(
            model_shown("/root/.cache/codeloop/servers/models/SmolLM2-135M-Instruct.Q4_1.gguf"),
            "SmolLM2-135M-Instruct.Q4_1.gguf"
        );
        for name in [
            "Qwen/Qwen2.5-Coder-7B-Instruct",
            "qwen2.5-coder:7b",
            "local",
        ] {
            assert_eq!(model_shown(name), name);
        }
    }

    #[test]
    fn a_failure_of_no_place_is_said_without_one() {
        let l = Location {
            error_type: "RunError".into(),
            message: "no test ran".into(),
            ..Location::default()
        };
        assert_eq!(l.headline(), "RunError: no test ran");
    }

    #[test]
    fn counts_and_failures_are_said_one_way() {
        assert_eq!(count(1, "function"), "1 function");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KB");
        assert_eq!(bytes(2 << 30), "2.0 GB");
        assert_eq!(count(0, "repair"), "0 repairs");
        assert_eq!(format!("{} test{}", 2, plural(2)), "2 tests");
        let l = Location {
            file: "f.py".into(),
            line: Some(7),
            function: Some("f".into()),
            error_type: "AssertionError".into(),
            message: "assert 2 == 3\nmore".into(),
            test: Some("test_a".into()),
            expected: Some("3".into()),
            actual: Some("2".into()),
            ..Location::default()
        };
        assert_eq!(l.place_in(), "f.py:7 in f");
        assert_eq!(l.headline(), "AssertionError at f.py:7 in f: assert 2 == 3");
        let other = Location {
            message: "wrong".into(),
            ..l.clone()
        };
        assert_eq!(
            other.headline(),
            "AssertionError at f.py:7 in f: wrong (expected 3, got 2)"
        );
        assert_eq!(
            other.prompt_line(),
            "AssertionError: wrong at f.py:7 (test test_a): expected 3, got 2"
        );
    }
}
