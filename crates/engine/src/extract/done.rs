//! When a reply's job is done: a code reply once the block that holds the
//! wanted function has closed, or once that function is whole and the code
//! goes on with something it does not need (an example call, another
//! function, a `__main__` block); a reply read as data once its JSON value
//! has closed. What a small model writes after that (example calls, a
//! second try, lines counting on to its token limit) is never used, and on
//! a CPU it costs seconds a line: the call is stopped there, and the reply
//! ends where its job did (`Done::end`).

use super::code;
use super::fences::{fenced_blocks, is_python};

/// What a reply is asked for, as far as its end goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Code: done once a Python block that defines `want` has closed (any
    /// Python block without `want`), or, when none defines it, once two
    /// Python blocks have closed.
    Code { want: Option<String> },
    /// A JSON value (a plan, a verdict, cases): done once the first object
    /// or array has closed.
    Data,
}

/// Watches a streamed reply for the end of its job.
#[derive(Debug)]
pub struct Done {
    answer: Answer,
    text: String,
    /// How much of `text` was looked at: a check runs at each new line.
    seen: usize,
    /// Where the answer ended, once it has.
    end: Option<usize>,
}

impl Done {
    pub fn new(answer: Answer) -> Done {
        Done {
            answer,
            text: String::new(),
            seen: 0,
            end: None,
        }
    }

    /// Where the answer ended (a byte offset into what was pushed), once
    /// its job is done: past a closing fence or a JSON value, or where the
    /// first line it did not need began.
    pub fn end(&self) -> Option<usize> {
        self.end
    }

    /// Take the next piece of the answer (reasoning apart); true once the
    /// reply's job is done.
    pub fn push(&mut self, piece: &str) -> bool {
        if self.end.is_some() {
            return true;
        }
        self.text.push_str(piece);
        self.end = match &self.answer {
            Answer::Code { want } => {
                // A fence closes, and a line begins, at a line's end.
                let Some(end) = self.text.rfind('\n') else {
                    return false;
                };
                if end < self.seen {
                    return false;
                }
                self.seen = end + 1;
                code_done(&self.text[..=end], want.as_deref())
            }
            Answer::Data => json_closed(&self.text),
        };
        self.end.is_some()
    }

    /// Start again (the reply was restarted).
    pub fn reset(&mut self) {
        *self = Done::new(self.answer.clone());
    }
}

/// Where a code answer's job is done in `text` (whole lines), if it is.
fn code_done(text: &str, want: Option<&str>) -> Option<usize> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let blocks = fenced_blocks(text);
    let python: Vec<_> = blocks
        .iter()
        .filter(|b| is_python(&b.lang) && !b.body.trim().is_empty())
        .collect();
    let past = |line: usize| lines[..line.min(lines.len())].iter().map(|l| l.len()).sum();
    let closed: Vec<_> = python.iter().filter(|b| b.closed).collect();
    let done_at = match want {
        None => closed.first(),
        Some(name) => closed
            .iter()
            .find(|b| code::block(&b.body).binds(name))
            .or_else(|| closed.get(1)),
    };
    if let Some(b) = done_at {
        return Some(past(b.lines.1));
    }
    // The block still open: done once the wanted function is whole and a
    // top-level line it does not need has begun.
    let name = want?;
    let open = python.iter().find(|b| !b.closed)?;
    // A body's offsets are the text's only where the fence is not indented.
    if !lines[open.lines.0].starts_with(['`', '~']) {
        return None;
    }
    let body_start = past(open.lines.0 + 1);
    code::whole_then_more(&open.body, name).map(|at| body_start + at)
}

/// Whether the first JSON object or array of `text` has closed (strings,
/// escapes and brackets inside them followed).
fn json_closed(text: &str) -> Option<usize> {
    let start = text.find(['{', '['])?;
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text[start..].char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(start + i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How much of `text` was pushed when the job was done, and where
    /// the answer ends.
    fn fed(answer: Answer, text: &str) -> Option<usize> {
        fed_end(answer, text).map(|(at, _)| at)
    }

    fn fed_end(answer: Answer, text: &str) -> Option<(usize, usize)> {
        let mut done = Done::new(answer);
        let mut at = 0;
        for piece in text.as_bytes().chunks(5) {
            at += piece.len();
            if done.push(std::str::from_utf8(piece).unwrap()) {
                return Some((at, done.end().unwrap()));
            }
        }
        None
    }

    #[test]
    fn a_function_whole_then_followed_by_what_it_does_not_need_is_done() {
        // SmolLM2 from a prefilled head: the function, then more of its own.
        let reply = "```python\ndef is_palindrome(s: str) -> bool:\n     \"\"\"Doc.\"\"\"\n     return s == s[::-1]\n\ndef is_palindrome_reverse(s):\n    return 1\n";
        let (_, end) = fed_end(code("is_palindrome"), reply).unwrap();
        assert_eq!(
            &reply[..end],
            "```python\ndef is_palindrome(s: str) -> bool:\n     \"\"\"Doc.\"\"\"\n     return s == s[::-1]\n"
        );
        // A helper it calls is kept, then an example call ends it.
        let reply =
            "```python\ndef f(x):\n    return g(x)\n\ndef g(x):\n    return x + 1\n\nprint(f(2))\n";
        let (_, end) = fed_end(code("f"), reply).unwrap();
        assert!(
            reply[..end].ends_with("return x + 1\n"),
            "{:?}",
            &reply[..end]
        );
        // A body not written yet, and a function not named as asked: on.
        assert_eq!(fed(code("f"), "```python\ndef f(x):\nprint(1)\n"), None);
        assert_eq!(
            fed(code("f"), "```python\ndef g(x):\n    return 1\nprint(1)\n"),
            None
        );
    }

    fn code(want: &str) -> Answer {
        Answer::Code {
            want: Some(want.into()),
        }
    }

    #[test]
    fn a_code_reply_is_done_when_the_block_with_its_function_closes() {
        // SmolLM2's repair: the block closed, then lines counting on.
        let reply = "The bug is the loop.\n```python\ndef max_list(xs):\n    return max(xs)\n```\nt34 = max_list([1])\nt35 = max_list([2])\n";
        // Stopped within the piece (5 bytes here) that brought the fence's end.
        let at = fed(code("max_list"), reply).unwrap();
        let fence_end = reply.find("```\nt34").unwrap() + 4;
        assert!(at >= fence_end && at < fence_end + 5, "{}", &reply[..at]);
        // A helper's block first: not done until the wanted one closes.
        let two = "```python\ndef helper():\n    return 1\n```\nand\n```python\ndef f():\n    return helper()\n```\nmore";
        let at = fed(code("f"), two).unwrap();
        assert!(
            two[..at].contains("def f") && !two[..at].contains("more"),
            "{}",
            &two[..at]
        );
        // A reply that never closes its block is never stopped.
        assert_eq!(fed(code("f"), "```python\ndef f():\n    return 1\n"), None);
        // Other languages, and a block with no wanted function, alone.
        assert_eq!(
            fed(
                code("f"),
                "```json\n{}\n```\n```python\ndef g():\n    pass\n```\n"
            ),
            None
        );
        // Tests (no wanted name): the first Python block.
        assert!(
            fed(
                Answer::Code { want: None },
                "```python\ndef test_a():\n    assert 1\n```\nExplanation"
            )
            .is_some()
        );
    }

    #[test]
    fn a_data_reply_is_done_when_its_json_closes() {
        let reply = "```json\n{\"cases\": [{\"args\": \"'}'\", \"expected\": \"\\\"]\\\"\"}]}\n```\nThat is all.";
        let at = fed(Answer::Data, reply).unwrap();
        assert!(
            reply[..at].contains("]}") && !reply[..at].contains("That"),
            "{}",
            &reply[..at]
        );
        assert_eq!(fed(Answer::Data, "{\"a\": [1, 2"), None);
    }
}
