//! Reasoning written inline in a reply's content, told apart from the answer.
//!
//! Models write it in `<think>…</think>` (also `<reasoning>`, `<thinking>`),
//! in any letter case. Two shapes need care: the opening tag is missing when
//! the chat template already opened the block (DeepSeek-R1 and QwQ through a
//! server without a reasoning parser), so the reply starts inside it and only
//! a `</think>` shows where it ends; and a block left open at the end (a reply
//! cut off while still thinking) is reasoning to its end.
//!
//! The splitter is fed content as it streams, split anywhere (inside a tag
//! too), and gives back pieces in order. A tag split across two chunks is
//! held back until the next chunk tells what it is.

use super::Delta;

const OPENING: [&str; 3] = ["<think>", "<thinking>", "<reasoning>"];
const CLOSING: [&str; 3] = ["</think>", "</thinking>", "</reasoning>"];

/// Splits streamed content into answer and reasoning (see the module comment).
#[derive(Debug, Default)]
pub(crate) struct ReasoningSplitter {
    /// Inside a block: the index of its tag in `OPENING`/`CLOSING`.
    inside: Option<usize>,
    /// The end of the text fed so far that may be the start of a tag.
    pending: String,
    /// A block was opened, or an orphan closing tag was met: from now on a
    /// closing tag outside a block is just text.
    seen_tag: bool,
    /// Answer text given out so far, while no tag was seen: it becomes
    /// reasoning if an orphan closing tag turns up.
    content_so_far: String,
    /// Drop whitespace at the start of the next answer or reasoning text (the
    /// newlines that follow a tag).
    trim_next: bool,
}

impl ReasoningSplitter {
    pub(crate) fn new() -> ReasoningSplitter {
        ReasoningSplitter::default()
    }

    /// Feed the next piece of content; returns the pieces it completed. A
    /// [`Delta::Restart`] among them means the answer given so far was reasoning
    /// all along (the reply began inside a block): it is given again as reasoning.
    pub(crate) fn push(&mut self, text: &str) -> Vec<Delta> {
        let mut out = Vec::new();
        let given_before = !self.content_so_far.is_empty();
        let mut rest = std::mem::take(&mut self.pending);
        rest.push_str(text);
        loop {
            let lower = rest.to_ascii_lowercase();
            match self.inside {
                Some(tag) => match lower.find(CLOSING[tag]) {
                    Some(at) => {
                        self.reasoning(&rest[..at], &mut out);
                        rest = rest[at + CLOSING[tag].len()..].to_string();
                        self.inside = None;
                        self.trim_next = true;
                    }
                    None => {
                        let keep = partial_tag_len(&lower, &[CLOSING[tag]]);
                        self.reasoning(&rest[..rest.len() - keep], &mut out);
                        self.pending = rest[rest.len() - keep..].to_string();
                        return out;
                    }
                },
                None => {
                    let opening = earliest(&lower, &OPENING);
                    let orphan = if self.seen_tag {
                        None
                    } else {
                        earliest(&lower, &CLOSING)
                    };
                    // An opening tag counts unless an orphan closing tag comes first.
                    let opening = match (opening, orphan) {
                        (Some((at, _)), Some((c, _))) if c < at => None,
                        (opening, _) => opening,
                    };
                    match (opening, orphan) {
                        (Some((at, tag)), _) => {
                            self.content(&rest[..at], &mut out);
                            rest = rest[at + OPENING[tag].len()..].to_string();
                            self.inside = Some(tag);
                            self.seen_tag = true;
                            self.trim_next = true;
                        }
                        (_, Some((at, tag))) => {
                            // Only answer text can be in `out` yet: it is
                            // in `content_so_far` too, and given again below.
                            out.clear();
                            if given_before {
                                out.push(Delta::Restart(
                                    "the reply began inside a reasoning block".into(),
                                ));
                            }
                            let mut before = std::mem::take(&mut self.content_so_far);
                            before.push_str(&rest[..at]);
                            self.trim_next = true;
                            self.reasoning(&before, &mut out);
                            rest = rest[at + CLOSING[tag].len()..].to_string();
                            self.seen_tag = true;
                            self.trim_next = true;
                        }
                        (None, None) => {
                            let tags: Vec<&str> = if self.seen_tag {
                                OPENING.to_vec()
                            } else {
                                OPENING.iter().chain(CLOSING.iter()).copied().collect()
                            };
                            let keep = partial_tag_len(&lower, &tags);
                            self.content(&rest[..rest.len() - keep], &mut out);
                            self.pending = rest[rest.len() - keep..].to_string();
                            return out;
                        }
                    }
                }
            }
        }
    }

    /// The content ended: what was held back is given out (an unclosed block
    /// is reasoning to its end).
    pub(crate) fn finish(&mut self) -> Vec<Delta> {
        let mut out = Vec::new();
        let rest = std::mem::take(&mut self.pending);
        match self.inside {
            Some(_) => self.reasoning(&rest, &mut out),
            None => self.content(&rest, &mut out),
        }
        out
    }

    fn content(&mut self, text: &str, out: &mut Vec<Delta>) {
        let text = self.trimmed(text);
        if text.is_empty() {
            return;
        }
        if !self.seen_tag {
            self.content_so_far.push_str(&text);
        }
        out.push(Delta::Content(text));
    }

    fn reasoning(&mut self, text: &str, out: &mut Vec<Delta>) {
        let text = self.trimmed(text);
        if !text.is_empty() {
            out.push(Delta::Reasoning(text));
        }
    }

    fn trimmed(&mut self, text: &str) -> String {
        if !self.trim_next {
            return text.to_string();
        }
        let text = text.trim_start();
        if !text.is_empty() {
            self.trim_next = false;
        }
        text.to_string()
    }
}

/// Split a whole text at once: (answer, reasoning).
pub(crate) fn split_reasoning(text: &str) -> (String, String) {
    let mut splitter = ReasoningSplitter::new();
    let mut pieces = splitter.push(text);
    pieces.extend(splitter.finish());
    let (mut answer, mut reasoning) = (String::new(), String::new());
    for piece in pieces {
        match piece {
            Delta::Content(t) => answer.push_str(&t),
            Delta::Reasoning(t) => reasoning.push_str(&t),
            Delta::Restart(_) => {
                answer.clear();
                reasoning.clear();
            }
            Delta::Status(_) | Delta::Began { .. } => {}
        }
    }
    (answer, reasoning)
}

/// The earliest of `tags` in `lower`: (byte offset, index of the tag).
fn earliest(lower: &str, tags: &[&str]) -> Option<(usize, usize)> {
    tags.iter()
        .enumerate()
        .filter_map(|(i, tag)| lower.find(tag).map(|at| (at, i)))
        .min()
}

/// How many bytes at the end of `lower` could be the start of one of `tags`.
fn partial_tag_len(lower: &str, tags: &[&str]) -> usize {
    let longest = tags.iter().map(|t| t.len()).max().unwrap_or(0);
    (1..longest.min(lower.len() + 1))
        .rev()
        .find(|&n| {
            lower.is_char_boundary(lower.len() - n)
                && tags
                    .iter()
                    .any(|t| t.starts_with(&lower[lower.len() - n..]))
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed `text` cut at every `step` bytes (on character boundaries) and
    /// gather (answer, reasoning) as a consumer of the deltas would.
    fn streamed(text: &str, step: usize) -> (String, String) {
        let mut s = ReasoningSplitter::new();
        let mut pieces = Vec::new();
        let mut start = 0;
        while start < text.len() {
            let mut end = (start + step).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            pieces.extend(s.push(&text[start..end]));
            start = end;
        }
        pieces.extend(s.finish());
        let (mut answer, mut reasoning) = (String::new(), String::new());
        for p in pieces {
            match p {
                Delta::Content(t) => answer.push_str(&t),
                Delta::Reasoning(t) => reasoning.push_str(&t),
                Delta::Restart(_) => {
                    answer.clear();
                    reasoning.clear();
                }
                Delta::Status(_) | Delta::Began { .. } => {}
            }
        }
        (answer, reasoning)
    }

    fn every_split(text: &str, answer: &str, reasoning: &str) {
        for step in 1..=text.len() {
            assert_eq!(
                streamed(text, step),
                (answer.to_string(), reasoning.to_string()),
                "fed {step} bytes at a time: {text:?}"
            );
        }
    }

    #[test]
    fn a_think_block_is_reasoning_wherever_the_stream_splits() {
        every_split(
            "<think>\nfirst a draft: def f(): pass\n</think>\n\ndef f():\n    return 1\n",
            "def f():\n    return 1\n",
            "first a draft: def f(): pass\n",
        );
        every_split("Sure. <Thinking>é→x</THINKING>done", "Sure. done", "é→x");
        every_split("<reasoning>a</reasoning>b", "b", "a");
    }

    #[test]
    fn a_missing_opening_tag_makes_the_start_reasoning() {
        every_split(
            "the template opened it\n</think>\nanswer",
            "answer",
            "the template opened it\n",
        );
        // A second orphan closing tag is just text.
        every_split("r</think>a</think>", "a</think>", "r");
    }

    #[test]
    fn an_unclosed_block_is_reasoning_to_the_end() {
        every_split(
            "<think>still thinking when cut",
            "",
            "still thinking when cut",
        );
    }

    #[test]
    fn text_that_only_looks_like_a_tag_start_is_kept() {
        every_split("if a <b and c> d: <th", "if a <b and c> d: <th", "");
        every_split("x < y", "x < y", "");
    }
}
