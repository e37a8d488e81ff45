//! The review before running on the HTML page: a line in the header with
//! what the reviews cost, and beside each reviewed iteration its verdict
//! and findings (each at its line).

use crate::protocol::present::plural;
use std::fmt::Write;

use super::html::esc;
use crate::session::review::{review_cost, summary};
use crate::session::state::NodeState;
use crate::session::{ReviewVerdict, Severity, State};

/// `<dt>Reviews</dt><dd>…</dd>` when the session reviewed any code.
pub(crate) fn header_facts(state: &State) -> String {
    let (calls, tokens) = review_cost(state);
    if calls == 0 {
        return String::new();
    }
    format!(
        "<dt>Reviews before running</dt><dd>{calls} call{}, {tokens} tokens (in the total)</dd>\n",
        plural(calls)
    )
}

/// The review of `node`'s iteration `it`, if it was reviewed.
pub(crate) fn block(node: &NodeState, it: u32) -> String {
    let mut out = String::new();
    for r in node.reviews.iter().filter(|r| r.iteration == it) {
        let class = match (r.verdict, r.serious()) {
            (_, true) => "serious",
            (ReviewVerdict::Concerns, false) => "concerns",
            (ReviewVerdict::Ok, false) => "ok",
        };
        let _ = write!(
            out,
            "<div class=\"review {class}\"><h4>Review before running</h4><p>{}</p>",
            esc(&summary(r.verdict, &r.findings))
        );
        if !r.findings.is_empty() {
            out.push_str("<ul>");
            for f in &r.findings {
                let severity = match f.severity {
                    Severity::Serious => "serious",
                    Severity::Minor => "minor",
                };
                let line = f.line.map(|l| format!("line {l}: ")).unwrap_or_default();
                let _ = write!(
                    out,
                    "<li class=\"{severity}\"><b>{severity}</b> {}{}</li>",
                    esc(&line),
                    esc(&f.what)
                );
            }
            out.push_str("</ul>");
        }
        out.push_str("</div>\n");
    }
    out
}
