//! The output pane: a run's stdout and stderr as they arrive (stderr marked
//! with a bar and its own colour), control sequences stripped, following the
//! tail unless scrolled up, searchable. Memory holds the newest output; the
//! session's log on disk holds all of it.
//!
//! The pane owns its lines (rebuilt in `prepare` when the run grows, never
//! while drawing), its scroll and its search.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{Ctx, Handled, Intent, Pane, Place, RerunMark, Screen, Scroll, page, scroll_keys};
use crate::highlight::HighlightRequest;
use crate::keymap::{self, Binding, Key, Row};
use crate::sanitize::sanitize;
use codeloop_protocol::Stream;
use codeloop_protocol::present::bytes;
use codeloop_session::state::RunState;
use codeloop_session::story::words;
use codeloop_session::{NoticeLevel, State};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutputAct {
    Scroll(Scroll),
    Tail,
    Top,
    Search,
    NextMatch,
    PrevMatch,
    OpenLog,
}

pub(crate) const KEYS: &[Binding<OutputAct>] = &[
    Binding {
        label: "↑ ↓ PgUp PgDn",
        does: "scroll (the tail is followed at the bottom)",
        short: "scroll",
        keys: scroll_keys!(OutputAct::Scroll),
    },
    Binding {
        label: "G / g",
        does: "tail / top",
        short: "tail / top",
        keys: &[
            (Key::ch('G'), OutputAct::Tail),
            (Key::ch('g'), OutputAct::Top),
        ],
    },
    Binding {
        label: "L / Enter",
        does: "the run's whole log, in a pager",
        short: "whole log",
        keys: &[
            (Key::ch('L'), OutputAct::OpenLog),
            (Key::code(KeyCode::Enter), OutputAct::OpenLog),
        ],
    },
    Binding {
        label: "/",
        does: "search",
        short: "search",
        keys: &[(Key::ch('/'), OutputAct::Search)],
    },
    Binding {
        label: "n / N",
        does: "next / previous match",
        short: "next / previous match",
        keys: &[
            (Key::ch('n'), OutputAct::NextMatch),
            (Key::ch('N'), OutputAct::PrevMatch),
        ],
    },
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SearchAct {
    Find,
    Cancel,
}

/// While the search is typed (other keys are typed into it).
/// A key typed into a search prompt (`input`): `Some(query)` when it
/// ends the prompt with a search (empty: the search is cleared), `None`
/// while it edits (or Esc closed the prompt). Shared by the pane and the pager.
pub(crate) fn search_input_key(input: &mut Option<String>, key: &KeyEvent) -> Option<String> {
    let typed = input.as_mut()?;
    match keymap::lookup(SEARCH_INPUT, key) {
        Some(SearchAct::Find) => {
            let q = std::mem::take(typed);
            *input = None;
            return Some(q);
        }
        Some(SearchAct::Cancel) => *input = None,
        None => {
            super::line_edit::edit_line(typed, key);
        }
    }
    None
}

pub(crate) const SEARCH_INPUT: &[Binding<SearchAct>] = &[
    Binding {
        label: "Enter",
        does: "search",
        short: "search",
        keys: &[(Key::code(KeyCode::Enter), SearchAct::Find)],
    },
    Binding {
        label: "Esc",
        does: "cancel",
        short: "cancel",
        keys: &[(Key::code(KeyCode::Esc), SearchAct::Cancel)],
    },
];

/// Something to tell the person (the app shows it in the status line).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Say(pub NoticeLevel, pub String);

/// Output lines of one run, sanitized, stderr kept apart.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct OutputLines {
    pub(crate) run_id: Option<u64>,
    /// (dropped bytes, kept bytes, chunks) of the run when built.
    pub(crate) version: (u64, usize, usize),
    pub(crate) lines: Vec<(Stream, String)>,
}

#[derive(Debug, Default)]
pub struct OutputPane {
    output: OutputLines,
    /// Lines scrolled up from the tail (0 = follow the tail).
    back: usize,
    search: Option<String>,
    /// The search being typed.
    input: Option<String>,
    /// The pane's height at the last layout (rows a page holds).
    area_height: u16,
}

impl OutputPane {
    pub(crate) fn help() -> Vec<Row> {
        keymap::rows(KEYS).collect()
    }

    pub fn lines(&self) -> &[(Stream, String)] {
        &self.output.lines
    }

    /// Lines scrolled up from the tail.
    pub fn back(&self) -> usize {
        self.back
    }

    /// The pane's height in the coming frame (set before the frame is drawn).
    pub(crate) fn set_area_height(&mut self, height: u16) {
        self.area_height = height;
    }

    /// Rows under the notes: borders and the note lines shown while scrolled.
    fn notes_height(&self, scrolled: bool) -> u16 {
        u16::from(self.output.version.0 > 0 || scrolled)
            + u16::from(self.input.is_some() || self.search.is_some())
    }

    /// The most lines the view can be above the tail: the first line at the top.
    fn max_back(&self) -> usize {
        let body = self
            .area_height
            .saturating_sub(2 + self.notes_height(true))
            .max(1);
        self.output.lines.len().saturating_sub(usize::from(body))
    }

    /// Another node was chosen: follow its tail.
    fn select(&mut self, changed: bool) {
        if changed {
            self.back = 0;
        }
    }

    fn key(&mut self, key: KeyEvent, height: u16) -> Handled<Intent> {
        match self.on_key_inner(key, height) {
            Handled::Intent(Say(level, text)) => Handled::Intent(Intent::Say(level, text)),
            Handled::Done => Handled::Done,
            Handled::NotMine => match keymap::lookup(KEYS, &key) {
                Some(OutputAct::OpenLog) => Handled::Intent(Intent::OpenLog),
                _ => Handled::NotMine,
            },
        }
    }

    fn on_key_inner(&mut self, key: KeyEvent, height: u16) -> Handled<Say> {
        if self.input.is_some() {
            if let Some(q) = search_input_key(&mut self.input, &key) {
                self.search = (!q.is_empty()).then_some(q);
                return self.jump_to_match(true, true);
            }
            return Handled::Done;
        }
        let Some(act) = keymap::lookup(KEYS, &key) else {
            return Handled::NotMine;
        };
        let last = self.max_back();
        match act {
            OutputAct::Scroll(Scroll::Up) => self.back = (self.back + 1).min(last),
            OutputAct::Scroll(Scroll::Down) => self.back = self.back.saturating_sub(1),
            OutputAct::Scroll(Scroll::PageUp) => self.back = (self.back + page(height)).min(last),
            OutputAct::Scroll(Scroll::PageDown) => {
                self.back = self.back.saturating_sub(page(height))
            }
            OutputAct::Tail => self.back = 0,
            OutputAct::Top => self.back = last,
            OutputAct::Search => self.input = Some(String::new()),
            OutputAct::NextMatch => return self.jump_to_match(true, false),
            OutputAct::PrevMatch => return self.jump_to_match(false, false),
            OutputAct::OpenLog => return Handled::NotMine,
        }
        Handled::Done
    }

    /// The mouse wheel (three lines a notch).
    fn wheel(&mut self, up: bool) {
        let last = self.max_back();
        self.back = if up {
            (self.back + 3).min(last)
        } else {
            self.back.saturating_sub(3)
        };
    }

    /// Scroll to the next (or previous) line matching the search.
    fn jump_to_match(&mut self, forward: bool, from_tail: bool) -> Handled<Say> {
        let Some(q) = self.search.clone() else {
            return Handled::Intent(Say(
                NoticeLevel::Info,
                "no search: press / to search".into(),
            ));
        };
        let lines = &self.output.lines;
        let n = lines.len();
        if n == 0 {
            return Handled::Done;
        }
        let q = q.to_lowercase();
        let current = if from_tail {
            n
        } else {
            n - 1 - self.back.min(n - 1)
        };
        let hit = |i: usize| lines[i].1.to_lowercase().contains(&q);
        let found = if forward && !from_tail {
            (current + 1..n)
                .find(|&i| hit(i))
                .or_else(|| (0..current).find(|&i| hit(i)))
        } else {
            (0..current.min(n))
                .rev()
                .find(|&i| hit(i))
                .or_else(|| (current..n).rev().find(|&i| hit(i)))
        };
        match found {
            Some(i) => {
                self.back = (n - 1 - i).min(self.max_back());
                Handled::Done
            }
            None if self.output.version.0 > 0 => Handled::Intent(Say(
                NoticeLevel::Info,
                format!(
                    "`{q}` is not in the output kept in memory: L searches the run's whole log"
                ),
            )),
            None => Handled::Intent(Say(
                NoticeLevel::Info,
                format!("`{q}` not found in this run's output"),
            )),
        }
    }

    /// Before a frame: rebuild the lines when the run shown grew or changed.
    fn settle(&mut self, state: &State, run_id: Option<u64>) {
        let run = run_id.and_then(|id| state.runs.get(&id));
        let version = run
            .map(|r| (r.dropped_bytes, r.kept_bytes, r.chunks.len()))
            .unwrap_or_default();
        if self.output.run_id == run_id && self.output.version == version {
            return;
        }
        let old_len = self.output.lines.len();
        let same_run = self.output.run_id == run_id;
        let mut lines: Vec<(Stream, String)> = Vec::new();
        if let Some(run) = run {
            // The stream whose last line is still open (no newline yet).
            let mut open: Option<Stream> = None;
            for (stream, text) in &run.chunks {
                let clean = sanitize(text);
                let ends_line = clean.ends_with('\n');
                let body = if ends_line {
                    &clean[..clean.len() - 1]
                } else {
                    &clean[..]
                };
                for (i, piece) in body.split('\n').enumerate() {
                    match lines.last_mut() {
                        Some(last) if i == 0 && open == Some(*stream) => last.1.push_str(piece),
                        _ => lines.push((*stream, piece.to_string())),
                    }
                }
                open = (!ends_line).then_some(*stream);
            }
        }
        if same_run && self.back > 0 {
            // Keep the view still while the tail grows.
            self.back += lines.len().saturating_sub(old_len);
        } else if !same_run {
            self.back = 0;
        }
        self.output = OutputLines {
            run_id,
            version,
            lines,
        };
        self.back = self.back.min(self.max_back());
    }

    fn draw(&self, ctx: &Ctx, area: Rect, frame: &mut Frame) {
        let run = self
            .output
            .run_id
            .and_then(|id| ctx.state.runs.get(&id).map(|r| (id, r)));
        let outer = run_block(ctx, run, area.width);
        let inner = outer.inner(area);
        frame.render_widget(outer, area);
        let dropped = run.map(|(_, r)| r.dropped_bytes).unwrap_or(0);
        let notes_h = self.notes_height(self.back > 0);
        let [body, notes] =
            Layout::vertical([Constraint::Fill(1), Constraint::Length(notes_h)]).areas(inner);
        if run.is_none() {
            frame.render_widget(
                Paragraph::new(Line::styled("no run yet", ctx.theme.dim)),
                body,
            );
        } else {
            self.draw_lines(ctx, body, frame);
        }
        frame.render_widget(Paragraph::new(self.note_lines(ctx, dropped)), notes);
    }

    /// The lines of the output that fit `body`, `back` lines up from the
    /// end, stderr marked, the search's matches lit.
    fn draw_lines(&self, ctx: &Ctx, body: Rect, frame: &mut Frame) {
        let t = ctx.theme;
        let lines = &self.output.lines;
        let height = usize::from(body.height);
        let end = lines.len().saturating_sub(self.back);
        let start = end.saturating_sub(height);
        let query = self.search.as_ref().map(|q| q.to_lowercase());
        let visible: Vec<Line> = lines[start..end]
            .iter()
            .map(|(stream, text)| {
                let (bar, style) = match stream {
                    Stream::Stdout => (Span::raw("  "), t.text),
                    Stream::Stderr => (Span::styled("┃ ", t.stderr), t.stderr),
                };
                let text_style = match &query {
                    Some(q) if !q.is_empty() && text.to_lowercase().contains(q.as_str()) => {
                        t.search_match
                    }
                    _ => style,
                };
                Line::from(vec![bar, Span::styled(text.clone(), text_style)])
            })
            .collect();
        let empty = visible.is_empty();
        frame.render_widget(Paragraph::new(visible), body);
        if empty {
            frame.render_widget(Paragraph::new(Line::styled("(no output)", t.dim)), body);
        }
    }

    fn note_lines<'a>(&self, ctx: &Ctx<'a>, dropped: u64) -> Vec<Line<'a>> {
        let t = ctx.theme;
        let mut note_lines = Vec::new();
        if dropped > 0 || self.back > 0 {
            let mut spans = Vec::new();
            if self.back > 0 {
                spans.push(Span::styled(
                    format!("↑ {} lines above the tail · G follows ", self.back),
                    t.accent,
                ));
            }
            if dropped > 0 {
                let place = match (ctx.session_dir, self.output.run_id) {
                    (Some(dir), Some(id)) => dir
                        .join("logs")
                        .join(format!("run-{id}.log"))
                        .display()
                        .to_string(),
                    _ => "the session's log on disk".to_string(),
                };
                spans.push(Span::styled(
                    format!(
                        "{} older output: L reads all of it ({place})",
                        bytes(dropped)
                    ),
                    t.dim,
                ));
            }
            note_lines.push(Line::from(spans));
        }
        if let Some(input) = &self.input {
            note_lines.push(Line::from(vec![
                Span::styled("/", t.accent),
                Span::styled(input.clone(), t.text),
                Span::styled(format!("▌ {}", keymap::hint_line(SEARCH_INPUT)), t.dim),
            ]));
        } else if let Some(q) = &self.search {
            let hits = self
                .output
                .lines
                .iter()
                .filter(|(_, l)| l.to_lowercase().contains(&q.to_lowercase()))
                .count();
            note_lines.push(Line::styled(
                format!("/{q}: {hits} matching lines · n next · N previous"),
                t.dim,
            ));
        }
        note_lines
    }
}

impl Pane for OutputPane {
    fn title(&self) -> &'static str {
        "Output"
    }

    /// Under the code.
    fn place(&self, ctx: &Ctx, _columns: [Rect; 2]) -> Option<Place> {
        match ctx.screen {
            Screen::Session => Place::right(Constraint::Fill(1)),
            Screen::Welcome | Screen::BeforePlan => None,
        }
    }

    fn keymap(&self, _ctx: &Ctx) -> Vec<Row> {
        OutputPane::help()
    }

    fn on_key(&mut self, key: KeyEvent, ctx: &Ctx) -> Handled<Intent> {
        self.key(key, ctx.rows)
    }

    fn on_wheel(&mut self, up: bool) -> bool {
        self.wheel(up);
        true
    }

    fn on_select(&mut self, changed: bool) {
        self.select(changed);
    }

    /// The lines of the run to show (the selected node's, or the
    /// program's while the code pane shows the program), for its height.
    fn prepare(&mut self, ctx: &Ctx, area: Rect) -> Option<HighlightRequest> {
        self.set_area_height(area.height);
        self.settle(ctx.state, ctx.state.run_to_show(ctx.selected, ctx.program));
        None
    }

    fn render(&self, ctx: &Ctx, area: Rect, frame: &mut Frame) {
        self.draw(ctx, area, frame);
    }
}

fn live_outcome(mark: &RerunMark) -> String {
    match &mark.live {
        Ok(r) => format!(
            "recorded {}, now {}{}",
            if mark.recorded.passed {
                "passed"
            } else {
                "failed"
            },
            if r.passed { "passed" } else { "failed" },
            r.exit_code
                .map(|c| format!(" (exit {c})"))
                .unwrap_or_default()
        ),
        Err(e) => format!("could not re-run: {e}"),
    }
}

/// The pane's frame: which run, how it ended, its figures (in the title
/// where they fit, else on the bottom border), and a live re-run's verdict.
fn run_block<'a>(
    ctx: &Ctx<'a>,
    run: Option<(u64, &RunState)>,
    width: u16,
) -> ratatui::widgets::Block<'a> {
    let t = ctx.theme;
    let mut title_line = ctx.title("Output", String::new());
    if let Some((id, r)) = run {
        title_line = ctx.title(
            "Output",
            match &r.node {
                Some(n) => format!("run {id} · {n} #{}", r.iteration),
                None => format!("run {id} · the program"),
            },
        );
        title_line.spans.push(match &r.record {
            None => Span::styled("running ", t.running),
            Some(rec) => Span::styled(
                format!("{} ", words::run_result(rec, r.cancelled)),
                if rec.passed { t.ok } else { t.error },
            ),
        });
    }
    let mut figures_below = None;
    if let Some(res) = run.and_then(|(_, r)| r.record.as_ref()?.resources) {
        let room = usize::from(width.saturating_sub(2)).saturating_sub(title_line.width());
        let text = format!("· {} ", res.short());
        if text.chars().count() <= room {
            title_line.spans.push(Span::styled(text, t.dim));
        } else {
            figures_below = Some(Line::styled(format!(" {} ", res.short()), t.dim).right_aligned());
        }
    }
    if let Some(mark) = run.and_then(|(id, _)| ctx.reruns.get(&id)) {
        title_line.spans.push(if mark.differs() {
            Span::styled(format!("≠ live re-run: {} ", live_outcome(mark)), t.warning)
        } else {
            Span::styled("= live re-run agrees ", t.ok)
        });
    }
    let mut outer = ctx.block(title_line);
    if let Some(line) = figures_below {
        outer = outer.title_bottom(line);
    }
    outer
}
