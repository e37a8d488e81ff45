//! A repair as the next turn of the conversation that wrote the failing
//! code: the request that wrote it, as it was sent; the model's reply, as it
//! came; then the failure. Each repair's prompt begins with the whole of the
//! one before it and its reply, so a server's prompt cache (llama.cpp keeps a
//! slot's prompt and the tokens it generated; vLLM and hosted APIs keep
//! prefixes) computes only the new turn.
//!
//! The conversation is taken up only while it still says what is true: the
//! failing code is what the last reply gave (no edit, no other candidate),
//! and the tests and the dependencies it shows are the node's own. Otherwise
//! a repair starts a new one from the node's code prompt, which is the code
//! call's own beginning.

use codeloop_protocol::{ChatMessage, Role};
use codeloop_session::State;

use super::extract;
use super::generate::DepCtx;

/// Whether `tag` is of a call that wrote `iteration` of `name`: its first
/// code, a repair or a fresh start, or the retry of one of them.
fn wrote(tag: &str, name: &str, iteration: u32) -> bool {
    let tag = tag.strip_suffix("/retry").unwrap_or(tag);
    (iteration == 1 && tag == format!("code/{name}/1"))
        || tag == format!("repair/{name}/{iteration}")
        || tag == format!("fresh/{name}/{iteration}")
}

/// The conversation that wrote `code`, `iteration` of `name`, with the
/// model's reply as its last message; `None` when there is none to go on
/// with. `prelude` puts the node's given prelude in front of extracted code
/// (as the engine did when it recorded the version).
pub(super) fn so_far(
    s: &State,
    name: &str,
    iteration: u32,
    code: &str,
    tests: Option<&str>,
    deps: &[DepCtx],
    prelude: impl Fn(String) -> String,
) -> Option<Vec<ChatMessage>> {
    let call = s
        .calls
        .values()
        .rev()
        .find(|c| c.done && wrote(&c.tag, name, iteration))?;
    if call.error.is_some() || call.messages.len() < 2 {
        return None;
    }
    let replied = extract::extract_code(&call.reply, Some(name)).map(prelude)?;
    if replied.trim() != code.trim() {
        return None;
    }
    went_on(&call.messages, &call.reply, tests, deps)
}

/// The conversation that wrote `name`'s tests, with the reply as its last
/// message, when the node's tests are still that reply's (not corrected,
/// edited or fixed since) and its dependencies' code is as it showed it:
/// the code call goes on from there.
pub(super) fn after_tests(
    s: &State,
    name: &str,
    tests: &str,
    deps: &[DepCtx],
) -> Option<Vec<ChatMessage>> {
    let wrote_tests = |tag: &str| {
        let tag = tag.strip_suffix("/retry").unwrap_or(tag);
        tag == format!("tests/{name}") || tag == format!("tests/{name}/2")
    };
    let call = s
        .calls
        .values()
        .rev()
        .find(|c| c.done && wrote_tests(&c.tag))?;
    if call.error.is_some() || call.messages.len() < 2 {
        return None;
    }
    went_on(&call.messages, &call.reply, Some(tests), deps)
}

/// `messages` and their `reply`, to go on with, when they show `tests` and
/// each dependency's code as they are now.
fn went_on(
    messages: &[ChatMessage],
    reply: &str,
    tests: Option<&str>,
    deps: &[DepCtx],
) -> Option<Vec<ChatMessage>> {
    let shows = |text: &str, role: Option<Role>| {
        text.trim().is_empty()
            || messages
                .iter()
                .filter(|m| role.is_none_or(|r| m.role == r))
                .any(|m| m.content.contains(text.trim()))
            || (role.is_none() && reply.contains(text.trim()))
    };
    if tests.is_some_and(|t| !shows(t, None)) {
        return None;
    }
    if deps.iter().any(|d| !shows(&d.code, Some(Role::User))) {
        return None;
    }
    let mut messages = messages.to_vec();
    messages.push(ChatMessage::assistant(reply.to_string()));
    Some(messages)
}

/// The model's turn for code that did not come as a reply to go on from:
/// the code itself, as a reply would give it.
pub(super) fn code_turn(code: &str) -> ChatMessage {
    ChatMessage::assistant(format!("```python\n{}\n```", code.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calls_that_wrote_an_iteration_are_known_by_their_tags() {
        assert!(wrote("code/f/1", "f", 1));
        assert!(wrote("code/f/1/retry", "f", 1));
        assert!(!wrote("code/f/1", "f", 2));
        assert!(!wrote("code/f/1/c2", "f", 1));
        assert!(wrote("repair/f/3", "f", 3));
        assert!(wrote("fresh/f/4/retry", "f", 4));
        assert!(!wrote("repair/f/3", "f", 2));
        assert!(!wrote("repair/g/3", "f", 3));
        assert!(!wrote("tests/f/2", "f", 2));
    }
}
