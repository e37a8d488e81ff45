//! The person's steering on the HTML page: each act (a spec edited, a
//! hint, tests replaced, a prompt edited, a skip, a re-run) at its place
//! in its node's iterations, in the story's words (`story::node_lines`).

use std::fmt::Write;

use super::html::esc;
use crate::session::State;
use crate::session::story::{self, What};

/// `node`'s steering acts that came while its latest code was iteration
/// `it` (0: before its first version), as a block; empty when none.
pub(crate) fn block(state: &State, node: &str, it: u32) -> String {
    let acts: Vec<String> = story::node_lines(state, node)
        .into_iter()
        .filter(|l| matches!(l.what, What::Steer { iteration, .. } if iteration == it))
        .map(|l| format!("<li>⚑ you: {}</li>", esc(&l.text)))
        .collect();
    if acts.is_empty() {
        return String::new();
    }
    let when = if it == 0 {
        "before its first version".to_string()
    } else {
        format!("at #{it}")
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<div class=\"steering\"><h4>You, {when}</h4><ul>{}</ul></div>",
        acts.concat()
    );
    out
}
