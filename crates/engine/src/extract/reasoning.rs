//! Reasoning blocks: `<think>…</think>` (and `<thinking>`, `<reasoning>`, any
//! case) hold the model's scratch work, drafts of the code included. Nothing in
//! them is ever taken as the answer.

const TAGS: [&str; 3] = ["think", "thinking", "reasoning"];

/// One reasoning tag found in the text.
struct Tag {
    start: usize,
    end: usize,
    name: &'static str,
    closing: bool,
}

/// The first reasoning tag at or after `from` (`<think>`, `</Think >`, ...).
fn next_tag(text: &str, from: usize) -> Option<Tag> {
    let bytes = text.as_bytes();
    let mut i = from;
    while let Some(off) = text.get(i..)?.find('<') {
        let start = i + off;
        let mut j = start + 1;
        let closing = bytes.get(j) == Some(&b'/');
        if closing {
            j += 1;
        }
        let name_len = bytes[j..]
            .iter()
            .take_while(|b| b.is_ascii_alphabetic())
            .count();
        let word = &text[j..j + name_len];
        let found = TAGS.iter().find(|t| t.eq_ignore_ascii_case(word));
        let mut k = j + name_len;
        while bytes.get(k).is_some_and(|b| *b == b' ' || *b == b'\t') {
            k += 1;
        }
        if let (Some(name), Some(b'>')) = (found, bytes.get(k)) {
            return Some(Tag {
                start,
                end: k + 1,
                name,
                closing,
            });
        }
        i = start + 1;
    }
    None
}

/// The reply without its reasoning, and the reasoning (its blocks joined by a
/// blank line). Handles a block the chat template opened (only the closing tag
/// is in the reply: all before it is reasoning) and a block never closed (all
/// after the opening tag is reasoning).
pub fn strip_reasoning(reply: &str) -> (String, String) {
    let mut answer = String::new();
    let mut reasoning: Vec<&str> = Vec::new();
    let mut pos = 0;
    let mut first = true;
    while let Some(tag) = next_tag(reply, pos) {
        if tag.closing {
            if first {
                // The template opened the block: everything so far is reasoning.
                reasoning.push(&reply[pos..tag.start]);
            } else {
                // A stray closing tag after the answer began: drop the tag only.
                answer.push_str(&reply[pos..tag.start]);
            }
            pos = tag.end;
            first = false;
            continue;
        }
        first = false;
        answer.push_str(&reply[pos..tag.start]);
        let close = find_closing(reply, tag.end, tag.name);
        match close {
            Some((inner_end, after)) => {
                reasoning.push(&reply[tag.end..inner_end]);
                pos = after;
            }
            None => {
                reasoning.push(&reply[tag.end..]);
                pos = reply.len();
            }
        }
    }
    answer.push_str(&reply[pos..]);
    let reasoning = reasoning
        .iter()
        .map(|r| r.trim())
        .filter(|r| !r.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    (answer, reasoning)
}

/// Where the block opened by `<name>` ends: (end of its text, end of the tag).
fn find_closing(text: &str, from: usize, name: &str) -> Option<(usize, usize)> {
    let mut pos = from;
    while let Some(tag) = next_tag(text, pos) {
        if tag.closing && tag.name == name {
            return Some((tag.start, tag.end));
        }
        pos = tag.end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_block_is_split_out_in_any_case() {
        let (a, r) = strip_reasoning("<Think>\ndraft\n</THINK>\n\nanswer");
        assert_eq!((a.as_str(), r.as_str()), ("\n\nanswer", "draft"));
        let (a, r) = strip_reasoning("<reasoning>x</reasoning>y<thinking>z</thinking>w");
        assert_eq!((a.as_str(), r.as_str()), ("yw", "x\n\nz"));
    }

    #[test]
    fn a_template_opened_block_and_an_unclosed_block_are_reasoning() {
        let (a, r) = strip_reasoning("draft here\n</think>\nanswer");
        assert_eq!((a.as_str(), r.as_str()), ("\nanswer", "draft here"));
        let (a, r) = strip_reasoning("Sure.\n<think>\ndef f(): pass\n");
        assert_eq!((a.as_str(), r.as_str()), ("Sure.\n", "def f(): pass"));
    }

    #[test]
    fn other_tags_and_plain_text_are_kept() {
        let text = "a < b and <div> and <thinker> stay";
        assert_eq!(strip_reasoning(text), (text.to_string(), String::new()));
    }
}
