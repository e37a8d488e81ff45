//! A reply that repeats a version already tried. A small model shown its
//! failing code in a repair often writes the same code again (SmolLM2-135M
//! did in 3 of 5 repairs on the easy set), and a run of it can only fail the
//! same way: such a reply is not kept. A repair that repeats is followed by
//! a fresh start at once, and a fresh start that repeats is asked again,
//! hotter, a bounded number of times. The attempt after a fresh start is a
//! repair again (of new code, in a new conversation).
//!
//! Two codes are the same when they differ only in their docstrings (any
//! triple-quoted string), comments, blank lines and spacing: a model that
//! re-wraps its docstring has written nothing new.

use codeloop_session::State;

/// The code as compared: no triple-quoted strings, no comments, each run of
/// whitespace one space, no blank lines. Quoted strings are kept as written
/// (a `#` inside one is no comment).
pub(crate) fn skeleton(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("\"\"\"") || rest.starts_with("'''") {
            let quote = &rest[..3];
            rest = match rest[3..].find(quote) {
                Some(end) => &rest[3 + end + 3..],
                None => "",
            };
            if !out.ends_with(' ') {
                out.push(' ');
            }
            continue;
        }
        match c {
            '#' => {
                rest = rest.find('\n').map_or("", |end| &rest[end..]);
            }
            '\'' | '"' => {
                let end = closing_quote(rest, c);
                out.push_str(&rest[..end]);
                rest = &rest[end..];
            }
            c if c.is_whitespace() => {
                if !out.ends_with(' ') && !out.is_empty() {
                    out.push(' ');
                }
                rest = &rest[c.len_utf8()..];
            }
            c => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out.trim().to_string()
}

/// The length of the one-line string literal `text` starts with (its
/// opening `quote` included), up to its closing quote or the line's end.
fn closing_quote(text: &str, quote: char) -> usize {
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match c {
            '\n' => return i,
            '\\' if !escaped => {
                escaped = true;
                continue;
            }
            c if c == quote && !escaped => return i + c.len_utf8(),
            _ => {}
        }
        escaped = false;
    }
    text.len()
}

/// The iteration of `name`'s earlier version that `code` repeats, if any.
pub(crate) fn repeats(s: &State, name: &str, code: &str) -> Option<u32> {
    let wanted = skeleton(code);
    if wanted.is_empty() {
        return None;
    }
    s.nodes
        .get(name)?
        .versions
        .iter()
        .find(|v| skeleton(&v.code) == wanted)
        .map(|v| v.iteration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewrapped_docstring_and_new_comments_are_the_same_code() {
        let first = "def reverse_words(sentence: str) -> str:\n    \"\"\"Return the words of the sentence in reverse order, separated by single\n    spaces.\n    \"\"\"\n    return sentence[::-1]\n";
        let again = "def reverse_words(sentence: str) -> str:\n    \"\"\"Return the words of the sentence in reverse order, separated by\n    single spaces.\n    \"\"\"\n\n    return sentence[::-1]  # reversed\n";
        assert_eq!(skeleton(first), skeleton(again));
        assert_eq!(
            skeleton(first),
            "def reverse_words(sentence: str) -> str: return sentence[::-1]"
        );
    }

    #[test]
    fn code_that_differs_is_not_the_same() {
        let a = "def f(s):\n    return s[::-1]\n";
        let b = "def f(s):\n    return ' '.join(s.split()[::-1])\n";
        assert_ne!(skeleton(a), skeleton(b));
    }

    #[test]
    fn a_hash_in_a_string_is_no_comment() {
        let a = "def f(s):\n    return s.count('#')\n";
        let b = "def f(s):\n    return s.count('#x')\n";
        assert_ne!(skeleton(a), skeleton(b));
        assert_eq!(skeleton(a), "def f(s): return s.count('#')");
        let escaped = "def f():\n    return 'it\\'s # here'\n";
        assert_eq!(skeleton(escaped), "def f(): return 'it\\'s # here'");
    }

    #[test]
    fn an_unclosed_docstring_ends_the_code() {
        assert_eq!(skeleton("def f():\n    \"\"\"never closed\n"), "def f():");
    }
}
