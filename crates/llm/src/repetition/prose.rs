//! Prose that repeats itself: a reflection before a repair's code that says
//! the same sentence over and over (Qwen2.5-Coder-0.5B wrote one sentence
//! eight times, then its code). The streaming watcher stops a reply only
//! when its end loops over more than real code ever repeats; prose is
//! looked at whole once the reply came, by sentence, and by the watcher.

use super::{LOOP_MESSAGE, Repetition};

/// Times a sentence is said before the prose counts as looping.
const SENTENCE_REPEATS: usize = 3;
/// The shortest sentence counted (a short "Fix it." said twice is no loop).
const SENTENCE_CHARS: usize = 16;

/// Where prose starts repeating itself, and what repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProseLoop {
    /// The byte offset where the repetition begins: the text before it is
    /// what the prose said.
    pub at: usize,
    /// In words, for the tape: `the reply repeats itself: ...`.
    pub what: String,
}

/// Whether `text` repeats itself: a sentence said `SENTENCE_REPEATS` times
/// or more (cut where it is said the second time), or a loop the streaming
/// watcher tells (cut where the loop begins).
pub fn prose_loop(text: &str) -> Option<ProseLoop> {
    sentence_loop(text).or_else(|| watched_loop(text))
}

fn sentence_loop(text: &str) -> Option<ProseLoop> {
    let sentences = sentences(text);
    for (i, (_, s)) in sentences.iter().enumerate() {
        if s.chars().count() < SENTENCE_CHARS {
            continue;
        }
        let again: Vec<usize> = sentences[i + 1..]
            .iter()
            .filter(|(_, t)| t == s)
            .map(|(at, _)| *at)
            .collect();
        if again.len() + 1 >= SENTENCE_REPEATS {
            let shown: String = s.chars().take(40).collect();
            return Some(ProseLoop {
                at: again[0],
                what: format!(
                    "{LOOP_MESSAGE}: the same sentence ({shown:?}) {} times",
                    again.len() + 1
                ),
            });
        }
    }
    None
}

/// Each sentence with the byte offset it starts at, its spaces made one.
fn sentences(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes: Vec<(usize, char)> = text.char_indices().collect();
    for (k, (i, c)) in bytes.iter().enumerate() {
        let next = bytes.get(k + 1).map(|(_, c)| *c);
        let ends =
            *c == '\n' || (matches!(c, '.' | '!' | '?') && next.is_none_or(char::is_whitespace));
        if ends || next.is_none() {
            let end = i + c.len_utf8();
            let sentence = text[start..end]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            if !sentence.is_empty() {
                let lead = text[start..end].len() - text[start..end].trim_start().len();
                out.push((start + lead, sentence));
            }
            start = end;
        }
    }
    out
}

/// The streaming watcher's loop, fed the text in pieces as a stream is.
fn watched_loop(text: &str) -> Option<ProseLoop> {
    let mut watch = Repetition::new();
    let mut fed = 0;
    for (i, c) in text.char_indices() {
        let end = i + c.len_utf8();
        if end - fed >= 64 || end == text.len() {
            if let Some(found) = watch.push(&text[fed..end]) {
                let span_bytes: usize = text[..end]
                    .chars()
                    .rev()
                    .take(found.span)
                    .map(char::len_utf8)
                    .sum();
                return Some(ProseLoop {
                    at: end - span_bytes,
                    what: found.describe(),
                });
            }
            fed = end;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_said_again_and_again_is_cut_where_it_is_said_the_second_time() {
        let said = "The test expects 'MCMXCIV' for 1994, so the code must subtract.";
        let text = format!("The loop adds every numeral. {}", [said; 8].join(" "));
        let found = prose_loop(&text).expect("a loop");
        assert_eq!(
            &text[..found.at],
            format!("The loop adds every numeral. {said} ")
        );
        assert!(found.what.starts_with(LOOP_MESSAGE), "{}", found.what);
        assert!(found.what.contains("8 times"), "{}", found.what);
    }

    #[test]
    fn prose_that_says_each_thing_once_or_twice_is_no_loop() {
        let text = "Subtractive pairs were added. A smaller numeral before a larger one must be subtracted.\n\
                    Fix it. Fix it. Subtractive pairs were added.";
        assert_eq!(prose_loop(text), None);
        assert_eq!(prose_loop(""), None);
    }

    #[test]
    fn a_long_loop_on_one_line_is_cut_where_the_watcher_finds_it() {
        let text = format!("It fails because {}", "and then it fails again ".repeat(60));
        let found = prose_loop(&text).expect("a loop");
        assert!(found.at > 0 && found.at < text.len() / 2, "{}", found.at);
        assert!(text[..found.at].starts_with("It fails because"));
    }
}
