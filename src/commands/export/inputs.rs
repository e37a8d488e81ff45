//! The export's section per input file: what it is (its description, as
//! the prompts had it), where it was read from (its full path only when
//! asked: a page is sent to others).

use std::fmt::Write as _;

use codeloop_session::State;

use super::html::{Naming, esc};

/// `<section id="inputs">` with one article per input, or nothing.
pub(crate) fn section(state: &State, naming: Naming, out: &mut String) {
    if state.inputs.is_empty() {
        return;
    }
    out.push_str("<section id=\"inputs\">\n<h2>Input files</h2>\n");
    for (i, f) in state.inputs.iter().enumerate() {
        let _ = write!(
            out,
            "<article class=\"input\" id=\"input-{i}\">\n<h3>{} <span class=\"none\">{}</span></h3>\n\
             <p>{}</p>\n<p class=\"none\">read from {}</p>\n<pre>{}</pre>\n</article>\n",
            esc(&f.name),
            esc(&codeloop_inputs::bytes(f.size_bytes)),
            esc(&f.summary()),
            esc(&naming.name(&f.source_path)),
            esc(&f.described()),
        );
    }
    out.push_str("</section>\n");
}
