//! Coverage of the failing path in the HTML export: the failing function's
//! code with each line that ran in the failing test marked, and each that
//! could have run and did not (`Location::executed_lines`, `missed_lines`).

use crate::protocol::present::plural;
use std::fmt::Write;

use crate::protocol::Location;
use crate::protocol::coverage::{LineRun, function_span};

use super::html::esc;

/// The block beside a failure: the function `name` of `code` (the version
/// the failure was found in), its lines marked; empty without coverage.
pub(crate) fn block(location: &Location, code: &str, name: &str) -> String {
    if !location.has_coverage() {
        return String::new();
    }
    let Some((first, last)) = function_span(code, name) else {
        return String::new();
    };
    let mut rows = String::new();
    let (mut ran, mut missed) = (0, 0);
    for (i, text) in code.lines().enumerate() {
        let n = i as u32 + 1;
        if n < first || n > last {
            continue;
        }
        let (class, sign) = match location.line_run(n) {
            LineRun::Ran => {
                ran += 1;
                ("ran", "▌")
            }
            LineRun::Missed => {
                missed += 1;
                ("missed", "✗")
            }
            LineRun::Neither => ("", ""),
        };
        let _ = write!(
            rows,
            "<tr class=\"{class}\"><td class=\"no\">{n}</td><td class=\"cov\">{sign}</td><td class=\"text\">{}</td></tr>",
            esc(text)
        );
    }
    format!(
        "<div class=\"coverage\"><h4>Lines that ran</h4><p class=\"none\">{ran} line{} of <code>{}</code> ran in the failing test, {missed} did not</p><table class=\"listing mono\">{rows}</table></div>\n",
        plural(ran),
        esc(name)
    )
}
