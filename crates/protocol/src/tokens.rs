//! Token counts when the model gives none: about four characters a token, the
//! usual rule of thumb for English and code. Rough (code in a BPE vocabulary
//! runs nearer three characters a token), so a fit check built on it keeps a
//! margin; see [`fits`]. The model client estimates a reply's usage with
//! it (`codeloop_llm::tokens`), the story the tokens of replies streaming.

use crate::{ChatMessage, Usage};

/// Tokens in a piece of text, estimated.
pub fn estimate_tokens(text: &str) -> u64 {
    chars_to_tokens(text.chars().count())
}

/// Tokens in a prompt, estimated: its messages' contents together.
pub fn estimate_prompt_tokens(messages: &[ChatMessage]) -> u64 {
    chars_to_tokens(messages.iter().map(|m| m.content.chars().count()).sum())
}

/// Usage of one call, estimated from its prompt and everything the model
/// wrote (answer and reasoning: both cost tokens).
pub fn estimate_usage(messages: &[ChatMessage], text: &str, reasoning: &str) -> Usage {
    Usage::new(
        estimate_prompt_tokens(messages),
        chars_to_tokens(text.chars().count() + reasoning.chars().count()),
    )
}

/// Whether a prompt of `prompt_tokens` (estimated) leaves room for `reply_tokens`
/// in a window of `window` tokens. The estimate can be a third too low for
/// code, so a tenth of the window is kept free on top.
pub fn fits(prompt_tokens: u64, reply_tokens: u64, window: u64) -> bool {
    prompt_tokens + reply_tokens + window / 10 <= window
}

fn chars_to_tokens(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_characters_a_token_rounded_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("éééé"), 1, "characters, not bytes");
        let messages = [ChatMessage::system("abc"), ChatMessage::user("defgh")];
        assert_eq!(estimate_prompt_tokens(&messages), 2);
        let u = estimate_usage(&messages, "abcd", "efgh");
        assert_eq!((u.prompt_tokens, u.completion_tokens), (2, 2));
        assert!(fits(3000, 500, 4096));
        assert!(!fits(3500, 500, 4096));
    }
}
