//! Functional consensus on the HTML page: beside the iteration chosen by a
//! vote, the vote, and each candidate (its agreement, its code folded).

use std::fmt::Write;

use super::html::{esc, listing};
use crate::session::state::NodeState;
use crate::session::story::words;

/// The vote `node`'s iteration `it` was chosen by, if it was.
pub(crate) fn block(node: &NodeState, it: u32) -> String {
    let Some(c) = node.candidates.as_ref().filter(|c| c.iteration == it) else {
        return String::new();
    };
    let mut out = format!(
        "<div class=\"vote\"><h4>Vote (functional consensus)</h4><p>{}</p>",
        esc(&c.summary())
    );
    for (i, k) in c.candidates.iter().enumerate() {
        let _ = write!(
            out,
            "<details{}><summary>{}</summary>{}</details>",
            if i == c.chosen {
                " class=\"chosen\""
            } else {
                ""
            },
            esc(&words::candidate(c, i)),
            listing(None, &k.code, None)
        );
    }
    out.push_str("</div>\n");
    out
}
