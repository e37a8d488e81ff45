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
//!
//! A repair's prompt that does not fit the model's context window is cut
//! (`fit`): first the conversation's earlier turns (the repair opens anew
//! from the code prompt, listing the earlier failures instead), then the
//! oldest of those failures, then the run's output.

use codeloop_llm::tokens;
use codeloop_protocol::present::plural;
use codeloop_protocol::{ChatMessage, Location, Role};
use codeloop_session::State;
use serde::Serialize;

use super::extract;
use super::generate::DepCtx;
use super::tag::Tag;

/// Tokens left for a repair's reply when its prompt is fitted to the model's
/// context window (a quarter of the window, at most this).
const REPLY_ALLOWANCE: u64 = 2048;

/// Whether `tag` is of a call that wrote `iteration` of `name`: its first
/// code, a repair or a fresh start, or the retry of one of them.
fn wrote(tag: &str, name: &str, iteration: u32) -> bool {
    let Some(tag) = Tag::parse(tag) else {
        return false;
    };
    match tag.without_retry() {
        Tag::Code {
            node,
            iteration: 1,
            candidate: 1,
        } => iteration == 1 && node == name,
        Tag::Repair { node, iteration: i }
        | Tag::Fresh {
            node, iteration: i, ..
        } => *i == iteration && node == name,
        _ => false,
    }
}

/// Whether `tag` is of a call that wrote `name`'s tests (the first time, or
/// again), or the retry of one.
fn wrote_tests(tag: &str, name: &str) -> bool {
    matches!(
        Tag::parse(tag).as_ref().map(Tag::without_retry),
        Some(Tag::Tests { node, .. }) if node == name
    )
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
    // A reflection that repeated itself is not fed on (`looped`).
    if call.error.is_some() || call.messages.len() < 2 || super::looped::reply_loops(&call.reply) {
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
    let call = s
        .calls
        .values()
        .rev()
        .find(|c| c.done && wrote_tests(&c.tag, name))?;
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

/// An earlier failure as the repair prompt lists it, in a line.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub(super) struct HistoryCtx {
    iteration: u32,
    error: String,
}

/// Every failure before the last of `failures` (oldest first), in a line each.
pub(super) fn earlier(failures: &[(u32, Location)]) -> Vec<HistoryCtx> {
    failures[..failures.len().saturating_sub(1)]
        .iter()
        .map(|(it, l)| HistoryCtx {
            iteration: *it,
            error: Location::prompt_line(l),
        })
        .collect()
}

/// What a repair's prompt is made of, before it is fitted to the window.
pub(super) struct RepairTurns {
    /// The conversation that wrote the failing code, its reply last, to go
    /// on with (`so_far`); `None` when there is none.
    pub(super) conversation: Option<Vec<ChatMessage>>,
    /// The node's code prompt and the code as the model's turn: how the
    /// repair opens without the conversation.
    pub(super) opening: Vec<ChatMessage>,
    /// The failures before this one, oldest first, in a line each: listed
    /// only without the conversation (its turns hold them).
    pub(super) earlier: Vec<HistoryCtx>,
    /// The end of the last run's output.
    pub(super) output: String,
}

/// What `fit` left out.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Dropped {
    /// The conversation's earlier turns.
    turns: bool,
    /// The oldest failures listed, how many.
    failures: usize,
    /// The run's output.
    output: bool,
}

impl Dropped {
    /// The notice that says what was left out of `name`'s repair prompt for
    /// a window of `window` tokens; `None` when nothing was.
    pub(super) fn notice(&self, name: &str, window: u64) -> Option<String> {
        let mut left_out = Vec::new();
        if self.turns {
            left_out.push("the earlier turns of the conversation".to_string());
        }
        if self.failures > 0 {
            left_out.push(format!(
                "the {} oldest failure{}",
                self.failures,
                plural(self.failures)
            ));
        }
        if self.output {
            left_out.push("the run's output".to_string());
        }
        (!left_out.is_empty()).then(|| {
            format!(
                "the repair prompt for `{name}` did not fit the model's context window ({window} tokens): left out {}",
                left_out.join(" and ")
            )
        })
    }
}

/// A repair prompt fitted to the window.
pub(super) struct Fitted {
    pub(super) messages: Vec<ChatMessage>,
    pub(super) dropped: Dropped,
}

/// The repair's messages: the conversation (or the opening) and the repair
/// turn, which `turn` writes from the failures it lists and the output.
/// With a `window` (tokens), left out until the prompt leaves room for the
/// reply: first the conversation's earlier turns (the opening instead, and
/// every earlier failure listed), then the oldest failures one by one, then
/// the output. When nothing is left to leave out, the prompt goes as it is.
pub(super) fn fit<E>(
    turns: RepairTurns,
    window: Option<u64>,
    turn: impl Fn(&[HistoryCtx], &str) -> Result<String, E>,
) -> Result<Fitted, E> {
    let RepairTurns {
        mut conversation,
        opening,
        earlier,
        mut output,
    } = turns;
    let mut history = match conversation {
        Some(_) => Vec::new(),
        None => earlier.clone(),
    };
    let mut dropped = Dropped::default();
    loop {
        let mut messages = conversation.clone().unwrap_or_else(|| opening.clone());
        messages.push(ChatMessage {
            role: Role::User,
            content: turn(&history, &output)?,
        });
        let Some(window) = window else {
            return Ok(Fitted { messages, dropped });
        };
        let reply = (window / 4).min(REPLY_ALLOWANCE);
        if tokens::fits(tokens::estimate_prompt_tokens(&messages), reply, window) {
            return Ok(Fitted { messages, dropped });
        }
        if conversation.is_some() {
            conversation = None;
            history = earlier.clone();
            dropped.turns = true;
        } else if !history.is_empty() {
            history.remove(0);
            dropped.failures += 1;
        } else if !output.is_empty() {
            output.clear();
            dropped.output = true;
        } else {
            return Ok(Fitted { messages, dropped });
        }
    }
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

#[cfg(test)]
mod fit_tests {
    use super::*;
    use std::convert::Infallible;

    /// A window of 10,000 tokens leaves 10,000 - 2,048 (the reply) - 1,000
    /// (a tenth kept free) = 6,952 tokens for the prompt: 27,808 characters.
    const WINDOW: u64 = 10_000;

    fn text(tokens: usize) -> String {
        "x".repeat(tokens * 4)
    }

    fn failure(iteration: u32, tokens: usize) -> HistoryCtx {
        HistoryCtx {
            iteration,
            error: text(tokens),
        }
    }

    /// The turn lists the failures by iteration, then their text and the output.
    fn turn(history: &[HistoryCtx], output: &str) -> Result<String, Infallible> {
        let listed: Vec<String> = history.iter().map(|h| h.iteration.to_string()).collect();
        let texts: String = history.iter().map(|h| h.error.as_str()).collect();
        Ok(format!("[{}]{texts}{output}", listed.join(",")))
    }

    fn turns(conversation: usize, failures: &[usize], output: usize) -> RepairTurns {
        RepairTurns {
            conversation: (conversation > 0).then(|| vec![ChatMessage::user(text(conversation))]),
            opening: vec![ChatMessage::user("the code prompt")],
            earlier: failures
                .iter()
                .enumerate()
                .map(|(i, t)| failure(i as u32 + 1, *t))
                .collect(),
            output: text(output),
        }
    }

    fn last(fitted: &Fitted) -> &str {
        fitted.messages.last().map_or("", |m| m.content.as_str())
    }

    #[test]
    fn without_a_window_nothing_is_left_out() {
        let fitted = fit(turns(50_000, &[1_000], 1_000), None, turn).unwrap();
        assert_eq!(fitted.dropped, Dropped::default());
        assert_eq!(fitted.messages.len(), 2);
        assert_eq!(fitted.messages[0].content, text(50_000));
        // In a conversation, its turns hold the earlier failures.
        assert!(last(&fitted).starts_with("[]"));
    }

    #[test]
    fn the_conversations_earlier_turns_go_first() {
        // The conversation is too big; the opening with every failure and
        // the output fits.
        let fitted = fit(turns(8_000, &[1_000, 1_000], 2_000), Some(WINDOW), turn).unwrap();
        assert_eq!(
            fitted.dropped,
            Dropped {
                turns: true,
                failures: 0,
                output: false
            }
        );
        assert_eq!(fitted.messages[0].content, "the code prompt");
        assert!(last(&fitted).starts_with("[1,2]"));
        assert!(last(&fitted).ends_with(&text(2_000)));
    }

    #[test]
    fn then_the_oldest_failures_one_by_one() {
        // Three failures of 2,000 tokens and an output of 3,000: leaving out
        // the two oldest is enough (one is not), and the output stays.
        let fitted = fit(turns(0, &[2_000, 2_000, 2_000], 3_000), Some(WINDOW), turn).unwrap();
        assert_eq!(
            fitted.dropped,
            Dropped {
                turns: false,
                failures: 2,
                output: false
            }
        );
        assert!(last(&fitted).starts_with("[3]"));
        assert!(last(&fitted).ends_with(&text(3_000)));
    }

    #[test]
    fn then_the_output_when_no_failure_is_left() {
        let fitted = fit(turns(8_000, &[1_000], 7_000), Some(WINDOW), turn).unwrap();
        assert_eq!(
            fitted.dropped,
            Dropped {
                turns: true,
                failures: 1,
                output: true
            }
        );
        assert_eq!(last(&fitted), "[]");
    }

    #[test]
    fn a_prompt_that_fits_with_nothing_left_out_goes_as_it_is() {
        let too_big = RepairTurns {
            opening: vec![ChatMessage::user(text(9_000))],
            ..turns(0, &[], 0)
        };
        let fitted = fit(too_big, Some(WINDOW), turn).unwrap();
        assert_eq!(fitted.dropped, Dropped::default());
        assert_eq!(fitted.messages[0].content, text(9_000));
        let fits = fit(turns(1_000, &[1_000], 1_000), Some(WINDOW), turn).unwrap();
        assert_eq!(fits.dropped, Dropped::default());
        assert_eq!(fits.messages[0].content, text(1_000));
    }

    #[test]
    fn the_notice_names_what_was_left_out() {
        assert_eq!(Dropped::default().notice("f", WINDOW), None);
        let all = Dropped {
            turns: true,
            failures: 2,
            output: true,
        };
        assert_eq!(
            all.notice("f", 4096).as_deref(),
            Some(
                "the repair prompt for `f` did not fit the model's context window (4096 tokens): left out the earlier turns of the conversation and the 2 oldest failures and the run's output"
            )
        );
        let one = Dropped {
            failures: 1,
            ..Dropped::default()
        };
        assert_eq!(
            one.notice("g", 512).as_deref(),
            Some(
                "the repair prompt for `g` did not fit the model's context window (512 tokens): left out the 1 oldest failure"
            )
        );
    }
}
