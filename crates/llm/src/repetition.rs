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
//!
//! A loop need not repeat exactly: a small model counts on (`t34 =
//! max_list([34, 35])`, `t35 = max_list([35, 36])`, ...) until its limit.
//! So a run of [`NEAR_LINES`] lines in a row that are the same but for
//! their numbers is a loop too: more than a table of cases or a literal's
//! rows ever needs, far fewer than a reply that counts to its limit.
//! Within one line too (SmolLM2 in a docstring: `or 5 if it is even, or 6
//! if it is odd, ...` for minutes): the text with each number as `#` is
//! watched as the text is, and a run of one period there, within a line
//! and with words in it, is a loop. A list of bare numbers is data, not a
//! loop, unless its numbers count on one by one (`9 | 10 | 11 | ...` to 418,
//! SmolLM2 in a repair's docstring until its limit): no one writes out
//! `range` a hundred numbers long. And a block of lines repeated the same
//! but for its numbers (`if a == 2 and b == 3:` / `return 1`, SmolLM2's
//! greatest common divisor, to its limit three times over) over more than
//! [`NEAR_LINES`] lines is a loop as a single line is.

mod prose;

pub use prose::{ProseLoop, prose_loop};

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
/// Lines in a row, the same but for their numbers, that make a loop.
pub(crate) const NEAR_LINES: usize = 32;

/// Watches a streamed text for a loop.
#[derive(Debug, Default)]
pub struct Repetition {
    /// The text so far (only its tail is ever looked at).
    text: Vec<char>,
    since_check: usize,
    found: Option<Loop>,
    /// The lines so far, as shapes (the line not ended yet apart).
    lines: Shapes,
    /// The text's tail with each run of digits as one `#`.
    shaped: Vec<char>,
    in_number: bool,
}

/// The run of lines at the end of a text that share a shape: the same but
/// for their numbers.
#[derive(Debug, Default)]
struct Shapes {
    /// The line not ended yet.
    partial: String,
    /// The shape of the run, its first line, how many lines and characters.
    shape: String,
    first: String,
    run: usize,
    chars: usize,
    /// The run's lines are not all the very same line.
    varied: bool,
    /// The last `NEAR_LINES` lines, as shapes without their indent, and
    /// their characters: a window that holds a handful of shapes only is
    /// a loop whose lines vary in their indent or alternate.
    recent: std::collections::VecDeque<(String, usize)>,
}

impl Shapes {
    /// Take the next piece; the loop, once the run is long enough.
    fn push(&mut self, piece: &str) -> Option<Loop> {
        let mut found = None;
        for (k, part) in piece.split('\n').enumerate() {
            if k > 0 {
                let line = std::mem::take(&mut self.partial);
                found = found.or_else(|| self.line(line));
            }
            // A line that never ends is the exact check's to catch.
            if self.partial.len() < MAX_PERIOD {
                self.partial.push_str(part);
            }
        }
        found
    }

    fn line(&mut self, line: String) -> Option<Loop> {
        let shape = shape_of(&line);
        if let Some(found) = self.few_shapes(&shape, &line) {
            return Some(found);
        }
        if shape.trim().is_empty() || !shape.contains('#') {
            self.run = 0;
            return None;
        }
        if self.run > 0 && shape == self.shape {
            self.run += 1;
            self.chars += line.chars().count() + 1;
            self.varied |= line != self.first;
        } else {
            self.shape = shape;
            self.first = line.clone();
            self.run = 1;
            self.chars = line.chars().count() + 1;
            self.varied = false;
        }
        (self.run >= NEAR_LINES && self.varied).then(|| Loop {
            unit: format!("{}\n", self.first),
            period: 0,
            span: self.chars,
            counting: false,
            drifting: false,
        })
    }
}

impl Shapes {
    /// The last `NEAR_LINES` lines (blank ones aside) hold at most
    /// `FEW_SHAPES` shapes, indent aside, at more indents than that: SmolLM2 wrote `if isinstance(v,
    /// (int, float):` and `elif isinstance(...)` at drifting indents to its
    /// limit, 10,515 characters. Code that many lines long says more.
    fn few_shapes(&mut self, shape: &str, line: &str) -> Option<Loop> {
        const FEW_SHAPES: usize = 3;
        if shape.trim().is_empty() {
            return None;
        }
        self.recent
            .push_back((shape.to_string(), line.chars().count() + 1));
        if self.recent.len() > NEAR_LINES {
            self.recent.pop_front();
        }
        if self.recent.len() < NEAR_LINES {
            return None;
        }
        let distinct = |strip: bool| {
            let mut kinds: Vec<&str> = self
                .recent
                .iter()
                .map(|(s, _)| if strip { s.trim() } else { s.as_str() })
                .collect();
            kinds.sort_unstable();
            kinds.dedup();
            kinds.len()
        };
        // A few shapes with their indents too are the other checks' to
        // catch (a line repeated, a block the same but for its numbers):
        // this one is for a few shapes at many indents.
        (distinct(true) <= FEW_SHAPES && distinct(false) > FEW_SHAPES).then(|| Loop {
            unit: format!("{}\n", line.trim()),
            period: 0,
            span: self.recent.iter().map(|(_, n)| n).sum(),
            counting: false,
            drifting: true,
        })
    }
}

/// A line with each run of digits as `#`.
fn shape_of(line: &str) -> String {
    let mut shape = String::with_capacity(line.len());
    let mut in_number = false;
    for c in line.trim_end().chars() {
        if c.is_ascii_digit() {
            if !in_number {
                shape.push('#');
            }
            in_number = true;
        } else {
            shape.push(c);
            in_number = false;
        }
    }
    shape
}

/// A loop found at the end of a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loop {
    /// The repeated unit, as it ends the reply (for lines the same but for
    /// their numbers: the first of them).
    pub(crate) unit: String,
    /// Its length in characters; 0 for lines the same but for their numbers.
    pub(crate) period: usize,
    /// Found with each number as `#`: the same words, counting on.
    pub(crate) counting: bool,
    /// Found as a few shapes of line at drifting indents.
    pub(crate) drifting: bool,
    /// How many characters at the end repeat it.
    pub(crate) span: usize,
}

impl Loop {
    /// One line for the tape: what repeats, and how much of it came.
    pub fn describe(&self) -> String {
        // A unit with one line break is a line repeated, whichever of its
        // characters the reply stopped at: shown from its start.
        let (what, shown) = match self.period {
            _ if self.drifting => (
                "a few lines over and over at drifting indents".to_string(),
                self.unit.trim_end().to_string(),
            ),
            _ if self.counting => (
                "the same words with their numbers counting on".to_string(),
                self.unit.clone(),
            ),
            0 => (
                "the same line with its numbers counting on".to_string(),
                self.unit.trim_end().to_string(),
            ),
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
        if let Some(near) = self.lines.push(piece) {
            self.found = Some(near);
            return self.found.as_ref();
        }
        let before = self.text.len();
        self.text.extend(piece.chars());
        self.since_check += self.text.len() - before;
        for c in piece.chars() {
            let digit = c.is_ascii_digit();
            if !(digit && self.in_number) {
                self.shaped.push(if digit { '#' } else { c });
            }
            self.in_number = digit;
        }
        // Keep only what a check can look at.
        let keep = MAX_PERIOD * MIN_REPEATS + MIN_SPAN;
        for tail in [&mut self.text, &mut self.shaped] {
            if tail.len() > 2 * keep {
                tail.drain(..tail.len() - keep);
            }
        }
        if self.since_check >= CHECK_EVERY {
            self.since_check = 0;
            self.found = find_loop(&self.text).or_else(|| {
                find_loop(&self.shaped)
                    // Within a line, words, or numbers counting on: not a
                    // list of data. Over lines (one line is `Shapes`' to
                    // count), a block of lines the same but for their
                    // numbers, over more lines than a table ever needs.
                    .filter(|l| {
                        if l.unit.contains('\n') {
                            l.unit.matches('\n').count() > 1
                                && lines_in_tail(&self.shaped, l.span) >= NEAR_LINES
                        } else {
                            l.unit.chars().any(char::is_alphabetic) || counts_on(&self.text)
                        }
                    })
                    .map(|l| Loop {
                        counting: true,
                        ..l
                    })
            });
        }
        self.found.as_ref()
    }

    /// Start again (the reply was restarted).
    pub fn reset(&mut self) {
        *self = Repetition::default();
    }
}

/// The line breaks in the last `span` characters of `text`.
fn lines_in_tail(text: &[char], span: usize) -> usize {
    text[text.len().saturating_sub(span)..]
        .iter()
        .filter(|c| **c == '\n')
        .count()
}

/// The numbers at the end of `text` count on one by one: of the last
/// `COUNTED` numbers in its last `MIN_SPAN` characters, nearly all are the
/// one before plus one (a model that counts may skip one now and then).
fn counts_on(text: &[char]) -> bool {
    const COUNTED: usize = 40;
    let tail: String = text[text.len().saturating_sub(MIN_SPAN)..].iter().collect();
    let numbers: Vec<u64> = tail
        .split(|c: char| !c.is_ascii_digit())
        .filter(|n| !n.is_empty())
        .filter_map(|n| n.parse().ok())
        .collect();
    // The first may be cut by the window: leave it out.
    let numbers = numbers.get(1..).unwrap_or_default();
    if numbers.len() < COUNTED {
        return false;
    }
    let last = &numbers[numbers.len() - COUNTED..];
    let steps = last.windows(2).filter(|w| w[1] == w[0] + 1).count();
    steps * 10 >= (COUNTED - 1) * 9
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
                counting: false,
                drifting: false,
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
    fn lines_the_same_but_for_their_numbers_are_a_loop_past_a_table() {
        // What SmolLM2 wrote after its code block had closed.
        let counting: String = (1..200)
            .map(|k| format!("t{k} = max_list([{k}, {}, {}])\n", k + 1, k + 2))
            .collect();
        let l = feed(&format!("```python\ndef f():\n    pass\n```\n{counting}")).unwrap();
        assert!(
            l.describe().contains("numbers counting on") && l.describe().contains("t1 = max_list"),
            "{}",
            l.describe()
        );
        assert!(l.span >= NEAR_LINES * 10, "{l:?}");
        // A table of cases, a literal's rows: far fewer lines.
        let asserts: String = (0..NEAR_LINES - 1)
            .map(|k| format!("assert add({k}, 1) == {}\n", k + 1))
            .collect();
        assert_eq!(feed(&asserts), None);
        let rows: String = (0..26)
            .map(|k| format!("    [{k}, {}, {}],\n", k * 7, k * k))
            .collect();
        assert_eq!(feed(&format!("TABLE = [\n{rows}]\n")), None);
    }

    #[test]
    fn words_that_repeat_with_their_numbers_counting_on_in_one_line_are_a_loop() {
        // What SmolLM2 wrote in a docstring at temperature 0.8, for minutes.
        let counting: String = (1..300)
            .map(|k| {
                format!(
                    "or {k} if it is {}, ",
                    if k % 2 == 0 { "even" } else { "odd" }
                )
            })
            .collect();
        let l = feed(&format!("def is_even(n):\n    \"\"\"Is n even, {counting}")).unwrap();
        assert!(l.counting, "{l:?}");
        assert!(
            l.describe()
                .contains("words with their numbers counting on"),
            "{}",
            l.describe()
        );
        // A list of bare numbers is data, not a loop.
        let primes: Vec<u32> = (2..2000u32)
            .filter(|n| (2..*n).take_while(|d| d * d <= *n).all(|d| n % d != 0))
            .collect();
        let numbers: String = primes.iter().map(|k| format!("{k}, ")).collect();
        assert!(numbers.len() > 1000);
        assert_eq!(feed(&format!("PRIMES = [{numbers}]\n")), None);
        let squares: String = (1..300).map(|k| format!("{}, ", k * k)).collect();
        assert_eq!(feed(&format!("SQUARES = [{squares}]\n")), None);
    }

    #[test]
    fn bare_numbers_counting_on_one_by_one_are_a_loop() {
        // What SmolLM2 wrote in a repair's docstring until its limit, twice
        // continued (the easy set's count_vowels): 3,508 characters.
        let counting: String = (10..419)
            .filter(|k| *k != 99 && *k != 398 && *k != 399)
            .map(|k| format!("{k} | "))
            .collect();
        let reply = format!(
            "```python\ndef count_vowels(s: str) -> int:\n    \"\"\"Return how many vowels.\n  {} {counting}",
            "9 | ".repeat(7)
        );
        let l = feed(&reply).unwrap();
        assert!(l.counting, "{l:?}");
        let text = l.describe();
        assert!(text.contains("numbers counting on"), "{text}");
        // Stopped long before the end.
        assert!(l.span < 1200, "{l:?}");
    }

    #[test]
    fn a_block_of_lines_the_same_but_for_their_numbers_is_a_loop_past_a_table() {
        // SmolLM2's greatest_common_divisor (HumanEval/13), to its limit
        // and twice continued.
        let pairs: String = (0..60)
            .map(|k| {
                format!(
                    "    if a == {} and b == {}:\n        return {}\n",
                    k / 3,
                    k % 7,
                    k % 2
                )
            })
            .collect();
        let reply =
            format!("```python\ndef greatest_common_divisor(a: int, b: int) -> int:\n{pairs}");
        let l = feed(&reply).unwrap();
        assert!(l.counting, "{l:?}");
        assert!(l.span < 1500, "{l:?}");
        // Pairs of lines in a test, as many as a table of cases holds.
        let table: String = (0..NEAR_LINES / 2 - 1)
            .map(|k| format!("    with raises(ValueError):\n        f({k})\n"))
            .collect();
        assert_eq!(feed(&format!("def test_bad():\n{table}")), None);
    }

    #[test]
    fn lines_of_a_few_shapes_at_drifting_indents_are_a_loop() {
        // SmolLM2's parse_music (HumanEval/17), a fresh start to its limit.
        let drift: String = (0..80)
            .map(|k| {
                let kw = if k % 3 == 0 { "if" } else { "elif" };
                format!(
                    "{}{kw} isinstance(v, (int, float):\n",
                    " ".repeat(40 + (k * 7) % 24)
                )
            })
            .collect();
        let l = feed(&format!("```python\ndef parse_music(s):\n{drift}")).unwrap();
        assert!(l.drifting && l.span < 3000, "{l:?}");
        assert!(
            l.describe().contains("at drifting indents"),
            "{}",
            l.describe()
        );
        // A function of 40 lines says more than three things, at few indents.
        let words = [
            "alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa",
        ];
        let body: String = (0..40)
            .map(|k| {
                let w = words[k % 10];
                match k % 4 {
                    0 => format!("    {w} = values.get('{w}')\n"),
                    1 => format!("    if {w} is None:\n"),
                    2 => format!("        {w} = default_{w}()\n"),
                    _ => format!("    seen['{w}'] = {w}\n"),
                }
            })
            .collect();
        assert_eq!(feed(&format!("def f(values, limit):\n{body}")), None);
    }

    #[test]
    fn code_that_repeats_in_the_small_is_not_a_loop() {
        let rule = format!("print('{}')\nprint('done')\n", "=".repeat(80));
        assert_eq!(feed(&rule), None);
        assert_eq!(feed(&" ".repeat(2000)), None);
    }
}
