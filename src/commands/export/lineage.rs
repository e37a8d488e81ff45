//! A session's lineage on its HTML page: the tree of the sessions it
//! belongs to (its forebears up to the first, and every fork made from
//! any of them that the sessions folder holds), where each fork was made
//! (at which record, and what that record was), how each branch ended, and
//! a link to each branch's own page. `codeloop export --format html`
//! writes those pages beside the one asked for, as `codeloop-ID.html`, so
//! the links are plain relative file names and work offline.
//!
//! The tree is read by `session::lineage` (once, bounded); the section is
//! a pure function of what was read.

use super::html::result_class;
use crate::protocol::present::plural;
use std::fmt::Write;

use super::html::esc;
use crate::session::index::SessionResult;
pub(crate) use crate::session::lineage::{Branch, Lineage, MOST, collect};

/// The file `b`'s page is written to, beside the others.
pub(crate) fn page(b: &Branch) -> String {
    format!("{}.html", super::file_stem(&b.id))
}

/// The page asked for, when not named `codeloop-ID.html`: (id, file name).
pub(crate) type Asked = Option<(String, String)>;

/// The file name of `b`'s page, as the others link it.
fn page_of(asked: &Asked, b: &Branch) -> String {
    match asked {
        Some((id, file)) if *id == b.id => file.clone(),
        _ => page(b),
    }
}

/// The lineage as a section of the page of `current`.
pub(crate) fn section(lineage: &Lineage, current: &str, asked: &Asked) -> String {
    let mut out = String::from(
        "<section id=\"lineage\">\n<h2>Lineage</h2>\n<p class=\"none\">The sessions this one belongs to: where each was forked, how it ended. Each links to its own page, written beside this one.</p>\n<ul class=\"lineage\">\n",
    );
    for (depth, b) in &lineage.branches {
        let mine = b.id == current;
        let name = if mine {
            format!(
                "<b>{}</b> <span class=\"none\">(this page)</span>",
                esc(&b.id)
            )
        } else if b.state.is_some() {
            format!("<a href=\"{}\">{}</a>", esc(&page_of(asked, b)), esc(&b.id))
        } else {
            esc(&b.id)
        };
        let result = match &b.state {
            Some(s) => {
                let r = SessionResult::of(s);
                format!(
                    " <span class=\"badge {}\">{}</span> <span class=\"none\">{} repair{}, {} tokens</span> {}",
                    result_class(r),
                    r.label(),
                    s.repair_iterations(),
                    plural(s.repair_iterations()),
                    s.usage.total(),
                    esc(s.task.lines().next().unwrap_or(""))
                )
            }
            None => format!(
                " <span class=\"none\">({})</span>",
                esc(b.unread.as_deref().unwrap_or("not read"))
            ),
        };
        let forked = match (&b.parent, &b.fork_point) {
            (Some((p, _)), Some(point)) => {
                format!(
                    "<div class=\"fork\">forked from {} after {}</div>",
                    esc(p),
                    esc(point)
                )
            }
            (Some((p, at)), None) => {
                format!(
                    "<div class=\"fork\">forked from {} after record {at}</div>",
                    esc(p)
                )
            }
            (None, _) => String::new(),
        };
        let _ = writeln!(
            out,
            "<li class=\"depth-{}{}\" style=\"margin-left: {}em\">{}{}{}</li>",
            depth.min(&32),
            if mine { " current" } else { "" },
            depth * 2,
            name,
            result,
            forked
        );
    }
    out.push_str("</ul>\n");
    if lineage.left_out > 0 {
        let _ = writeln!(
            out,
            "<p class=\"none\">{} more branch{} left out (at most {MOST} are shown).</p>",
            lineage.left_out,
            if lineage.left_out == 1 { "" } else { "es" }
        );
    }
    out.push_str("</section>\n");
    out
}
