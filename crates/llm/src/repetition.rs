//! A reply that repeats itself, told while it streams.
//!
//! Small models fall into loops: the same character until the window ends,
//! the same line again and again, the same block of lines. Such a reply is
//! worth nothing, and waiting for it costs minutes on a CPU; continuing it
//! costs more. [`Repetition`] is fed the reply as it streams and says when
//! its end has become a run of one period (a character, a line, a block)
//! repeated past the point where real code or prose would ever be.
//!
//! What counts: the text's last `span` characters are periodic with a
//! period `p` of at most [`MAX_PERIOD`] characters, where `span` is at least
//! [`MIN_SPAN`] characters and at least [`MIN_REPEATS`] periods. Code that
//! repeats itself in the small (a table of similar asserts, a row of `=`)
//! differs somewhere within that span, so it is not stopped.

/// How the words for a loop begin ([`Loop::describe`]), so a reader of the
/// tape can tell a looping reply from another failure.
pub const LOOP_MESSAGE: &str = "the reply repeats itself";
/// The longest repeated unit looked for, in characters.
pub(crate) const MAX_PERIOD: usize = 400;
/// The shortest run of repetition that stops a reply, in characters.
pub(crate) const MIN_SPAN: usize = 600;
/// The fewest repeats of a long unit that stop a reply.
pub(crate) const MIN_REPEATS: usize = 4;
/// New characters between two checks (a check looks at every period).
const CHECK_EVERY: usize = 64;

/// Watches a streamed text for a loop.
#[derive(Debug, Default)]
pub struct Repetition {
    /// The text so far (only its tail is ever looked at).
    text: Vec<char>,
    since_check: usize,
    found: Option<Loop>,
}

/// A loop found at the end of a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loop {
    /// The repeated unit, as it ends the reply.
    pub(crate) unit: String,
    /// Its length in characters.
    pub(crate) period: usize,
    /// How many characters at the end repeat it.
    pub(crate) span: usize,
}

impl Loop {
    /// One line for the tape: what repeats, and how much of it came.
    pub fn describe(&self) -> String {
        // A unit with one line break is a line repeated, whichever of its
        // characters the reply stopped at: shown from its start.
        let (what, shown) = match self.period {
            1 => ("the same character".to_string(), self.unit.clone()),
            _ if self.unit.matches('\n').count() == 1 => {
                let (tail, head) = self.unit.split_once('\n').unwrap_or((&self.unit, ""));
                ("the same line".to_string(), format!("{head}{tail}"))
            }
            n => (format!("the same {n} characters"), self.unit.clone()),
        };
        let shown: String = shown.chars().take(40).collect();
        format!(
            "{LOOP_MESSAGE}: {what} ({shown:?}) over and over, {} characters of it",
            self.span
        )
    }
}

impl Repetition {
    pub fn new() -> Repetition {
        Repetition::default()
    }

    /// Take the next piece of the reply; the loop, once one is found.
    pub fn push(&mut self, piece: &str) -> Option<&Loop> {
        if self.found.is_some() {
            return self.found.as_ref();
        }
        let before = self.text.len();
        self.text.extend(piece.chars());
        self.since_check += self.text.len() - before;
        // Keep only what a check can look at.
        let keep = MAX_PERIOD * MIN_REPEATS + MIN_SPAN;
        if self.text.len() > 2 * keep {
            self.text.drain(..self.text.len() - keep);
        }
        if self.since_check >= CHECK_EVERY {
            self.since_check = 0;
            self.found = find_loop(&self.text);
        }
        self.found.as_ref()
    }

    /// Start again (the reply was restarted).
    pub fn reset(&mut self) {
        *self = Repetition::default();
    }
}

/// The shortest period whose run covers the required span at the end of `text`.
fn find_loop(text: &[char]) -> Option<Loop> {
    let n = text.len();
    for period in 1..=MAX_PERIOD.min(n / 2) {
        let need = MIN_SPAN.max(period * MIN_REPEATS);
        if need > n {
            continue;
        }
        // The run: how far back text[i] == text[i + period] holds from the end.
        let mut run = period;
        while run < n && text[n - 1 - run] == text[n - 1 - run + period] {
            run += 1;
        }
        if run >= need {
            let unit: String = text[n - period..].iter().collect();
            // Blank space repeated is not a loop worth stopping a reply for:
            // a server may pad, and a model may indent deeply once.
            if unit.trim().is_empty() {
                continue;
            }
            return Some(Loop {
                unit,
                period,
                span: run,
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(text: &str) -> Option<Loop> {
        let mut r = Repetition::new();
        let mut found = None;
        for chunk in text.as_bytes().chunks(7) {
            if let Some(l) = r.push(std::str::from_utf8(chunk).unwrap()) {
                found = Some(l.clone());
            }
        }
        found
    }

    #[test]
    fn a_character_a_line_and_a_block_repeated_are_loops() {
        let chars = format!("def f():\n    return '{}", "a".repeat(700));
        let l = feed(&chars).unwrap();
        assert_eq!(l.period, 1);
        assert!(
            l.describe().contains("the same character"),
            "{}",
            l.describe()
        );

        let lines = format!("def f():\n{}", "    x = x + 1\n".repeat(60));
        let l = feed(&lines).unwrap();
        assert_eq!(l.period, "    x = x + 1\n".len());
        assert!(l.describe().contains("the same line"), "{}", l.describe());

        let block = "def helper(x):\n    return x\n\n".repeat(30);
        assert!(feed(&block).is_some());
    }

    #[test]
    fn code_that_repeats_in_the_small_is_not_a_loop() {
        let asserts: String = (0..200)
            .map(|k| format!("assert add({k}, 1) == {}\n", k + 1))
            .collect();
        assert_eq!(feed(&asserts), None);
        let rule = format!("print('{}')\nprint('done')\n", "=".repeat(80));
        assert_eq!(feed(&rule), None);
        assert_eq!(feed(&" ".repeat(2000)), None);
    }
}
