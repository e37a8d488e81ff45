//! The whole screen: layout, the panes of the registry, the status bar, and the popups.
//!
//! Architecture Invariant: render draws only: no I/O, no highlighting, no
//! mutation, no clock. What a frame needs is settled before it
//! (`App::prepare`), and slow work (highlighting, reading a log, decoding
//! a picture, describing a file) is a background job whose result comes
//! back as a `Msg`, stale ones dropped.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{App, CodeTab, Focus, Mode, SessionView};
use crate::describe::model_label;
use crate::keymap::{self, GlobalAct, ModeKind, Row, SteerAct};
use crate::panes::help::HelpContent;
use crate::panes::history::TapeNotes;
use crate::panes::popup::PopupCtx;
use crate::panes::{Around, Column, Ctx, Screen};
use crate::theme::Theme;
use codeloop_session::story::words;
use codeloop_session::{NoticeLevel, Outcome};

/// Where each pane is on screen (those it does not list are not), and
/// the status bar.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Areas {
    pub panes: Vec<(Focus, Rect)>,
    pub(crate) status: Rect,
}

impl Areas {
    /// Where `pane` is (empty when it is not on screen).
    pub fn of(&self, pane: Focus) -> Rect {
        self.panes
            .iter()
            .find(|(p, _)| *p == pane)
            .map_or(Rect::default(), |(_, area)| *area)
    }

    pub(crate) fn pane_at(&self, pos: Position) -> Option<Focus> {
        self.panes
            .iter()
            .find(|(_, area)| area.contains(pos))
            .map(|(p, _)| *p)
    }
}

/// The screen laid out: the status bar at the bottom; zoomed, the focused
/// pane over the rest; else two columns, each pane in the column its
/// `Pane::place` names, stacked in registry order.
pub fn layout(app: &App, screen: Rect) -> Areas {
    let [body, status] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(2)]).areas(screen);
    let mut areas = Areas {
        status,
        ..Areas::default()
    };
    if app.zoom {
        areas.panes.push((app.focus, body));
    } else {
        areas.panes = tiled(app, body);
    }
    areas
}

/// The panes on screen unzoomed, in `body`.
pub(crate) fn tiled(app: &App, body: Rect) -> Vec<(Focus, Rect)> {
    // Before a session there is no code, output or history to show: the
    // task editor and the welcome (model, demos, sessions) share the
    // screen, so 80x24 shows every demo and the way to start.
    let left = match app.session.screen() {
        Screen::Welcome => 40,
        Screen::BeforePlan | Screen::Session => 38,
    };
    let columns: [Rect; 2] =
        Layout::horizontal([Constraint::Percentage(left), Constraint::Fill(1)]).areas(body);
    let mut stacks: [Vec<(Focus, Constraint)>; 2] = Default::default();
    for &pane in Focus::ALL {
        if let Some(place) = app.panes.get(pane).place(&ctx(app, pane), columns) {
            let column = match place.column {
                Column::Left => 0,
                Column::Right => 1,
            };
            stacks[column].push((pane, place.height));
        }
    }
    let mut panes = Vec::new();
    for (column, stack) in columns.into_iter().zip(stacks) {
        let rects = Layout::vertical(stack.iter().map(|(_, height)| *height)).split(column);
        panes.extend(stack.iter().zip(rects.iter()).map(|((p, _), r)| (*p, *r)));
    }
    panes
}

/// What a pane sees beside the session: which node is shown, whether the
/// code pane shows the program, the terminal's rows, its focus.
#[derive(Clone, Copy)]
pub(super) struct Seen<'a> {
    pub(crate) selected: Option<&'a str>,
    pub(crate) program: bool,
    pub(crate) rows: u16,
    pub(crate) focused: bool,
}

impl App {
    /// What `pane` sees beside the session, with the node `selected`.
    pub(super) fn seen<'a>(&self, selected: Option<&'a str>, pane: Focus) -> Seen<'a> {
        Seen {
            selected,
            program: self.panes.code.tab() == super::CodeTab::Program,
            rows: self.screen.height,
            focused: self.focus == pane,
        }
    }
}

/// What a pane draws from: made from the app's parts (not the panes), so
/// a pane can be borrowed to change while it reads its context.
pub(super) fn ctx_of<'a>(session: &'a SessionView, theme: &'a Theme, seen: Seen<'a>) -> Ctx<'a> {
    let info = &session.info;
    Ctx {
        state: session.timeline.state(),
        theme,
        focused: seen.focused,
        selected: seen.selected,
        reruns: &session.reruns,
        session_dir: info.session_dir.as_deref(),
        screen: session.screen(),
        rows: seen.rows,
        program: seen.program,
        around: Around {
            model_label: &info.model_label,
            demos: &info.demos,
            sessions: &info.sessions,
            sandbox_layers: &info.sandbox_layers,
            sandbox_warning: info.sandbox_warning.as_deref(),
            notes: TapeNotes {
                truncated_line: info.truncated_line,
                elided_output: session.timeline.elided_output(),
                unfinished: info.unfinished,
                damage: info.damage.as_deref(),
            },
        },
    }
}

/// What `pane` draws from.
pub(crate) fn ctx(app: &App, pane: Focus) -> Ctx<'_> {
    ctx_of(&app.session, &app.theme, app.seen(app.selected(), pane))
}

/// Draw the app.
/// Below these sizes the panes would be drawn zero or one row high: the
/// workbench says so instead. A zoomed pane fills the screen and needs less.
const MIN_SIZE: (u16, u16) = (60, 16);
const MIN_SIZE_ZOOMED: (u16, u16) = (30, 6);

pub fn render(app: &App, frame: &mut Frame) {
    let full = frame.area();
    let (w, h) = if app.zoomed() {
        MIN_SIZE_ZOOMED
    } else {
        MIN_SIZE
    };
    if full.width < w || full.height < h {
        let text = format!(
            "terminal too small (need {w}x{h}, have {}x{}): make it bigger, or q to quit",
            full.width, full.height
        );
        frame.render_widget(
            Paragraph::new(text)
                .style(app.theme.warning)
                .wrap(ratatui::widgets::Wrap { trim: true }),
            full,
        );
        app.theme.fill_background(frame.buffer_mut());
        return;
    }
    let areas = layout(app, full);
    for &pane in Focus::ALL {
        let area = areas.of(pane);
        if area.area() > 0 {
            app.panes.get(pane).render(&ctx(app, pane), area, frame);
        }
    }
    status_bar(app, areas.status, frame);
    let help = || help_content(app);
    let cx = PopupCtx {
        theme: &app.theme,
        state: app.state(),
        help: &help,
    };
    for popup in app.popups.iter() {
        popup.view().render(&cx, frame);
    }
    app.theme.fill_background(frame.buffer_mut());
}

/// What the `?` help lists: the focused pane's keys, then the mode's.
pub(crate) fn help_content(app: &App) -> HelpContent<'static> {
    HelpContent {
        pane: app.panes.get(app.focus).title(),
        pane_rows: pane_rows(app),
        everywhere: match app.session.mode {
            Mode::Live(_) => "Everywhere (live session)",
            Mode::Review => "Everywhere (review: read-only)",
            Mode::Replay(_) => "Everywhere (replay)",
        },
        global_rows: global_rows(app.mode_kind()),
    }
}

/// The help rows of the focused pane's table.
pub(crate) fn pane_rows(app: &App) -> Vec<Row> {
    app.panes.get(app.focus).keymap(&ctx(app, app.focus))
}

/// The help rows of the workbench's tables in a mode.
pub(crate) fn global_rows(mode: ModeKind) -> Vec<Row> {
    keymap::global(mode)
        .into_iter()
        .flat_map(keymap::rows)
        .collect()
}

fn status_bar(app: &App, area: Rect, frame: &mut Frame) {
    let t = &app.theme;
    let s = app.state();
    let mut spans = vec![Span::styled(badge(app), t.selection)];
    spans.extend(flags(app));
    let model = if s.config.provider.is_empty() {
        app.session.info.model_label.clone()
    } else {
        model_label(&s.config)
    };
    // Before the tape's first record a review or replay knows no model.
    let model_at = spans.len();
    if !model.is_empty() {
        spans.push(Span::styled(format!(" {model} "), t.status));
    }
    let tokens = s.tokens_so_far();
    spans.push(Span::styled(
        format!("│ {} tokens ", human_count(tokens)),
        t.status,
    ));
    let layers = if s.config.sandbox_layers.is_empty() {
        &app.session.info.sandbox_layers
    } else {
        &s.config.sandbox_layers
    };
    let layers_at = sandbox_spans(app, layers, &mut spans);
    spans.push(Span::styled(
        format!(" │ {} ", fmt_elapsed(app.elapsed_ms())),
        t.status,
    ));
    if s.step_mode || (app.step_armed() && s.events_applied == 0) {
        spans.push(Span::styled("│ step mode ", t.warning));
    }
    fit_status(
        &mut spans,
        usize::from(area.width),
        layers_at,
        model_at,
        layers.len(),
    );
    let first = Line::from(spans).style(t.status);
    let hint = hint_line(app, usize::from(area.width));
    frame.render_widget(Paragraph::new(vec![first, hint]), area);
}

/// The badge: the mode, and where the cursor is on the tape.
fn badge(app: &App) -> String {
    let (cursor, total) = (app.cursor(), app.records().len());
    match &app.session.mode {
        Mode::Live(_) if !app.at_end() => format!(" REVIEWING {cursor}/{total} · End: live "),
        Mode::Live(l) => live_badge(l, app.state()),
        Mode::Review => format!(" REVIEW {cursor}/{total} "),
        Mode::Replay(r) => format!(
            " REPLAY {} ×{} {cursor}/{total} ",
            if r.playing { "▶" } else { "⏸" },
            fmt_speed(r.speed),
        ),
    }
}

/// What the status line says early, so no width cuts it off: the tape
/// being read, a reduced sandbox, a pause, what the next session starts
/// with, a tape that did not finish or was cut off, the session's lineage.
fn flags(app: &App) -> Vec<Span<'static>> {
    let t = &app.theme;
    let info = &app.session.info;
    let mut spans = Vec::new();
    if let Some(percent) = info.loading {
        spans.push(Span::styled(format!(" loading {percent}% "), t.accent));
    }
    if info.sandbox_warning.is_some() {
        // First, so no width cuts it off: generated code runs with fewer protections.
        spans.push(Span::styled(
            " REDUCED SANDBOX ",
            t.error.add_modifier(Modifier::REVERSED),
        ));
    }
    if paused_step(app).is_some() {
        spans.push(Span::styled(
            " ⏸ PAUSED ",
            t.warning.add_modifier(Modifier::REVERSED),
        ));
    }
    // Early, so no width cuts it off: what the next session starts with.
    if let Some(next) = app.session_choices().words() {
        spans.push(Span::styled(format!(" next: {next} "), t.accent));
    }
    if info.unfinished {
        spans.push(Span::styled(
            " did not finish ",
            t.warning.add_modifier(Modifier::REVERSED),
        ));
    }
    if let Some(line) = info.truncated_line {
        spans.push(Span::styled(
            format!(" tape cut off at line {line} "),
            t.warning,
        ));
    }
    if let Some(lineage) = crate::panes::sessions::lineage(app.state(), &info.sessions) {
        spans.push(Span::styled(format!(" {lineage} "), t.accent));
    }
    spans
}

/// The sandbox's part of the status line: its warning, or its layers (or
/// that none were reported); nothing where a tape not read yet cannot
/// say. Where the layers' span is, for `fit_status` to shorten.
fn sandbox_spans(app: &App, layers: &[String], spans: &mut Vec<Span<'static>>) -> Option<usize> {
    let t = &app.theme;
    // Nor which sandbox its runs had: nothing to warn of yet.
    let unknown = layers.is_empty()
        && app.state().events_applied == 0
        && matches!(app.session.mode, Mode::Review | Mode::Replay(_));
    let said = match &app.session.info.sandbox_warning {
        Some(warning) => Some(Span::styled(format!(" {warning} "), t.error)),
        None if unknown => None,
        None if layers.is_empty() => Some(Span::styled(" none reported ", t.warning)),
        None => Some(Span::styled(format!(" {} ", layers.join("+")), t.ok)),
    };
    let mut layers_at = None;
    if let Some(said) = said {
        spans.push(Span::styled("│ sandbox ", t.status));
        if app.session.info.sandbox_warning.is_none() && !layers.is_empty() {
            layers_at = Some(spans.len());
        }
        spans.push(said);
    }
    layers_at
}

/// A status line wider than the screen gives way where it says least: the
/// sandbox's layers become their count, then the model's name is cut (the
/// badge, the warnings, the tokens and the time stay whole).
fn fit_status(
    spans: &mut [Span<'static>],
    width: usize,
    layers_at: Option<usize>,
    model_at: usize,
    layers: usize,
) {
    let wide = |spans: &[Span]| spans.iter().map(Span::width).sum::<usize>();
    if wide(spans) <= width {
        return;
    }
    if let Some(i) = layers_at {
        spans[i].content = format!(" {layers} layers ").into();
    }
    let over = wide(spans).saturating_sub(width);
    if over == 0 || model_at >= spans.len() {
        return;
    }
    let model = spans[model_at].content.trim().to_string();
    let keep = model.chars().count().saturating_sub(over + 1);
    if keep >= 8 {
        let cut: String = model.chars().take(keep).collect();
        spans[model_at].content = format!(" {}… ", cut.trim_end()).into();
    }
}

/// The second line: what was just said, what the paused engine waits for,
/// or the keys of the focused pane, as many as `width` holds (`? help`
/// and `q quit` always: the help lists the rest).
fn hint_line(app: &App, width: usize) -> Line<'static> {
    let t = &app.theme;
    if let Some((level, text)) = &app.flash {
        return Line::styled(
            format!(" {text}"),
            match level {
                NoticeLevel::Info => t.accent,
                NoticeLevel::Warning => t.warning,
                NoticeLevel::Error => t.error,
            },
        );
    }
    if let Some(step) = app.engine_paused() {
        let in_code = (app.focus == Focus::Code).then(|| app.panes.code.tab());
        return Line::styled(paused_hint(step, in_code), t.warning);
    }
    // The log pager and the inspector cover the panes and take every key:
    // their keys, not the focused pane's nor the workbench's.
    if let Some((title, rows)) = app.popups.last().and_then(|p| p.view().footer()) {
        let mut spans = vec![Span::styled(format!(" {title} "), t.title)];
        for (i, row) in rows.iter().enumerate() {
            let sep = if i + 1 < rows.len() { " · " } else { "" };
            spans.push(Span::styled(format!("{} ", row.label), t.accent));
            spans.push(Span::styled(format!("{}{sep}", row.short), t.dim));
        }
        return Line::from(spans);
    }
    use unicode_width::UnicodeWidthStr;
    let title = format!(" {} ", app.panes.get(app.focus).title());
    let [pane, zoom, help, quit] = keymap::FOOTER;
    let hints = |acts: &[GlobalAct]| -> Vec<String> {
        keymap::act_hints(keymap::COMMON, acts)
            .into_iter()
            .map(|(k, s)| format!("{k} {s}"))
            .collect()
    };
    let mut essential = hints(&[help, quit]);
    if app.zoom {
        // Zoomed (a projector's view): how to come back, always.
        essential.insert(0, "Esc unzoom".to_string());
    }
    if app.opened_from_list()
        && let Some(q) = essential.last_mut()
    {
        // q goes back to the list this session was opened from.
        *q = q.replace(" quit", " back to the list");
    }
    let essential = essential.join(" · ");
    let mut room = width.saturating_sub(title.width() + essential.width());
    // What fits, in this order: the pane's own keys, then moving between
    // panes and zooming.
    let mut take = |text: String| -> Option<String> {
        let cost = text.width() + 3;
        (cost <= room).then(|| {
            room -= cost;
            text
        })
    };
    let rows: Vec<(String, String)> = pane_rows(app)
        .into_iter()
        .take(4)
        .filter(|r| !r.label.is_empty())
        .map_while(|r| {
            let both = format!("{} {}", r.label, r.short);
            take(both).map(|_| (r.label.to_string(), r.short.to_string()))
        })
        .collect();
    let moves_asked: &[GlobalAct] = if app.zoom { &[pane] } else { &[pane, zoom] };
    let moves: Vec<String> = hints(moves_asked)
        .into_iter()
        .map_while(&mut take)
        .collect();
    let mut spans = vec![Span::styled(title, t.title)];
    for (label, short) in rows {
        spans.push(Span::styled(format!("{label} "), t.accent));
        spans.push(Span::styled(format!("{short} · "), t.dim));
    }
    let always: Vec<String> = moves.into_iter().chain([essential]).collect();
    spans.push(Span::styled(always.join(" · "), t.dim));
    Line::from(spans)
}

/// What the paused engine waits before, and the keys that answer it
/// (before a model call: its prompt, to see and edit; in the Code pane,
/// `in_code` its tab, e edits what the tab shows).
fn paused_hint(step: &codeloop_session::Step, in_code: Option<CodeTab>) -> String {
    let before_a_call = matches!(
        step,
        codeloop_session::Step::ModelCall { .. } | codeloop_session::Step::Prompt { .. }
    );
    let doubted = matches!(step, codeloop_session::Step::SuspectTest { .. });
    let edit = GlobalAct::Steer(SteerAct::EditCode);
    let mut offers: Vec<String> = keymap::WHILE_PAUSED
        .iter()
        .flat_map(|act| {
            keymap::act_hints(keymap::STEER, std::slice::from_ref(act))
                .into_iter()
                .map(move |(k, s)| match act {
                    // Before a model call, e edits its prompt.
                    a if *a == edit && in_code == Some(CodeTab::Tests) => {
                        format!("{k} edit the tests")
                    }
                    a if *a == edit && in_code.is_some() => format!("{k} edit the code"),
                    a if *a == edit && before_a_call => format!("{k} edit the prompt"),
                    a if *a == edit && doubted => format!("{k} edit the tests"),
                    _ => format!("{k} {s}"),
                })
        })
        .collect();
    // Before a model call: its prompt, to see and edit (the inspector).
    if let (true, Some(m)) = (
        before_a_call,
        keymap::label_of(keymap::INSPECT, &keymap::GlobalAct::Inspect),
    ) {
        offers.insert(0, format!("{m} its prompt"));
    }
    format!(
        " ⏸ paused before {}: {}",
        words::step(step),
        offers.join(" · ")
    )
}

/// The live badge: ready, at work, or what the session came to (the same
/// `Outcome` the graph and the report give).
fn live_badge(l: &super::Live, s: &codeloop_session::State) -> String {
    let outcome = Outcome::of(s);
    match (&l.ended, outcome) {
        _ if outcome.ended() => {
            format!(" {} {} ", outcome.symbol(), outcome.label().to_uppercase())
        }
        (Some(_), _) => " ENDED ".to_string(),
        (None, _) if l.started => " LIVE ".to_string(),
        (None, _) => " READY ".to_string(),
    }
}

/// The pause the status bar shows: the live engine's, wherever the cursor
/// is; in review and replay, the one at the cursor.
fn paused_step(app: &App) -> Option<&codeloop_session::Step> {
    match app.session.mode {
        Mode::Live(_) => app.engine_paused(),
        Mode::Review | Mode::Replay(_) => app.state().paused.as_ref(),
    }
}

fn fmt_elapsed(ms: u64) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}", s / 60, s % 60)
}

fn fmt_speed(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x as u64)
    } else {
        format!("{x}")
    }
}

fn human_count(n: u64) -> String {
    if n >= 10_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        n.to_string()
    }
}
