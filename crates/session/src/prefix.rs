//! How much of a session's prompts a server's prompt cache could reuse: for
//! each model request, the longest prefix it shares with any earlier request
//! of the session followed by that request's reply (a server keeps the
//! tokens it generated too, and a repair goes on with the conversation that
//! wrote the code). Measured in characters of the messages as sent (each
//! message's role and content, in order): an estimate of the share of
//! prompt tokens a cache that keeps earlier prompts and replies would not
//! compute again.
//!
//! Across sessions (`shared_with_earlier`): of each session's first request,
//! the longest prefix it shares with an earlier session's first request.
//! That is what a server's cache could keep from one bench problem to the
//! next (the system prompt, the instructions, any examples), replies aside:
//! no session goes on from another's.

use codeloop_protocol::{ChatMessage, Role};

use super::State;

/// Prompt characters of a session, and how many of them were a prefix of an
/// earlier request of the same session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrefixReuse {
    pub reused_chars: u64,
    pub prompt_chars: u64,
}

/// A request as one text, as a chat template lays it out: role, then content.
fn request_text(messages: &[ChatMessage]) -> Vec<char> {
    let mut out = String::new();
    for m in messages {
        out.push_str(match m.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        });
        out.push('\n');
        out.push_str(&m.content);
        out.push('\n');
    }
    out.chars().collect()
}

fn common_prefix(a: &[char], b: &[char]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The reuse over `calls` (each request's messages and its reply), in the
/// order they were sent.
pub fn prefix_reuse<'a>(
    calls: impl IntoIterator<Item = (&'a [ChatMessage], &'a str)>,
) -> PrefixReuse {
    let mut earlier: Vec<Vec<char>> = Vec::new();
    let mut reuse = PrefixReuse::default();
    for (messages, reply) in calls {
        let mut text = request_text(messages);
        let shared = earlier
            .iter()
            .map(|e| common_prefix(e, &text))
            .max()
            .unwrap_or(0);
        reuse.reused_chars += shared as u64;
        reuse.prompt_chars += text.len() as u64;
        // What the server holds after the call: the prompt, then the reply.
        text.extend(format!("assistant\n{reply}\n").chars());
        earlier.push(text);
    }
    reuse
}

/// For each request in order, its characters and the longest prefix it
/// shares with any earlier request of the list (see the module doc).
pub fn shared_with_earlier<'a>(
    requests: impl IntoIterator<Item = &'a [ChatMessage]>,
) -> Vec<PrefixReuse> {
    let mut earlier: Vec<Vec<char>> = Vec::new();
    let mut out = Vec::new();
    for messages in requests {
        let text = request_text(messages);
        let shared = earlier
            .iter()
            .map(|e| common_prefix(e, &text))
            .max()
            .unwrap_or(0);
        out.push(PrefixReuse {
            reused_chars: shared as u64,
            prompt_chars: text.len() as u64,
        });
        earlier.push(text);
    }
    out
}

impl State {
    /// The prefix reuse of this session's model requests (see the module doc).
    pub fn prefix_reuse(&self) -> PrefixReuse {
        prefix_reuse(
            self.calls
                .values()
                .map(|c| (c.messages.as_slice(), c.reply.as_str())),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(system: &str, user: &str) -> Vec<ChatMessage> {
        vec![
            ChatMessage {
                role: Role::System,
                content: system.into(),
            },
            ChatMessage {
                role: Role::User,
                content: user.into(),
            },
        ]
    }

    #[test]
    fn each_request_counts_its_longest_prefix_with_any_earlier_one() {
        let a = msgs("sys", "Task: x\nwrite f");
        let b = msgs("sys", "Task: y");
        let c = msgs("sys", "Task: x\nrepair f");
        let reuse = prefix_reuse([(a.as_slice(), ""), (b.as_slice(), ""), (c.as_slice(), "")]);
        // "system\nsys\nuser\n" is 16 characters.
        let (la, lb, lc) = (16 + 16, 16 + 8, 16 + 17);
        let shared_b = 16 + 6; // "Task: "
        let shared_c = 16 + 8; // "Task: x\n", with a, not b
        assert_eq!(
            reuse,
            PrefixReuse {
                reused_chars: (shared_b + shared_c) as u64,
                prompt_chars: (la + lb + lc) as u64,
            }
        );
        assert_eq!(prefix_reuse(std::iter::empty()).prompt_chars, 0);
    }

    #[test]
    fn across_sessions_each_first_request_counts_its_longest_prefix_with_an_earlier_one() {
        let a = msgs("sys", "Complete add(a, b)");
        let b = msgs("sys", "Complete max3(a, b, c)");
        let c = msgs("sys", "Complete addition(x)");
        let d = msgs("other", "Complete add(a, b)");
        let across = shared_with_earlier([a.as_slice(), b.as_slice(), c.as_slice(), d.as_slice()]);
        let opening = "system\nsys\nuser\nComplete ".len() as u64;
        let reused: Vec<u64> = across.iter().map(|r| r.reused_chars).collect();
        // c shares "Complete add" with a, longer than "Complete " with b; d
        // differs from the first character of its system prompt's text on.
        assert_eq!(
            reused,
            vec![0, opening, opening + 3, "system\n".len() as u64]
        );
        assert_eq!(across[0].prompt_chars, request_text(&a).len() as u64);
    }

    #[test]
    fn a_request_that_goes_on_from_an_earlier_reply_reuses_the_reply_too() {
        let first = msgs("sys", "write f");
        let mut repair = first.clone();
        repair.push(ChatMessage {
            role: Role::Assistant,
            content: "def f(): pass".into(),
        });
        repair.push(ChatMessage {
            role: Role::User,
            content: "it failed".into(),
        });
        let reuse = prefix_reuse([
            (first.as_slice(), "def f(): pass"),
            (repair.as_slice(), "def f(): return 1"),
        ]);
        let opening = request_text(&first).len() as u64;
        let with_reply = opening + "assistant\ndef f(): pass\n".len() as u64;
        assert_eq!(reuse.reused_chars, with_reply);
        assert_eq!(
            reuse.prompt_chars,
            opening + request_text(&repair).len() as u64
        );
        // Without the reply, only the opening would have counted.
        let without = prefix_reuse([(first.as_slice(), ""), (repair.as_slice(), "")]);
        assert_eq!(without.reused_chars, opening + "assistant\n".len() as u64);
    }
}
