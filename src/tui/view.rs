//! The whole screen: layout, the five panes, the status bar, and the popups.
//! Drawing only: no I/O, no highlighting, no mutation.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::app::{App, Confirm, Focus, Mode};
use super::help;
use super::panes;

/// Where each pane is (zero-sized when hidden by zoom).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Areas {
    pub task: Rect,
    pub graph: Rect,
    pub code: Rect,
    pub output: Rect,
    pub history: Rect,
    pub status: Rect,
}

impl Areas {
    pub fn of(&self, focus: Focus) -> Rect {
        match focus {
            Focus::Task => self.task,
            Focus::Graph => self.graph,
            Focus::Code => self.code,
            Focus::Output => self.output,
            Focus::History => self.history,
        }
    }

    pub fn pane_at(&self, pos: Position) -> Option<Focus> {
        Focus::ALL.into_iter().find(|f| self.of(*f).contains(pos))
    }
}

pub fn layout(screen: Rect, zoom: Option<Focus>, app: &App) -> Areas {
    let [body, status] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(2)]).areas(screen);
    let mut areas = Areas {
        status,
        ..Areas::default()
    };
    if let Some(f) = zoom {
        match f {
            Focus::Task => areas.task = body,
            Focus::Graph => areas.graph = body,
            Focus::Code => areas.code = body,
            Focus::Output => areas.output = body,
            Focus::History => areas.history = body,
        }
        return areas;
    }
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(38), Constraint::Fill(1)]).areas(body);
    let task_h = match &app.mode {
        Mode::Live(l) if !l.started => 8,
        _ => {
            let width = usize::from((left.width).saturating_sub(2));
            let lines = panes::wrap(&app.state.task, width).len() + app.state.inputs.len();
            (lines as u16 + 2).clamp(3, 7)
        }
    };
    // The welcome screen lists the demos in the graph's place: give it room.
    let (graph_share, history_share) = match &app.mode {
        Mode::Live(l) if !l.started => (3, 1),
        _ => (2, 3),
    };
    let [task, graph, history] = Layout::vertical([
        Constraint::Length(task_h),
        Constraint::Fill(graph_share),
        Constraint::Fill(history_share),
    ])
    .areas(left);
    let [code, output] =
        Layout::vertical([Constraint::Percentage(60), Constraint::Fill(1)]).areas(right);
    Areas {
        task,
        graph,
        code,
        output,
        history,
        status,
    }
}

/// Draw the app.
pub fn render(app: &App, frame: &mut Frame) {
    let areas = layout(frame.area(), app.zoom.then_some(app.focus), app);
    for f in Focus::ALL {
        let area = areas.of(f);
        if area.area() == 0 {
            continue;
        }
        match f {
            Focus::Task => panes::task::render(app, area, frame),
            Focus::Graph => panes::graph::render(app, area, frame),
            Focus::Code => panes::code::render(app, area, frame),
            Focus::Output => panes::output::render(app, area, frame),
            Focus::History => panes::history::render(app, area, frame),
        }
    }
    status_bar(app, areas.status, frame);
    if let Some(editor) = &app.editor {
        let single = matches!(editor.target, super::app::EditTarget::Attach);
        let area = popup(frame.area(), 80, if single { 10 } else { 75 });
        let area = if single {
            Rect { height: 3, ..area }
        } else {
            area
        };
        frame.render_widget(Clear, area);
        let block = Block::bordered()
            .border_style(app.theme.border_focused)
            .title(Line::styled(
                format!(" {} ", editor.target.title()),
                app.theme.title,
            ))
            .title_bottom(Line::styled(
                if single {
                    " Enter attach · Esc discard "
                } else {
                    " Ctrl-S send to the engine · Esc discard "
                },
                app.theme.dim,
            ));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        frame.render_widget(&editor.textarea, inner);
    }
    if let Some(c) = app.confirm {
        let text = match c {
            Confirm::CancelSession => "Cancel the session? What is done stays on the tape.  y / n",
            Confirm::Quit => "A session is running. Cancel it and quit?  y / n",
        };
        let area = popup(frame.area(), 50, 10);
        let area = Rect {
            height: 3.min(area.height),
            ..area
        };
        frame.render_widget(Clear, area);
        frame.render_widget(
            Paragraph::new(Line::styled(text, app.theme.text))
                .wrap(Wrap { trim: true })
                .block(Block::bordered().border_style(app.theme.warning)),
            area,
        );
    }
    if app.help {
        help_popup(app, frame);
    }
}

fn popup(screen: Rect, percent_x: u16, percent_y: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Percentage(percent_y)])
        .flex(Flex::Center)
        .areas(screen);
    let [h] = Layout::horizontal([Constraint::Percentage(percent_x)])
        .flex(Flex::Center)
        .areas(v);
    h
}

fn help_popup(app: &App, frame: &mut Frame) {
    let t = &app.theme;
    let mut lines = vec![Line::styled(format!("{} pane", app.focus.title()), t.title)];
    let key_line = |(k, d): help::Key| {
        Line::from(vec![
            Span::styled(format!("  {k:<16}"), t.accent),
            Span::styled(d.to_string(), t.text),
        ])
    };
    lines.extend(help::pane(app.focus, &app.mode).into_iter().map(key_line));
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        match app.mode {
            Mode::Live(_) => "Everywhere (live session)",
            Mode::Review => "Everywhere (review: read-only)",
            Mode::Replay(_) => "Everywhere (replay)",
        },
        t.title,
    ));
    lines.extend(help::global(&app.mode).into_iter().map(key_line));
    lines.push(Line::raw(""));
    lines.push(Line::styled("any key closes this help", t.dim));
    let height = (lines.len() as u16 + 2).min(frame.area().height);
    let area = popup(frame.area(), 70, 100);
    let area = Rect {
        y: area.y + (area.height.saturating_sub(height)) / 2,
        height,
        ..area
    };
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::bordered()
                .border_style(t.border_focused)
                .title(Line::styled(" Keys ", t.title)),
        ),
        area,
    );
}

fn status_bar(app: &App, area: Rect, frame: &mut Frame) {
    let t = &app.theme;
    let s = &app.state;
    let mut spans: Vec<Span> = Vec::new();
    let badge = match &app.mode {
        Mode::Live(_) if !app.at_end() => format!(
            " REVIEWING {}/{} · End: live ",
            app.cursor(),
            app.records().len()
        ),
        Mode::Live(l) => match (&l.ended, &s.finished) {
            (_, Some(_)) => " DONE ".to_string(),
            (Some(_), None) => " ENDED ".to_string(),
            (None, None) if l.started => " LIVE ".to_string(),
            (None, None) => " READY ".to_string(),
        },
        Mode::Review => format!(" REVIEW {}/{} ", app.cursor(), app.records().len()),
        Mode::Replay(r) => format!(
            " REPLAY {} ×{} {}/{} ",
            if r.playing { "▶" } else { "⏸" },
            fmt_speed(r.speed),
            app.cursor(),
            app.records().len()
        ),
    };
    spans.push(Span::styled(badge, t.selection));
    if s.paused.is_some() {
        spans.push(Span::styled(
            " ⏸ PAUSED ",
            t.warning.add_modifier(ratatui::style::Modifier::REVERSED),
        ));
    }
    if let Some(line) = app.info.truncated_line {
        spans.push(Span::styled(
            format!(" tape cut off at line {line} "),
            t.warning,
        ));
    }
    let model = if s.config.provider.is_empty() {
        app.info.model_label.clone()
    } else {
        model_label(&s.config)
    };
    spans.push(Span::styled(format!(" {model} "), t.status));
    let tokens = s.usage.prompt_tokens + s.usage.completion_tokens;
    spans.push(Span::styled(
        format!("│ {} tokens ", human_count(tokens)),
        t.status,
    ));
    let layers = if s.config.sandbox_layers.is_empty() {
        &app.info.sandbox_layers
    } else {
        &s.config.sandbox_layers
    };
    spans.push(Span::styled("│ sandbox ", t.status));
    if layers.is_empty() {
        spans.push(Span::styled(" none reported ", t.warning));
    } else {
        spans.push(Span::styled(format!(" {} ", layers.join("+")), t.ok));
    }
    spans.push(Span::styled(
        format!(" │ {} ", fmt_elapsed(elapsed_ms(app))),
        t.status,
    ));
    if s.step_mode || (app.step_armed() && s.events_applied == 0) {
        spans.push(Span::styled("│ step mode ", t.warning));
    }
    let first = Line::from(spans).style(t.status);

    let paused = s
        .paused
        .as_ref()
        .filter(|_| !app.read_only() && app.engine_alive());
    let second = match &app.flash {
        Some((level, text)) => Line::styled(
            format!(" {text}"),
            match level {
                crate::session::NoticeLevel::Info => t.accent,
                crate::session::NoticeLevel::Warning => t.warning,
                crate::session::NoticeLevel::Error => t.error,
            },
        ),
        None if paused.is_some() => Line::styled(
            format!(
                " ⏸ paused before {}: a approve · x skip · e edit code · h hint · r re-run · s step mode off",
                paused.map(describe_step).unwrap_or_default()
            ),
            t.warning,
        ),
        None => {
            let mut spans = vec![Span::styled(format!(" {} ", app.focus.title()), t.title)];
            for (k, d) in help::pane(app.focus, &app.mode).into_iter().take(4) {
                if k.is_empty() {
                    continue;
                }
                spans.push(Span::styled(format!("{k} "), t.accent));
                spans.push(Span::styled(format!("{} · ", short(d)), t.dim));
            }
            spans.push(Span::styled("Tab pane · z zoom · ? help · q quit", t.dim));
            Line::from(spans)
        }
    };
    frame.render_widget(Paragraph::new(vec![first, second]), area);
}

/// The first clause of a key description, for the status bar.
fn short(d: &str) -> &str {
    d.split([':', '(']).next().unwrap_or(d).trim()
}

pub fn model_label(c: &crate::session::ConfigSummary) -> String {
    match c.provider.as_str() {
        "demo" => "demo model: authored replies, offline".to_string(),
        "scripted" => format!("scripted model ({})", c.endpoint),
        _ => format!("{} at {}", c.model, c.endpoint),
    }
}

fn elapsed_ms(app: &App) -> u64 {
    match &app.mode {
        Mode::Live(l) if app.at_end() && app.session_running() => l
            .since
            .map(|s| s.elapsed().as_millis() as u64)
            .unwrap_or(app.state.t_ms),
        _ => app.state.t_ms,
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

fn describe_step(step: &crate::session::Step) -> String {
    use crate::session::{Purpose, Step};
    match step {
        Step::ModelCall { purpose } => match purpose {
            Purpose::Plan => "the planning call".into(),
            Purpose::Tests { node } => format!("writing tests for {node}"),
            Purpose::Code { node } => format!("writing code for {node}"),
            Purpose::Reflect { node } => format!("reflecting on {node}"),
            Purpose::Repair { node } => format!("repairing {node}"),
        },
        Step::Run {
            node: Some(n),
            iteration,
        } => format!("running {n} (iteration {iteration})"),
        Step::Run { node: None, .. } => "running the program".into(),
        Step::TestFix { node, .. } => format!("changing the tests of {node} (the model's fix)"),
    }
}

/// The node drawn on a row of the graph pane (for mouse clicks).
pub fn graph_row_node(app: &App, row: usize, pane_height: u16) -> Option<String> {
    panes::graph::row_node(app, row, pane_height)
}
