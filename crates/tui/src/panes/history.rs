//! The history: the iterations as a timeline. Each attempt, what failed
//! where, the reflection (streaming in), what was changed, and every act of
//! the person at the keyboard.

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
use crate::describe::{describe_command, source_label};
use crate::highlight::HighlightRequest;
use crate::keymap::{self, Binding, Row};
use crate::theme::Theme;
use codeloop_session::state::HistoryEntry;
use codeloop_session::{
    CodeSource, Command, NoticeLevel, Outcome, ReviewFinding, ReviewVerdict, Severity, State,
};

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

    /// The timeline's lines at `width`; `compact`: notes cut to one line each.
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
        for entry in &s.history {
            match entry {
                HistoryEntry::Attempt {
                    node,
                    iteration,
                    source,
                } => {
                    out.extend(self.attempt_lines(ctx, node, *iteration, *source, width));
                    // What codeloop did, for a version it made: its mends,
                    // or why the version before was not kept.
                    let notes = ctx.state.nodes.get(node).and_then(|n| {
                        n.versions
                            .iter()
                            .rev()
                            .find(|v| v.iteration == *iteration && v.source == *source)
                    });
                    for note in notes.map(|v| v.notes.as_slice()).unwrap_or_default() {
                        push_wrapped(&mut out, "    codeloop: ", note, t.dim, width);
                    }
                }
                HistoryEntry::RunResult {
                    node,
                    iteration: _,
                    run_id,
                    passed,
                } => run_lines(&mut out, ctx, node.as_deref(), *run_id, *passed, width),
                HistoryEntry::Failure { location: e, .. } => {
                    push_wrapped(&mut out, "    where: ", &e.headline(), t.error, width);
                }
                HistoryEntry::Reflection { .. } => reflection_lines(&mut out, ctx, entry, width),
                HistoryEntry::Review {
                    verdict, findings, ..
                } => review_lines(&mut out, t, *verdict, findings, width),
                HistoryEntry::Steer {
                    command,
                    review_skip,
                } => steer_lines(&mut out, &mut repeat, t, command, *review_skip, width),
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

    /// A code version written: its node, iteration, who wrote it, the kind
    /// of attempt and how much it changed (on as many lines as `width` asks).
    fn attempt_lines(
        &self,
        ctx: &Ctx,
        node: &str,
        iteration: u32,
        source: CodeSource,
        width: usize,
    ) -> Vec<Line<'static>> {
        let t = ctx.theme;
        let mut spans = vec![
            Span::styled(format!("● {node}"), t.title),
            Span::styled(format!(" attempt {iteration}"), t.text),
            Span::styled(format!(" ({})", source_label(source)), t.dim),
        ];
        if let Some(kind) = ctx
            .state
            .nodes
            .get(node)
            .and_then(|n| n.attempt_kind(iteration))
        {
            spans.push(Span::styled(format!(" · {}", kind.label()), t.accent));
        }
        if let Some((a, r)) = self.changes.get(&(node.to_string(), iteration)) {
            spans.push(Span::styled(format!(" changed +{a} -{r}"), t.accent));
        }
        flow("", spans, "  ", width)
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

/// A run that ended: whose (a function's tests, named: runs of functions
/// in parallel come between each other's attempts, or the program's), its
/// verdict, the live re-run's mark and what it used.
fn run_lines(
    out: &mut Vec<Line<'static>>,
    ctx: &Ctx,
    node: Option<&str>,
    run_id: u64,
    passed: bool,
    width: usize,
) {
    let t = ctx.theme;
    let (mark, style) = if passed {
        ("✓", t.ok)
    } else {
        ("✗", t.error)
    };
    let verdict = if passed { "passed" } else { "failed" };
    let head = match node {
        Some(node) => format!("{mark} {node} tests {verdict}"),
        None => format!("{mark} the program {verdict}"),
    };
    let mut pieces = vec![
        Span::styled(head, style),
        Span::styled(format!(" · run {run_id}"), t.dim),
    ];
    if let Some(rerun) = ctx.reruns.get(&run_id) {
        pieces.push(if rerun.differs() {
            Span::styled(" ≠live", t.warning)
        } else {
            Span::styled(" =live", t.ok)
        });
    }
    if let Some(res) = ctx
        .state
        .runs
        .get(&run_id)
        .and_then(|r| r.record.as_ref()?.resources)
    {
        pieces.push(Span::styled(format!(" · {}", res.short()), t.dim));
    }
    out.extend(flow("  ", pieces, "    ", width));
}

/// `pieces` laid out in lines of `width` after `first`: each piece where
/// it fits, else on a new line (after `indent`, without its leading " · "
/// or space); a piece longer than a line is wrapped at its spaces. Never
/// cut at the pane's edge.
fn flow(first: &str, pieces: Vec<Span<'static>>, indent: &str, width: usize) -> Vec<Line<'static>> {
    use unicode_width::UnicodeWidthStr;
    let mut lines: Vec<Vec<Span<'static>>> = Vec::new();
    let mut line = vec![Span::raw(first.to_string())];
    let mut used = first.width();
    let mut empty = true;
    for piece in pieces {
        let text = piece.content.to_string();
        if used + text.width() <= width {
            used += text.width();
            line.push(piece);
            empty = false;
            continue;
        }
        let bare = if empty {
            text.as_str()
        } else {
            text.trim_start_matches([' ', '·'])
        };
        let lead = if empty { used } else { indent.width() };
        for (k, part) in wrap(bare, width.saturating_sub(lead))
            .into_iter()
            .enumerate()
        {
            if k > 0 || !empty {
                lines.push(std::mem::replace(
                    &mut line,
                    vec![Span::raw(indent.to_string())],
                ));
                used = indent.width();
            }
            used += part.width();
            line.push(Span::styled(part, piece.style));
        }
        empty = false;
    }
    lines.push(line);
    lines.into_iter().map(Line::from).collect()
}

/// A reflection (with a cursor while the model writes it), how much the
/// model reasoned apart, and the test changes of its iteration.
fn reflection_lines(out: &mut Vec<Line<'static>>, ctx: &Ctx, entry: &HistoryEntry, width: usize) {
    let (t, s) = (ctx.theme, ctx.state);
    let HistoryEntry::Reflection {
        node,
        iteration,
        call_id,
        ..
    } = entry
    else {
        return;
    };
    let reflection = s.reflection(entry);
    let text = reflection.map_or("", |r| r.text);
    let shown = if reflection.is_some_and(|r| r.streaming) {
        format!("{}▌", text.trim_start())
    } else {
        text.trim().to_string()
    };
    push_wrapped(out, "    why:   ", &shown, t.text, width);
    if let Some(call) = call_id.and_then(|id| s.calls.get(&id))
        && !call.reasoning.is_empty()
    {
        out.push(Line::styled(
            format!(
                "    thought: {} characters of reasoning, kept apart (never used as code)",
                call.reasoning.chars().count()
            ),
            t.dim,
        ));
    }
    if let Some(n) = s.nodes.get(node) {
        for change in n.test_changes.iter().filter(|c| c.iteration == *iteration) {
            test_change_lines(out, change, t, width);
        }
    }
}

/// The review of a code version before it ran: its verdict and findings.
fn review_lines(
    out: &mut Vec<Line<'static>>,
    t: &Theme,
    verdict: ReviewVerdict,
    findings: &[ReviewFinding],
    width: usize,
) {
    let summary = codeloop_session::review::summary(verdict, findings);
    let style = match verdict {
        ReviewVerdict::Ok => t.ok,
        ReviewVerdict::Concerns if findings.iter().any(|f| f.severity == Severity::Serious) => {
            t.error
        }
        ReviewVerdict::Concerns => t.warning,
    };
    out.push(Line::from(vec![
        Span::styled("  ◆ review ", style),
        Span::styled(summary, style),
    ]));
    for f in findings {
        push_wrapped(out, "    ◆ ", &f.line_text(), t.text, width);
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
    command: &Command,
    review_skip: bool,
    width: usize,
) {
    let what = if review_skip {
        "sent the code to a repair, unrun".to_string()
    } else {
        describe_command(command)
    };
    if !matches!(command, Command::Approve | Command::Skip) {
        push_wrapped(out, "  ⚑ you: ", &what, t.accent, width);
        return;
    }
    if let Some(r) = repeat.as_mut()
        && r.what == what
        && out.len() == r.line
    {
        r.count += 1;
        if let Some(line) = out.last_mut() {
            *line = Line::styled(format!("  ⚑ you: {what} ×{}", r.count), t.dim);
        }
        return;
    }
    out.push(Line::styled(format!("  ⚑ you: {what}"), t.dim));
    *repeat = Some(Repeat {
        count: 1,
        what,
        line: out.len(),
    });
}

/// The latest notices (one when `compact`, cut to a line, with how many
/// more there are).
fn notice_lines(out: &mut Vec<Line<'static>>, s: &State, t: &Theme, width: usize, compact: bool) {
    let shown_notes = if compact { 1 } else { 3 };
    for codeloop_session::state::Notice { level, message } in
        s.notices.iter().rev().take(shown_notes).rev()
    {
        let style = match level {
            NoticeLevel::Info => t.dim,
            NoticeLevel::Warning => t.warning,
            NoticeLevel::Error => t.error,
        };
        if compact {
            let more = s.notices.len() - 1;
            let prefix = match more {
                0 => "  note: ".to_string(),
                n => format!("  note (+{n}): "),
            };
            out.push(Line::styled(cut(&prefix, message, width), style));
        } else {
            push_wrapped(out, "  note: ", message, style, width);
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

/// A test change the model proposed: marked as such, its fate, and the
/// changed lines (a few).
fn test_change_lines(
    out: &mut Vec<Line<'static>>,
    change: &codeloop_session::state::TestChange,
    t: &Theme,
    width: usize,
) {
    const SHOWN: usize = 8;
    let fate = match (&change.rejected_because, change.applied) {
        (Some(why), _) => format!("rejected: {why}"),
        (None, true) => "applied".to_string(),
        (None, false) => "not applied".to_string(),
    };
    push_wrapped(
        out,
        "    ✎ ",
        &format!("test changed by the model ({fate})"),
        t.warning,
        width,
    );
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
