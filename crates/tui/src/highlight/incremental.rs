//! Highlighting that remembers: the last text highlighted, its styled lines,
//! and syntect's parse state every `CHECKPOINT_LINES` lines. A new version of
//! the text re-highlights from the checkpoint before its first changed line,
//! and stops as soon as the state at an old checkpoint (shifted by the lines
//! added or removed) is the state it had before: the rest is as it was.

use std::sync::Arc;

use ratatui::style::Style;
use syntect::highlighting::{HighlightIterator, HighlightState, Highlighter, Theme};
use syntect::parsing::{ParseState, ScopeStack, SyntaxReference, SyntaxSet};

use super::{MAX_LINE_BYTES, StyledLine, convert, trim_newline};

/// The parse state is kept before every this many lines.
/// Small, so an edit re-highlights few lines (from the checkpoint before
/// it to the first one after it where the state is as it was); a state is
/// a few small stacks, so 300 of them for 5,000 lines cost little.
pub(crate) const CHECKPOINT_LINES: usize = 16;
/// How often (in lines) a running job asks whether it was superseded.
const ASK_EVERY: usize = 256;

/// syntect's state before a line: enough to highlight from there.
#[derive(Debug, Clone, PartialEq)]
struct LineState {
    parse: ParseState,
    highlight: HighlightState,
}

/// A text highlighted before.
#[derive(Debug, Default)]
pub(crate) struct Document {
    /// What it was highlighted with (a change starts over).
    theme: String,
    /// The source lines, line endings included.
    lines: Vec<String>,
    styled: Vec<StyledLine>,
    /// (line, state before it), ascending, at most `CHECKPOINT_LINES` apart;
    /// the first is line 0 whenever the text is not empty.
    checkpoints: Vec<(usize, LineState)>,
}

/// What an update did, for the bench and the tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Work {
    /// Lines highlighted (the others were kept).
    pub(crate) highlighted: usize,
}

impl Document {
    /// The styled lines of the text last highlighted.
    pub(crate) fn lines(&self) -> &[StyledLine] {
        &self.styled
    }

    /// Bring the document to `code`. The first `first` lines (what the
    /// screen shows first) are handed to `early` as soon as they are done,
    /// when the update goes on below them. Returns None, leaving the document as it
    /// was, if `superseded` says a newer request is waiting.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn update(
        &mut self,
        syntaxes: &SyntaxSet,
        syntax: &SyntaxReference,
        theme_name: &str,
        theme: &Theme,
        code: &str,
        first: usize,
        mut early: impl FnMut(&[StyledLine]),
        superseded: impl Fn() -> bool,
    ) -> Option<Work> {
        let new: Vec<&str> = syntect::util::LinesWithEndings::from(code).collect();
        if self.theme != theme_name {
            *self = Document {
                theme: theme_name.to_string(),
                ..Document::default()
            };
        }
        let old_len = self.lines.len();
        let (prefix, suffix) = self.unchanged(&new);
        if prefix == old_len && old_len == new.len() {
            return Some(Work { highlighted: 0 });
        }
        let colours = Highlighter::new(theme);
        // Resume from the last checkpoint not after the first change.
        let (start, mut state, kept_cps) = self.resume_at(prefix, syntax, &colours);
        // Old checkpoints in the unchanged tail, as new line numbers.
        let tail_from_old = old_len - suffix;
        let shift = |old: usize| old + new.len() - old_len;
        let first_tail_cp = self
            .checkpoints
            .partition_point(|(at, _)| *at < tail_from_old);
        let mut next_tail_cp = first_tail_cp;

        let mut styled: Vec<StyledLine> = Vec::new();
        let mut cps: Vec<(usize, LineState)> = Vec::new();
        // Where the new text rejoins the old (new line number), if it does.
        let mut rejoined = None;
        for (i, line) in new.iter().enumerate().skip(start) {
            // Skip old tail checkpoints behind us.
            while next_tail_cp < self.checkpoints.len()
                && shift(self.checkpoints[next_tail_cp].0) < i
            {
                next_tail_cp += 1;
            }
            if i > start
                && let Some((at, old_state)) = self.checkpoints.get(next_tail_cp)
                && shift(*at) == i
                && *old_state == state
            {
                rejoined = Some((i, next_tail_cp));
                break;
            }
            if (i - start) % ASK_EVERY == 0 && i > start && superseded() {
                return None;
            }
            if i == start || i % CHECKPOINT_LINES == 0 {
                cps.push((i, state.clone()));
            }
            styled.push(highlight_line(syntaxes, &colours, &mut state, line));
            // The screen is done and the change goes on below it: send the
            // screen ahead of the rest.
            if start + styled.len() == first && first < new.len() {
                if start == 0 {
                    early(&styled);
                } else {
                    early(&[&self.styled[..start], styled.as_slice()].concat());
                }
            }
        }

        let end_new = rejoined.map_or(new.len(), |(i, _)| i);
        self.commit(&new, start, styled, cps, rejoined, kept_cps);
        Some(Work {
            highlighted: end_new - start,
        })
    }

    /// How many lines at the start and at the end of `new` are those of
    /// the text last highlighted (the end's never overlapping the start's).
    fn unchanged(&self, new: &[&str]) -> (usize, usize) {
        let prefix = self
            .lines
            .iter()
            .zip(new)
            .take_while(|(a, b)| a.as_str() == **b)
            .count();
        let room = self.lines.len().min(new.len()) - prefix;
        let suffix = self
            .lines
            .iter()
            .rev()
            .zip(new.iter().rev())
            .take(room)
            .take_while(|(a, b)| a.as_str() == **b)
            .count();
        (prefix, suffix)
    }

    /// Where highlighting resumes for a change at line `prefix`: the last
    /// checkpoint not after it (or the start), its state, and how many
    /// checkpoints before it are kept.
    fn resume_at(
        &self,
        prefix: usize,
        syntax: &SyntaxReference,
        colours: &Highlighter,
    ) -> (usize, LineState, usize) {
        let kept_cps = self.checkpoints.partition_point(|(at, _)| *at <= prefix);
        let (start, state) = match kept_cps.checked_sub(1) {
            Some(i) => (self.checkpoints[i].0, self.checkpoints[i].1.clone()),
            None => (
                0,
                LineState {
                    parse: ParseState::new(syntax),
                    highlight: HighlightState::new(colours, ScopeStack::new()),
                },
            ),
        };
        (start, state, kept_cps.saturating_sub(1))
    }

    /// Splice the newly highlighted middle (from `start` to where it
    /// `rejoined` the old tail, or the end) into the old lines and
    /// checkpoints; the old tail's checkpoints move to their new lines.
    fn commit(
        &mut self,
        new: &[&str],
        start: usize,
        styled: Vec<StyledLine>,
        cps: Vec<(usize, LineState)>,
        rejoined: Option<(usize, usize)>,
        kept_cps: usize,
    ) {
        let old_len = self.lines.len();
        let shift = |old: usize| old + new.len() - old_len;
        let (end_new, tail_cps) = match rejoined {
            Some((i, cp)) => (i, cp),
            None => (new.len(), self.checkpoints.len()),
        };
        let end_old = end_new + old_len - new.len();
        self.styled.splice(start..end_old, styled);
        let shifted: Vec<(usize, LineState)> = self
            .checkpoints
            .drain(tail_cps..)
            .map(|(at, s)| (shift(at), s))
            .collect();
        self.checkpoints.truncate(kept_cps);
        self.checkpoints.extend(cps);
        self.checkpoints.extend(shifted);
        // Lines outside start..end_new are the old ones (the unchanged
        // prefix and tail): only the middle is copied.
        self.lines.splice(
            start..end_old,
            new[start..end_new].iter().map(|l| l.to_string()),
        );
    }
}

/// Highlight one line from `state`, moving it past the line.
fn highlight_line(
    syntaxes: &SyntaxSet,
    colours: &Highlighter,
    state: &mut LineState,
    line: &str,
) -> StyledLine {
    if line.len() > MAX_LINE_BYTES {
        return Arc::new([(Style::new(), trim_newline(line).to_string())]);
    }
    let Ok(ops) = state.parse.parse_line(line, syntaxes) else {
        return Arc::new([(Style::new(), trim_newline(line).to_string())]);
    };
    HighlightIterator::new(&mut state.highlight, &ops, line, colours)
        .map(|(s, t)| (convert(s), trim_newline(t).to_string()))
        .filter(|(_, t)| !t.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use syntect::highlighting::ThemeSet;

    use super::*;

    /// A small fixed-seed generator (xorshift), so the test is the same every run.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self, below: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % below as u64) as usize
        }
    }

    /// Lines that open and close strings, docstrings, brackets and comments,
    /// so an edit can change the state far below it (or not at all).
    const PIECES: &[&str] = &[
        "def f(x):",
        "    return x + 1",
        "\"\"\"",
        "    '''docstring",
        "s = \"unterminated",
        "# a comment \"\"\"",
        "values = [1, 2,",
        "    3]",
        "class A(B):",
        "    x = f'{y!r} and {z}'",
        "",
        "if a < b: pass",
        "    total += v * 3",
    ];

    fn text(lines: &[String]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    fn whole(syntaxes: &SyntaxSet, theme: &Theme, code: &str) -> Vec<StyledLine> {
        let syntax = syntaxes.find_syntax_by_extension("py").unwrap();
        let mut fresh = Document::default();
        fresh
            .update(syntaxes, syntax, "t", theme, code, 0, |_| {}, || false)
            .unwrap();
        fresh.styled.clone()
    }

    #[test]
    fn random_edits_give_the_same_lines_as_a_whole_highlight() {
        let syntaxes = SyntaxSet::load_defaults_newlines();
        let themes = ThemeSet::load_defaults();
        let theme = &themes.themes["base16-ocean.dark"];
        let syntax = syntaxes.find_syntax_by_extension("py").unwrap();
        let mut rng = Rng(0x5eed_1234_abcd_0001);
        let mut lines: Vec<String> = (0..700)
            .map(|_| PIECES[rng.next(PIECES.len())].to_string())
            .collect();
        let mut doc = Document::default();
        let mut partial_work = 0;
        for round in 0..60 {
            // Insert, delete or replace a few lines somewhere.
            for _ in 0..1 + rng.next(3) {
                let at = rng.next(lines.len() + 1);
                match rng.next(3) {
                    0 => lines.insert(at, PIECES[rng.next(PIECES.len())].to_string()),
                    1 if at < lines.len() => {
                        let n = (1 + rng.next(30)).min(lines.len() - at);
                        lines.drain(at..at + n);
                    }
                    _ if at < lines.len() => lines[at] = PIECES[rng.next(PIECES.len())].into(),
                    _ => lines.push(PIECES[rng.next(PIECES.len())].into()),
                }
            }
            let code = text(&lines);
            let work = doc
                .update(&syntaxes, syntax, "t", theme, &code, 0, |_| {}, || false)
                .unwrap();
            if work.highlighted < lines.len() {
                partial_work += 1;
            }
            assert_eq!(doc.styled, whole(&syntaxes, theme, &code), "round {round}");
            assert_eq!(doc.styled.len(), lines.len());
            // Checkpoints stay in order, at most CHECKPOINT_LINES apart.
            let at: Vec<usize> = doc.checkpoints.iter().map(|(a, _)| *a).collect();
            assert_eq!(at.first(), Some(&0), "round {round}: {} lines", lines.len());
            assert!(
                at.windows(2)
                    .all(|w| w[0] < w[1] && w[1] - w[0] <= CHECKPOINT_LINES)
            );
        }
        // Most edits were done without re-highlighting everything.
        assert!(
            partial_work > 40,
            "only {partial_work} of 60 edits were incremental"
        );
    }

    #[test]
    fn an_edit_in_a_long_file_re_highlights_a_few_lines() {
        let syntaxes = SyntaxSet::load_defaults_newlines();
        let themes = ThemeSet::load_defaults();
        let theme = &themes.themes["base16-ocean.dark"];
        let syntax = syntaxes.find_syntax_by_extension("py").unwrap();
        let mut lines: Vec<String> = (0..5000)
            .map(|i| PIECES[[0, 1, 8, 9, 11, 12][i % 6]].to_string())
            .collect();
        let mut doc = Document::default();
        let mut early = 0;
        let first = doc
            .update(
                &syntaxes,
                syntax,
                "t",
                theme,
                &text(&lines),
                100,
                |l| early = l.len(),
                || false,
            )
            .unwrap();
        assert_eq!(first.highlighted, 5000);
        assert_eq!(early, 100, "the first screen is sent ahead");
        lines[2500] = "    return x + 2".into();
        let code = text(&lines);
        let work = doc
            .update(&syntaxes, syntax, "t", theme, &code, 100, |_| {}, || false)
            .unwrap();
        assert!(work.highlighted <= 2 * CHECKPOINT_LINES, "{work:?}");
        assert_eq!(doc.styled, whole(&syntaxes, theme, &code));
        // Opening a docstring changes everything below it.
        lines[2500] = "\"\"\"".into();
        let code = text(&lines);
        let work = doc
            .update(&syntaxes, syntax, "t", theme, &code, 100, |_| {}, || false)
            .unwrap();
        assert!(work.highlighted > 2000, "{work:?}");
        assert_eq!(doc.styled, whole(&syntaxes, theme, &code));
    }

    #[test]
    fn an_edit_that_changes_everything_below_it_sends_the_screen_first() {
        let syntaxes = SyntaxSet::load_defaults_newlines();
        let themes = ThemeSet::load_defaults();
        let theme = &themes.themes["base16-ocean.dark"];
        let syntax = syntaxes.find_syntax_by_extension("py").unwrap();
        let mut lines: Vec<String> = (0..3000).map(|i| PIECES[i % 2].to_string()).collect();
        let mut doc = Document::default();
        doc.update(
            &syntaxes,
            syntax,
            "t",
            theme,
            &text(&lines),
            100,
            |_| {},
            || false,
        )
        .unwrap();
        // Opening a docstring on line 40 changes every line below it.
        lines[40] = "\"\"\"".into();
        let code = text(&lines);
        let mut early: Vec<StyledLine> = Vec::new();
        let work = doc
            .update(
                &syntaxes,
                syntax,
                "t",
                theme,
                &code,
                100,
                |l| early = l.to_vec(),
                || false,
            )
            .unwrap();
        assert!(work.highlighted > 2900, "{work:?}");
        let whole = whole(&syntaxes, theme, &code);
        assert_eq!(early, whole[..100], "the screen, before the rest");
        assert_eq!(doc.styled, whole);
        // An edit that rejoins the old text above the screen's end sends nothing early.
        lines[40] = "    return x + 2".into();
        doc.update(
            &syntaxes,
            syntax,
            "t",
            theme,
            &text(&lines),
            100,
            |_| {},
            || false,
        )
        .unwrap();
        lines[41] = "    return x + 3".into();
        let mut sent = false;
        let work = doc
            .update(
                &syntaxes,
                syntax,
                "t",
                theme,
                &text(&lines),
                100,
                |_| sent = true,
                || false,
            )
            .unwrap();
        assert!(work.highlighted <= 2 * CHECKPOINT_LINES, "{work:?}");
        assert!(!sent);
    }

    #[test]
    fn a_superseded_update_leaves_the_document_as_it_was() {
        let syntaxes = SyntaxSet::load_defaults_newlines();
        let themes = ThemeSet::load_defaults();
        let theme = &themes.themes["base16-ocean.dark"];
        let syntax = syntaxes.find_syntax_by_extension("py").unwrap();
        let lines: Vec<String> = (0..1000).map(|i| PIECES[i % PIECES.len()].into()).collect();
        let mut doc = Document::default();
        let code = text(&lines);
        doc.update(&syntaxes, syntax, "t", theme, &code, 0, |_| {}, || false)
            .unwrap();
        let before = doc.styled.clone();
        let other = "x = 1\n".repeat(1000);
        let gave_up = doc.update(&syntaxes, syntax, "t", theme, &other, 0, |_| {}, || true);
        assert!(gave_up.is_none());
        assert_eq!(doc.styled, before);
        let work = doc
            .update(&syntaxes, syntax, "t", theme, &code, 0, |_| {}, || false)
            .unwrap();
        assert_eq!(work.highlighted, 0, "the old text is still known");
    }
}
