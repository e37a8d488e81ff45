//! The lines the code pane draws: numbered code with marks beside lines
//! (the failing line today; runtime values or notes can be more marks), the
//! streaming reply, a diff, and the localized error under the code.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::highlight::StyledLine;
use crate::sanitize::sanitize;
use crate::theme::Theme;
use codeloop_protocol::Location;
use codeloop_protocol::coverage::LineRun;

/// A note drawn beside one line of code.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Mark {
    /// 0-based line of the text shown.
    pub(crate) line: usize,
    /// The gutter sign.
    pub(crate) sign: &'static str,
    /// Drawn after the code.
    pub(crate) note: String,
    /// The note's style; `emphasis` also colours the whole line.
    pub(crate) style: Style,
    pub(crate) emphasis: bool,
}

impl Mark {
    /// The failing line, with its error beside it.
    pub(crate) fn failure(t: &Theme, line: usize, e: &Location) -> Mark {
        Mark {
            line,
            sign: "▶",
            note: format!("  ◀ {}: {}", e.error_type, first_line(&e.message)),
            style: t.error,
            emphasis: true,
        }
    }
}

/// Numbered lines, highlighted when the worker has done them, marks beside
/// them. Only the rows from `first` that fit `height` are built: a long file
/// costs no more per frame than a short one.
pub(crate) fn numbered<'a>(
    t: &Theme,
    code: &str,
    highlighted: Option<&[StyledLine]>,
    marks: &[Mark],
    first: usize,
    height: usize,
) -> Vec<Line<'a>> {
    numbered_covered(t, code, highlighted, marks, first, height, None)
}

/// `numbered`, with the coverage of the failing path in the gutter after
/// each line's number (`super::code_coverage`): one more column, whose
/// glyph says whether the line ran.
pub(crate) fn numbered_covered<'a>(
    t: &Theme,
    code: &str,
    highlighted: Option<&[StyledLine]>,
    marks: &[Mark],
    first: usize,
    height: usize,
    coverage: Option<&[LineRun]>,
) -> Vec<Line<'a>> {
    let count = code.lines().count().max(1);
    let width = count.to_string().len();
    let first = first.min(count.saturating_sub(1));
    let visible = first..first + height;
    code.lines()
        .enumerate()
        .map(|(i, text)| {
            if !visible.contains(&i) {
                return Line::default();
            }
            // An emphasized mark (the failure) gives the sign, else the
            // first; every mark adds its note, in order.
            let on_line: Vec<&Mark> = marks.iter().filter(|m| m.line == i).collect();
            let mark = on_line
                .iter()
                .find(|m| m.emphasis)
                .or(on_line.first())
                .copied();
            let run = coverage.map(|c| c.get(i).copied().unwrap_or(LineRun::Neither));
            let gutter = format!(
                "{}{:>width$}{} ",
                mark.map_or(" ", |m| m.sign),
                i + 1,
                run.map_or("", super::code_coverage::glyph)
            );
            // A mark's style first; else the line's coverage colours it.
            let style = mark.map_or_else(
                || run.map_or(t.dim, |r| super::code_coverage::style(t, r)),
                |m| m.style,
            );
            let mut spans = vec![Span::styled(gutter, style)];
            match highlighted.and_then(|h| h.get(i)) {
                Some(styled) => spans.extend(
                    styled
                        .iter()
                        .map(|(s, text)| Span::styled(text.replace('\t', "    "), *s)),
                ),
                None => spans.push(Span::styled(text.replace('\t', "    "), t.text)),
            }
            if spans.len() == 1 {
                // An empty line still has its text span: the gutter is the
                // first of several (see `hscroll::clip_lines`).
                spans.push(Span::raw(""));
            }
            for m in &on_line {
                spans.push(Span::styled(m.note.clone(), m.style));
            }
            let line = Line::from(spans);
            if on_line.iter().any(|m| m.emphasis) {
                line.style(t.marker)
            } else {
                line
            }
        })
        .collect()
}

/// The reply as it streams: complete lines settled, the unfinished one dim.
pub(crate) fn streaming<'a>(t: &Theme, text: &str) -> Vec<Line<'a>> {
    let (settled, tail) = match text.rfind('\n') {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => ("", text),
    };
    let mut lines: Vec<Line> = if settled.is_empty() {
        Vec::new()
    } else {
        sanitize(settled)
            .lines()
            .map(|l| Line::styled(l.to_string(), t.text))
            .collect()
    };
    lines.push(Line::from(vec![
        Span::styled(sanitize(tail), t.dim),
        Span::styled("▌", t.running),
    ]));
    lines
}

pub(crate) fn diff_lines<'a>(t: &Theme, old: &str, new: &str) -> Vec<Line<'a>> {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut lines = Vec::new();
    for change in diff.iter_all_changes() {
        let (sign, style) = match change.tag() {
            similar::ChangeTag::Delete => ("-", t.removed),
            similar::ChangeTag::Insert => ("+", t.added),
            similar::ChangeTag::Equal => (" ", t.dim),
        };
        let text = change
            .value()
            .trim_end_matches(['\n', '\r'])
            .replace('\t', "    ");
        lines.push(Line::styled(format!("{sign} {text}"), style));
    }
    lines
}

/// Lines added and removed from `old` to `new`.
pub(crate) fn change_counts(old: &str, new: &str) -> (usize, usize) {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut added = 0;
    let mut removed = 0;
    for c in diff.iter_all_changes() {
        match c.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

/// The localized error, in a few lines under the code.
pub(crate) fn error_lines<'a>(t: &Theme, e: &Location) -> Vec<Line<'a>> {
    let mut first = vec![Span::styled(format!("✗ {}", e.error_type), t.error)];
    // A failure of no place (no test ran, a limit) is said without one.
    let place = e.place_in();
    if !place.is_empty() {
        first.push(Span::styled(format!(" at {place}"), t.dim));
    }
    first.push(Span::styled(
        format!(": {}", first_line(&e.message)),
        t.text,
    ));
    let mut lines = vec![Line::from(first)];
    let mut detail = Vec::new();
    if let Some(test) = &e.test {
        detail.push(format!("test {test}"));
    }
    if let Some(x) = &e.expected {
        detail.push(format!("expected {x}"));
    }
    if let Some(x) = &e.actual {
        detail.push(format!("got {x}"));
    }
    if !detail.is_empty() {
        lines.push(Line::styled(format!("  {}", detail.join(" · ")), t.text));
    }
    lines
}

/// A failure found in an earlier version of the code or tests than the one
/// shown: named, never drawn on a line (that line may hold other code now).
pub(crate) fn earlier_failure_line<'a>(
    t: &Theme,
    found_in: u32,
    shown: u32,
    e: &Location,
) -> Line<'a> {
    use codeloop_session::story::words;
    let when = words::earlier_failure_when(found_in, shown);
    Line::from(vec![
        Span::styled(words::EARLIER_FAILURE, t.warning),
        Span::styled(format!(" ({when}): "), t.dim),
        Span::styled(e.headline(), t.dim),
    ])
}

pub(crate) fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}
