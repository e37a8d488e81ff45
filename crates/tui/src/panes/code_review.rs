//! The review before running in the code pane: each finding of the review
//! of the version shown is a mark at its line (`◆`, after the failure and
//! the values, which win a line), and under the code the verdict and the
//! findings. Under it too, the vote the version was chosen by, when its
//! candidates were (functional consensus).

use ratatui::text::{Line, Span};

use super::code_lines::Mark;
use crate::theme::Theme;
use codeloop_session::state::NodeState;
use codeloop_session::{ReviewInfo, ReviewVerdict, Severity, State};

/// The review of the node's code as shown (its latest version), if any.
fn shown<'s>(s: &'s State, n: &NodeState) -> Option<&'s ReviewInfo> {
    s.current_review(&n.spec.name)
}

/// A mark at each finding's line of `code` (lines past its end are left to the footer).
pub(crate) fn marks(t: &Theme, s: &State, n: &NodeState, code: &str) -> Vec<Mark> {
    let Some(review) = shown(s, n) else {
        return Vec::new();
    };
    let count = code.lines().count();
    review
        .findings
        .iter()
        .filter_map(|f| {
            let line = f.line? as usize;
            (line >= 1 && line <= count).then(|| Mark {
                line: line - 1,
                sign: "◆",
                note: format!("  ◆ review: {}", f.what),
                style: match f.severity {
                    Severity::Serious => t.error,
                    Severity::Minor => t.warning,
                },
                emphasis: false,
            })
        })
        .collect()
}

/// The candidates the version shown was chosen from (`--candidates N`),
/// each with its agreement, in one line.
pub(crate) fn candidates_line(t: &Theme, n: &NodeState) -> Option<Line<'static>> {
    let c = n
        .candidates
        .as_ref()
        .filter(|c| c.iteration == n.iteration())?;
    if !c.voted() {
        return Some(Line::from(vec![
            Span::styled("vote: ", t.accent),
            Span::styled(c.summary(), t.text),
        ]));
    }
    let each: Vec<String> = (0..c.candidates.len())
        .map(|i| codeloop_session::story::words::candidate(c, i))
        .collect();
    Some(Line::from(vec![
        Span::styled("vote: ", t.accent),
        Span::styled(format!("{} · {}", c.summary(), each.join(" · ")), t.text),
    ]))
}

/// The verdict in one line, then the findings (those with a line too: a
/// note beside code may be cut at the pane's edge), at most `most`.
pub(crate) fn footer(t: &Theme, s: &State, n: &NodeState, most: usize) -> Vec<Line<'static>> {
    let Some(review) = shown(s, n) else {
        return Vec::new();
    };
    let style = match (review.verdict, review.serious()) {
        (_, true) => t.error,
        (ReviewVerdict::Concerns, false) => t.warning,
        (ReviewVerdict::Ok, false) => t.ok,
    };
    let mut out = vec![Line::from(vec![
        Span::styled("review: ", style),
        Span::styled(review.summary(), style),
    ])];
    for f in review.findings.iter().take(most) {
        out.push(Line::styled(format!("  ◆ {}", f.line_text()), t.text));
    }
    out
}
