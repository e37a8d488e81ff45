//! Runtime values in the code pane, the way a debugger shows them: each
//! line the failing test's path went through gets its variables beside it
//! (dim, after the code; the pane cuts them at its width), and a key steps
//! through the snapshots in the order they were taken, the current one's
//! line marked.
//!
//! The values belong to the code version the failure was found in: they
//! are drawn only while the node's latest code is that iteration.

use codeloop_protocol::{Location, Snapshot};

use crate::theme::Theme;
use codeloop_session::State;
use codeloop_session::state::NodeState;

use super::code_lines::Mark;

/// The failure whose values go beside the node's current code: the node's
/// latest localized failure, if it was found in the version shown and
/// recorded values.
pub(crate) fn failure_with_values<'s>(state: &'s State, node: &NodeState) -> Option<&'s Location> {
    state
        .current_failure(&node.spec.name)
        .filter(|e| !e.values.is_empty())
}

/// The snapshot shown as current: `step` (clamped), or the last one (where
/// the code returned or raised) when the person has not stepped.
pub(crate) fn current(values: &[Snapshot], step: Option<usize>) -> usize {
    let last = values.len().saturating_sub(1);
    step.map_or(last, |s| s.min(last))
}

/// The step after (or before) `step` among `count` snapshots, wrapping.
pub(crate) fn step(count: usize, step: Option<usize>, forward: bool) -> Option<usize> {
    if count == 0 {
        return None;
    }
    let last = count - 1;
    let at = step.map_or(last, |s| s.min(last));
    Some(if forward {
        if at == last { 0 } else { at + 1 }
    } else if at == 0 {
        last
    } else {
        at - 1
    })
}

/// Marks beside `code` for the values up to the current snapshot: each line
/// shows the variables its latest snapshot so far held; the current
/// snapshot's line is marked. Lines outside the code are left out.
pub(crate) fn value_marks(
    t: &Theme,
    code: &str,
    values: &[Snapshot],
    step: Option<usize>,
) -> Vec<Mark> {
    let lines = code.lines().count();
    let at = current(values, step);
    let mut marks: Vec<Mark> = Vec::new();
    for (i, snapshot) in values.iter().enumerate().take(at + 1) {
        let Some(line) = (snapshot.line as usize)
            .checked_sub(1)
            .filter(|l| *l < lines)
        else {
            continue;
        };
        let mark = Mark {
            line,
            sign: if i == at { "●" } else { " " },
            note: format!("  {}", vars_text(snapshot)),
            style: if i == at { t.accent } else { t.dim },
            emphasis: false,
        };
        match marks.iter_mut().find(|m| m.line == line) {
            Some(m) => *m = mark,
            None => marks.push(mark),
        }
    }
    marks
}

/// `total=2216, ch='V'` (with the call depth when deeper than the test's call).
fn vars_text(snapshot: &Snapshot) -> String {
    let vars: Vec<String> = snapshot
        .vars
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    let mut out = if vars.is_empty() {
        "(no local variables)".to_string()
    } else {
        vars.join(", ")
    };
    if snapshot.depth > 0 {
        out.push_str(&format!("  (depth {})", snapshot.depth));
    }
    out
}

/// The line under the code: where the stepping is and how to move it.
pub(crate) fn values_status(
    values: &[Snapshot],
    step: Option<usize>,
    note: Option<&str>,
) -> String {
    let at = current(values, step);
    let mut s = format!(
        "values {}/{} at line {} · v/V step",
        at + 1,
        values.len(),
        values.get(at).map_or(0, |s| s.line)
    );
    if let Some(note) = note {
        s.push_str(&format!(" · {note}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(line: u32, vars: &[(&str, &str)]) -> Snapshot {
        Snapshot {
            line,
            depth: 0,
            vars: vars
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn marks_show_each_lines_latest_values_up_to_the_step() {
        let t = Theme::no_color();
        let code =
            "def f(s):\n    total = 0\n    for ch in s:\n        total += 1\n    return total\n";
        let values = vec![
            snap(4, &[("total", "1"), ("ch", "'a'")]),
            snap(4, &[("total", "2"), ("ch", "'b'")]),
            snap(5, &[("total", "2")]),
            snap(99, &[("x", "1")]),
        ];
        let marks = value_marks(&t, code, &values, Some(1));
        assert_eq!(marks.len(), 1);
        assert_eq!(marks[0].line, 3);
        assert_eq!(marks[0].note, "  total=2, ch='b'");
        assert_eq!(marks[0].sign, "●");
        let all = value_marks(&t, code, &values, None);
        assert_eq!(
            all.iter().map(|m| (m.line, m.sign)).collect::<Vec<_>>(),
            vec![(3, " "), (4, " ")],
            "the last snapshot is outside the code: no line is current"
        );
        assert_eq!(step(4, None, true), Some(0));
        assert_eq!(step(4, Some(0), false), Some(3));
        assert_eq!(step(0, None, true), None);
        assert_eq!(
            values_status(&values, Some(1), Some("a loop ran long")),
            "values 2/4 at line 4 · v/V step · a loop ran long"
        );
    }
}
