//! A reflection that repeats itself (the prose before a repair's code said
//! one sentence over and over): recorded cut where the repetition begins,
//! with a mark, and never fed on: the next repair does not go on from the
//! conversation whose reply held it (`conversation::so_far`), so the loop
//! is not in its prompt. Read from the reply itself, so a resume decides
//! the same way.

use super::extract;
use super::testfix;
use codeloop_llm::repetition;
use codeloop_session::story::words;

/// The reflection as it is recorded: `text` cut where it starts repeating
/// itself, marked so, and the loop in words; `text` as it is otherwise.
pub(crate) fn kept(text: &str) -> (String, Option<String>) {
    match repetition::prose_loop(text) {
        Some(found) => (
            format!("{} {}", text[..found.at].trim_end(), words::REFLECTION_CUT),
            Some(found.what),
        ),
        None => (text.to_string(), None),
    }
}

/// Whether the reflection of repair `reply` (the prose before its code)
/// repeats itself.
pub(crate) fn reply_loops(reply: &str) -> bool {
    let prose = testfix::without_verdict(&extract::prose_before_code(reply));
    repetition::prose_loop(&prose).is_some()
}
