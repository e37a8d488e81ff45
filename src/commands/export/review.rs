//! The review before running on the HTML page: beside each reviewed
//! iteration, its verdict and findings (each at its line), in the story's
//! words; what the reviews cost is said with the tokens (`story::reviews_cost`).

use std::fmt::Write;

use super::html::esc;
use crate::session::{ReviewVerdict, Severity, State};

/// The review of `node`'s iteration `it`, if it was reviewed.
pub(crate) fn block(state: &State, node: &str, it: u32) -> String {
    let mut out = String::new();
    for r in state.reviews_of(node).filter(|r| r.iteration == it) {
        let class = match (r.verdict, r.serious()) {
            (_, true) => "serious",
            (ReviewVerdict::Concerns, false) => "concerns",
            (ReviewVerdict::Ok, false) => "ok",
        };
        let _ = write!(
            out,
            "<div class=\"review {class}\"><h4>Review (before running)</h4><p>{}</p>",
            esc(&r.summary())
        );
        if !r.findings.is_empty() {
            out.push_str("<ul>");
            for f in &r.findings {
                let severity = match f.severity {
                    Severity::Serious => "serious",
                    Severity::Minor => "minor",
                };
                let _ = write!(out, "<li class=\"{severity}\">{}</li>", esc(&f.line_text()));
            }
            out.push_str("</ul>");
        }
        out.push_str("</div>\n");
    }
    out
}
