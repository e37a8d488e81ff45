//! The history: the story of the tape as a timeline (`story::timeline`).
//! Each code version, what failed where, the reflection (streaming in),
//! what was changed, and every act of the person at the keyboard, each
//! line the story's words with a glyph, an indent and a style.

use codeloop_protocol::present::count;
use std::collections::BTreeMap;

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::code_lines::change_counts;
use ratatui::layout::Constraint;

use super::{Ctx, Handled, Intent, Pane, Place, Screen, Scroll, page, scroll_keys, wrap};
use crate::highlight::HighlightRequest;
use crate::keymap::{self, Binding, Row};
use crate::theme::Theme;
use codeloop_session::story::{self, Level, Line as StoryLine, What};
use codeloop_session::{Outcome, State};

pub(crate) const KEYS: &[Binding<Scroll>] = &[Binding {
    label: "↑ ↓ PgUp PgDn",
    does: "scroll the timeline",
    short: "scroll the timeline",
    keys: scroll_keys!(std::convert::identity),
}];

/// What the history says about the tape itself.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct TapeNotes<'a> {
    /// The tape's last line was cut off (line number).
    pub(crate) truncated_line: Option<usize>,
    /// Older output was dropped from memory.
    pub(crate) elided_output: bool,
    /// The tape has no `finished` event: the session was killed or crashed.
    pub(crate) unfinished: bool,
    /// Lines that could not be read and were skipped (`damage_report`).
    pub(crate) damage: Option<&'a str>,
}

#[derive(Debug, Default)]
pub struct HistoryPane {
    /// Lines scrolled up from the end.
    back: usize,
    /// Lines added and removed by each code version against the one before,
    /// by (node, iteration): diffed once, not on every frame.
    changes: BTreeMap<(String, u32), (usize, usize)>,
}

impl HistoryPane {
    pub(crate) fn help() -> Vec<Row> {
        keymap::rows(KEYS).collect()
    }

    fn key(&mut self, key: KeyEvent, height: u16) -> Handled<Intent> {
        let Some(scroll) = keymap::lookup(KEYS, &key) else {
            return Handled::NotMine;
        };
        match scroll {
            Scroll::Up => self.back += 1,
            Scroll::Down => self.back = self.back.saturating_sub(1),
            Scroll::PageUp => self.back += page(height),
            Scroll::PageDown => self.back = self.back.saturating_sub(page(height)),
        }
        Handled::Done
    }

    /// The mouse wheel (three lines a notch).
    fn wheel(&mut self, up: bool) {
        self.back = if up {
            self.back + 3
        } else {
            self.back.saturating_sub(3)
        };
    }

    /// Before a frame: count the changes of code versions not seen yet.
    fn settle(&mut self, state: &State) {
        for node in state.nodes.values() {
            for pair in node.versions.windows(2) {
                let key = (node.spec.name.clone(), pair[1].iteration);
                self.changes
                    .entry(key)
                    .or_insert_with(|| change_counts(&pair[0].code, &pair[1].code));
            }
        }
    }

    fn draw(&self, ctx: &Ctx, notes: TapeNotes<'_>, area: Rect, frame: &mut Frame) {
        let width = usize::from(area.width.saturating_sub(2));
        let height = usize::from(area.height.saturating_sub(2));
        let mut lines = self.lines(ctx, notes, width, false);
        if lines.len() > height {
            // Short of room: the notes take a line each, so the last
            // iteration's reflection stays in view above them.
            lines = self.lines(ctx, notes, width, true);
        }
        let end = lines
            .len()
            .saturating_sub(self.back.min(lines.len().saturating_sub(height)));
        let start = end.saturating_sub(height);
        let detail = match ctx.state.repair_iterations() {
            0 => String::new(),
            n => count(n, "repair"),
        };
        let p = Paragraph::new(lines[start..end].to_vec())
            .block(ctx.block(ctx.title("History", detail)));
        frame.render_widget(p, area);
    }

    /// The timeline's lines at `width`; `compact`: notes cut to one line
    /// each. The story's lines (`story::timeline`), each given its glyph,
    /// indent and style; the words are the story's.
    pub(crate) fn lines(
        &self,
        ctx: &Ctx,
        notes: TapeNotes<'_>,
        width: usize,
        compact: bool,
    ) -> Vec<Line<'static>> {
        let t = ctx.theme;
        let s = ctx.state;
        let mut out: Vec<Line<'static>> = Vec::new();
        tape_note_lines(&mut out, notes, t, width);
        let mut repeat: Option<Repeat> = None;
        for line in story::timeline(s) {
            match &line.what {
                What::Code { iteration, .. } => {
                    push_spans_wrapped(&mut out, self.code_line(t, &line, *iteration), width, 4);
                    // What codeloop did, for a version it made: its mends,
                    // or why the version before was not kept.
                    for note in &line.more {
                        push_wrapped(&mut out, "    codeloop: ", note, t.dim, width);
                    }
                }
                What::Run { run_id, .. } => {
                    push_spans_wrapped(&mut out, run_line(ctx, &line, *run_id), width, 6)
                }
                What::Failure { .. } => {
                    push_wrapped(&mut out, "    failure: ", &line.text, t.error, width);
                }
                What::Reflection { streaming, .. } => {
                    reflection_lines(&mut out, t, &line, *streaming, width)
                }
                What::TestChange { change, .. } => {
                    test_change_lines(&mut out, s, t, &line, *change, width)
                }
                What::Review { .. } => review_lines(&mut out, t, &line, width),
                // The loop's decision after a failure, and why.
                What::Decision { .. } => {
                    let style = match line.level {
                        Level::Bad => t.error,
                        Level::Warning => t.warning,
                        Level::Plain | Level::Good | Level::Quiet => t.dim,
                    };
                    push_wrapped(&mut out, "    → ", &line.text, style, width);
                }
                What::Steer { .. } => steer_lines(&mut out, &mut repeat, t, &line, width),
                // Not in the timeline (`run` prints them).
                What::Session
                | What::Notice(_)
                | What::ModelError
                | What::ModelRestart
                | What::Plan
                | What::PlanError
                | What::Tests
                | What::Check { .. }
                | What::Vote { .. }
                | What::Attempt { .. }
                | What::ProgramOutput
                | What::Picture
                | What::Status(_)
                | What::Paused
                | What::Finished(_) => {}
            }
        }
        notice_lines(&mut out, s, t, width, compact);
        let outcome = Outcome::of(s);
        if s.finished.is_some() && outcome.ended() {
            let style = super::outcome_style(t, outcome);
            push_wrapped(
                &mut out,
                &format!("{} ", outcome.symbol()),
                &codeloop_session::outcome::line(s),
                style,
                width,
            );
        }
        if out.is_empty() {
            out.push(Line::styled("iterations and reflections show here", t.dim));
        }
        out
    }

    /// A code version written: its node and version, who wrote it, the
    /// kind of attempt, and how much it changed.
    fn code_line(&self, t: &Theme, line: &StoryLine, iteration: u32) -> Vec<Span<'static>> {
        let mut spans = vec![
            Span::styled(format!("● {}", line.subject().unwrap_or_default()), t.title),
            Span::styled(format!(" {}", line.text), t.dim),
        ];
        let node = line.node.clone().unwrap_or_default();
        if let Some((a, r)) = self.changes.get(&(node, iteration)) {
            spans.push(Span::styled(format!(" · changed +{a} -{r}"), t.accent));
        }
        spans
    }
}

/// What the history says about the tape itself: no end, damage, a cut
/// last line, output dropped from memory.
fn tape_note_lines(out: &mut Vec<Line<'static>>, notes: TapeNotes<'_>, t: &Theme, width: usize) {
    if notes.unfinished {
        push_wrapped(
            out,
            "! ",
            "did not finish: the tape has no end (the session was killed, crashed, or is still running); shown up to its last event",
            t.warning,
            width,
        );
    }
    if let Some(damage) = notes.damage {
        push_wrapped(
            out,
            "! ",
            &format!("tape damage: {damage}"),
            t.warning,
            width,
        );
    }
    if let Some(line) = notes.truncated_line {
        push_wrapped(
            out,
            "! ",
            &format!(
                "the tape was cut off at line {line} (the session crashed or is still being written): shown up to the last complete event"
            ),
            t.warning,
            width,
        );
    }
    if notes.elided_output {
        push_wrapped(
            out,
            "! ",
            "older output was dropped from memory; the tape on disk keeps it",
            t.dim,
            width,
        );
    }
}

/// A run that ended: whose, its result, the live re-run's mark and what
/// it took.
fn run_line(ctx: &Ctx, line: &StoryLine, run_id: u64) -> Vec<Span<'static>> {
    let t = ctx.theme;
    let (glyph, style) = match line.level {
        Level::Good => ("✓", t.ok),
        Level::Warning | Level::Quiet => ("■", t.warning),
        Level::Plain | Level::Bad => ("✗", t.error),
    };
    let mut spans = vec![Span::styled(
        format!(
            "  {glyph} {}: {}",
            line.subject().unwrap_or_default(),
            line.text
        ),
        style,
    )];
    spans.push(Span::styled(format!(" · run {run_id}"), t.dim));
    // The live re-run's mark before the figures: a narrow
    // pane cuts the line's end, and the mark is what it is for.
    if let Some(mark) = ctx.reruns.get(&run_id) {
        spans.push(if mark.differs() {
            Span::styled(" ≠live", t.warning)
        } else {
            Span::styled(" =live", t.ok)
        });
    }
    if let Some(figures) = &line.detail {
        spans.push(Span::styled(format!(" · {figures}"), t.dim));
    }
    spans
}

/// Spans on as many lines as `width` needs, each style kept, broken after
/// a space (a word longer than the line is cut by the pane), the lines
/// after the first indented by `indent` columns.
fn push_spans_wrapped(
    out: &mut Vec<Line<'static>>,
    spans: Vec<Span<'static>>,
    width: usize,
    indent: usize,
) {
    use unicode_width::UnicodeWidthStr;
    let mut line: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for span in spans {
        let style = span.style;
        for word in span.content.split_inclusive(' ') {
            let w = word.trim_end().width();
            if used + w > width && used > indent {
                out.push(Line::from(std::mem::take(&mut line)));
                line.push(Span::raw(" ".repeat(indent)));
                used = indent;
                if word.trim().is_empty() {
                    continue;
                }
            }
            line.push(Span::styled(word.to_string(), style));
            used += word.width();
        }
    }
    if !line.is_empty() {
        out.push(Line::from(line));
    }
}

/// A reflection (with a cursor while the model writes it), and how much
/// the model reasoned apart.
fn reflection_lines(
    out: &mut Vec<Line<'static>>,
    t: &Theme,
    line: &StoryLine,
    streaming: bool,
    width: usize,
) {
    let shown = if streaming {
        format!("{}▌", line.text)
    } else {
        line.text.clone()
    };
    push_wrapped(out, "    reflection: ", &shown, t.text, width);
    if let Some(reasoning) = &line.detail {
        push_wrapped(out, "    ", reasoning, t.dim, width);
    }
}

/// The review of a code version before it ran: its verdict and findings.
fn review_lines(out: &mut Vec<Line<'static>>, t: &Theme, line: &StoryLine, width: usize) {
    let style = level_style(t, line.level);
    out.push(Line::from(vec![
        Span::styled("  ◆ review ", style),
        Span::styled(line.text.clone(), style),
    ]));
    for finding in &line.more {
        push_wrapped(out, "    ◆ ", finding, t.text, width);
    }
}

/// A story line's level as this theme shows it.
fn level_style(t: &Theme, level: Level) -> Style {
    match level {
        Level::Plain => t.text,
        Level::Good => t.ok,
        Level::Quiet => t.dim,
        Level::Warning => t.warning,
        Level::Bad => t.error,
    }
}

/// An approval or skip repeated on the line just before: counted there.
struct Repeat {
    count: usize,
    what: String,
    /// The number of lines when it was written: it is the last line.
    line: usize,
}

/// What the person did. Approvals come one per step in step mode: those
/// in a row are counted on one line.
fn steer_lines(
    out: &mut Vec<Line<'static>>,
    repeat: &mut Option<Repeat>,
    t: &Theme,
    line: &StoryLine,
    width: usize,
) {
    let what = &line.text;
    if line.level != Level::Quiet {
        push_wrapped(out, "  ⚑ you: ", what, t.accent, width);
        return;
    }
    if let Some(r) = repeat.as_mut()
        && r.what == *what
        && out.len() == r.line
    {
        r.count += 1;
        if let Some(last) = out.last_mut() {
            *last = Line::styled(format!("  ⚑ you: {what} ×{}", r.count), t.dim);
        }
        return;
    }
    out.push(Line::styled(format!("  ⚑ you: {what}"), t.dim));
    *repeat = Some(Repeat {
        count: 1,
        what: what.clone(),
        line: out.len(),
    });
}

/// The latest notices (one when `compact`, cut to a line, with how many
/// more there are).
fn notice_lines(out: &mut Vec<Line<'static>>, s: &State, t: &Theme, width: usize, compact: bool) {
    let shown_notes = if compact { 1 } else { 3 };
    for notice in s.notices.iter().rev().take(shown_notes).rev() {
        let line = story::notice(notice);
        let style = level_style(t, line.level);
        let label = line.what.label();
        if compact {
            let more = s.notices.len() - 1;
            let prefix = match more {
                0 => format!("  {label}: "),
                n => format!("  {label} (+{n}): "),
            };
            out.push(Line::styled(cut(&prefix, &line.text, width), style));
        } else {
            push_wrapped(out, &format!("  {label}: "), &line.text, style, width);
        }
    }
}

/// `prefix` and the first line of `text`, cut to `width` columns with an ellipsis.
fn cut(prefix: &str, text: &str, width: usize) -> String {
    let room = width.saturating_sub(prefix.chars().count());
    let text = text.lines().next().unwrap_or("");
    match wrap(text, room).as_slice() {
        [only] => format!("{prefix}{only}"),
        _ => match wrap(text, room.saturating_sub(1)).first() {
            Some(first) => format!("{prefix}{first}…"),
            None => prefix.to_string(),
        },
    }
}

fn push_wrapped<'a>(out: &mut Vec<Line<'a>>, prefix: &str, text: &str, style: Style, width: usize) {
    let indent = " ".repeat(prefix.chars().count());
    for (i, piece) in wrap(text, width.saturating_sub(indent.len()))
        .into_iter()
        .enumerate()
    {
        let lead = if i == 0 {
            prefix.to_string()
        } else {
            indent.clone()
        };
        out.push(Line::styled(format!("{lead}{piece}"), style));
    }
}

/// A test change the model proposed: its fate and the model's reason, and
/// the changed lines (a few).
fn test_change_lines(
    out: &mut Vec<Line<'static>>,
    s: &State,
    t: &Theme,
    line: &StoryLine,
    change: usize,
    width: usize,
) {
    const SHOWN: usize = 8;
    push_wrapped(out, "    ✎ tests ", &line.text, t.warning, width);
    let Some(change) = line
        .node
        .as_ref()
        .and_then(|n| s.nodes.get(n))
        .and_then(|n| n.test_changes.get(change))
    else {
        return;
    };
    let diff = similar::TextDiff::from_lines(&change.old, &change.new);
    let changed: Vec<(similar::ChangeTag, String)> = diff
        .iter_all_changes()
        .filter(|c| c.tag() != similar::ChangeTag::Equal)
        .map(|c| (c.tag(), c.value().trim_end().to_string()))
        .collect();
    for (tag, line) in changed.iter().take(SHOWN) {
        let (sign, style) = match tag {
            similar::ChangeTag::Delete => ("-", t.error),
            _ => ("+", t.ok),
        };
        out.push(Line::styled(format!("      {sign} {line}"), style));
    }
    if changed.len() > SHOWN {
        out.push(Line::styled(
            format!("      … {} more changed lines", changed.len() - SHOWN),
            t.dim,
        ));
    }
}

impl Pane for HistoryPane {
    fn title(&self) -> &'static str {
        "History"
    }

    /// At the bottom of the left column.
    fn place(&self, ctx: &Ctx, _columns: [Rect; 2]) -> Option<Place> {
        match ctx.screen {
            Screen::Welcome => None,
            Screen::BeforePlan => Place::left(Constraint::Fill(1)),
            Screen::Session => Place::left(Constraint::Fill(3)),
        }
    }

    fn keymap(&self, _ctx: &Ctx) -> Vec<Row> {
        HistoryPane::help()
    }

    fn on_key(&mut self, key: KeyEvent, ctx: &Ctx) -> Handled<Intent> {
        self.key(key, ctx.rows)
    }

    fn on_wheel(&mut self, up: bool) -> bool {
        self.wheel(up);
        true
    }

    /// The changes of code versions not counted yet.
    fn prepare(&mut self, ctx: &Ctx, _area: Rect) -> Option<HighlightRequest> {
        self.settle(ctx.state);
        None
    }

    fn render(&self, ctx: &Ctx, area: Rect, frame: &mut Frame) {
        self.draw(ctx, ctx.around.notes, area, frame);
    }
}
