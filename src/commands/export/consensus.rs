//! Functional consensus on the HTML page: beside the iteration chosen by a
//! vote, the vote, and each candidate (its agreement, its code folded).

use std::fmt::Write;

use super::html::{esc, listing};
use crate::session::state::NodeState;

/// The vote `node`'s iteration `it` was chosen by, if it was.
pub(crate) fn block(node: &NodeState, it: u32) -> String {
    let Some(c) = node.candidates.as_ref().filter(|c| c.iteration == it) else {
        return String::new();
    };
    let mut out = format!(
        "<div class=\"vote\"><h4>Candidates (functional consensus)</h4><p>{}</p>",
        esc(&c.summary())
    );
    for (i, k) in c.candidates.iter().enumerate() {
        let what = match (k.loaded, i == c.chosen) {
            _ if !c.voted() && i == c.chosen => "kept".to_string(),
            _ if !c.voted() => "not run".to_string(),
            (false, _) => "did not load".to_string(),
            (true, true) => format!("agreement {}, chosen", k.score),
            (true, false) => format!("agreement {}", k.score),
        };
        let _ = write!(
            out,
            "<details{}><summary>#{} {}</summary>{}</details>",
            if i == c.chosen {
                " class=\"chosen\""
            } else {
                ""
            },
            i + 1,
            esc(&what),
            listing(None, &k.code, None)
        );
    }
    out.push_str("</div>\n");
    out
}
