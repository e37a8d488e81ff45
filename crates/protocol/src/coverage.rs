//! Coverage of the failing path: which lines of the node's function ran in
//! the failing test (`Location::executed_lines`), and which could have run
//! and did not (`Location::missed_lines`). One reading for every view: the
//! code pane's gutter, the repair prompt's executed blocks (as LDB shows a
//! debugger the blocks a failing run went through), the HTML export.

use crate::Location;

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
pub const PROMPT_LINES: usize = 60;

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
    /// at most `PROMPT_LINES` lines, then how many more. Empty without
    /// coverage or without that function.
    pub fn executed_blocks(&self, source: &str, name: &str) -> String {
        if !self.has_coverage() {
            return String::new();
        }
        let Some((first, last)) = function_span(source, name) else {
            return String::new();
        };
        let width = last.to_string().len();
        let mut out = String::new();
        let mut shown = 0usize;
        for (i, text) in source.lines().enumerate() {
            let n = i as u32 + 1;
            if n < first || n > last {
                continue;
            }
            if shown == PROMPT_LINES {
                out.push_str(&format!("  ... {} more lines of {name}\n", last + 1 - n));
                break;
            }
            let mark = match self.line_run(n) {
                LineRun::Ran => '>',
                LineRun::Missed => '!',
                LineRun::Neither => ' ',
            };
            out.push_str(format!("{mark} {n:>width$} | {text}").trim_end());
            out.push('\n');
            shown += 1;
        }
        let ran = (first..=last)
            .filter(|n| self.line_run(*n) == LineRun::Ran)
            .count();
        let missed = (first..=last)
            .filter(|n| self.line_run(*n) == LineRun::Missed)
            .count();
        out.push_str(&format!(
            "({ran} lines ran, {missed} did not{})\n",
            if self.missed_lines.is_empty() && ran > 0 {
                " that are known: a loop too long to trace line by line"
            } else {
                ""
            }
        ));
        out
    }
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
}
