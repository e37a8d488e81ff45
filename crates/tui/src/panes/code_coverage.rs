//! Coverage of the failing path in the code pane: beside each line of the
//! failing function, in the gutter after its number, whether it ran in the
//! failing test (`┃`), could have and did not (`✗`), or neither (blank:
//! not code, or not known). Like the values, drawn only on the code
//! version the failure was found in, and only in the node's own function.

use codeloop_protocol::Location;
use codeloop_protocol::coverage::{LineRun, function_span};
use ratatui::style::Style;

use crate::theme::Theme;
use codeloop_session::State;
use codeloop_session::state::NodeState;

/// The gutter glyph of a line.
pub(crate) fn glyph(run: LineRun) -> &'static str {
    match run {
        LineRun::Ran => "┃",
        LineRun::Missed => "✗",
        LineRun::Neither => " ",
    }
}

/// The gutter's style for a line without another mark.
pub(crate) fn style(t: &Theme, run: LineRun) -> Style {
    match run {
        LineRun::Ran => t.ok,
        LineRun::Missed => t.error,
        LineRun::Neither => t.dim,
    }
}

/// The failure whose coverage goes beside the node's current code: its
/// latest localized failure, if found in the version shown, with coverage.
pub(crate) fn failure_with_coverage<'s>(
    state: &'s State,
    node: &NodeState,
) -> Option<&'s Location> {
    state
        .current_failure(&node.spec.name)
        .filter(|e| e.has_coverage())
}

/// What each line of `code` (0-based) did in the failing test: only the
/// lines of the function `name`; None when it is not in `code`.
pub(crate) fn line_runs(code: &str, name: &str, failure: &Location) -> Option<Vec<LineRun>> {
    let (first, last) = function_span(code, name)?;
    Some(
        (1..=code.lines().count() as u32)
            .map(|n| {
                if n < first || n > last {
                    LineRun::Neither
                } else {
                    failure.line_run(n)
                }
            })
            .collect(),
    )
}

/// The legend under the code: how many lines of the function ran.
pub(crate) fn legend(runs: &[LineRun]) -> String {
    let ran = runs.iter().filter(|r| **r == LineRun::Ran).count();
    let missed = runs.iter().filter(|r| **r == LineRun::Missed).count();
    format!("┃ ran {ran} · ✗ not run {missed}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_functions_lines_are_marked() {
        let code =
            "import os\n\ndef f(x):\n    if x:\n        return 1\n    return 2\n\nprint(f(0))\n";
        let failure = Location {
            executed_lines: vec![4, 6, 8],
            missed_lines: vec![5],
            ..Location::default()
        };
        let runs = line_runs(code, "f", &failure).unwrap();
        let glyphs: String = runs.iter().map(|r| glyph(*r)).collect();
        assert_eq!(glyphs, "   ┃✗┃  ");
        assert_eq!(legend(&runs), "┃ ran 2 · ✗ not run 1");
        assert_eq!(line_runs(code, "g", &failure), None);
    }
}
