//! The workflow graph: the planned functions by level (a node's dependencies
//! are on earlier levels), each with its live state and iteration count.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::super::app::{App, Focus, Mode};
use super::{block, status_style, status_symbol, title};
use crate::session::Dag;

/// One row of the graph pane.
#[derive(Debug, Clone, PartialEq)]
pub enum Row {
    Level(usize),
    Node(String),
}

/// The rows in drawing order (shared with mouse hit tests).
pub fn rows(app: &App) -> Vec<Row> {
    let specs = &app.state.specs;
    if specs.is_empty() {
        return Vec::new();
    }
    let levels = match Dag::new(specs.clone()) {
        Ok(dag) => dag.levels(),
        Err(_) => vec![specs.iter().map(|s| s.name.clone()).collect()],
    };
    let mut rows = Vec::new();
    for (i, level) in levels.into_iter().enumerate() {
        rows.push(Row::Level(i));
        rows.extend(level.into_iter().map(Row::Node));
    }
    rows
}

pub fn render(app: &App, area: Rect, frame: &mut Frame) {
    let t = &app.theme;
    let s = &app.state;
    let welcome = matches!(&app.mode, Mode::Live(l) if !l.started);
    let mut lines: Vec<Line> = Vec::new();
    let mut detail = String::new();
    if welcome {
        lines.push(Line::styled(
            format!("Model: {}", app.info.model_label),
            t.dim,
        ));
        if app.info.demos.is_empty() {
            lines.push(Line::styled("No bundled demos in this build.", t.dim));
        } else {
            lines.push(Line::styled(
                "Run a demo (a real failure, caught by a real run, repaired):",
                t.text,
            ));
            let width = usize::from(area.width.saturating_sub(2));
            for (i, d) in app.info.demos.iter().enumerate().take(9) {
                lines.push(Line::from(vec![
                    Span::styled(format!("  {}  ", i + 1), t.accent),
                    Span::styled(d.name.clone(), t.title),
                ]));
                for piece in super::wrap(&d.title, width.saturating_sub(5)) {
                    lines.push(Line::styled(format!("     {piece}"), t.text));
                }
            }
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            "Or press i, write a task in the Task pane, and Ctrl-S.",
            t.dim,
        ));
    } else if s.specs.is_empty() {
        match &s.plan_error {
            Some(e) => lines.push(Line::styled(format!("plan rejected: {e}"), t.error)),
            None => {
                let planning = s
                    .calls
                    .values()
                    .rev()
                    .find(|c| c.purpose == crate::session::Purpose::Plan && !c.done);
                lines.push(Line::styled(
                    match planning {
                        Some(c) => format!("planning… ({} characters so far)", c.reply.len()),
                        None => "waiting for the plan…".into(),
                    },
                    t.dim,
                ));
            }
        }
    } else {
        let passed = s
            .nodes
            .values()
            .filter(|n| n.status == crate::session::NodeStatus::Passed)
            .count();
        detail = format!("{passed}/{} passed", s.nodes.len());
        let name_w = s
            .specs
            .iter()
            .map(|sp| sp.name.len())
            .max()
            .unwrap_or(4)
            .min(28);
        for row in rows(app) {
            match row {
                Row::Level(i) => lines.push(Line::styled(format!("level {}", i + 1), t.dim)),
                Row::Node(name) => {
                    let Some(n) = s.nodes.get(&name) else {
                        continue;
                    };
                    let selected = app.selected.as_deref() == Some(name.as_str());
                    let st = status_style(app, n.status);
                    let differs = n
                        .last_run
                        .and_then(|id| app.reruns.get(&id))
                        .is_some_and(|m| m.differs());
                    let mut spans = vec![
                        Span::raw(if selected { "›" } else { " " }),
                        Span::styled(format!(" {} ", status_symbol(n.status)), st),
                        Span::styled(
                            format!("{name:<name_w$}"),
                            if selected { t.title } else { t.text },
                        ),
                        Span::styled(format!(" {:<10}", n.status.label()), st),
                        Span::styled(
                            match n.iteration() {
                                0 => "     ".to_string(),
                                i => format!(" it {i:<2}"),
                            },
                            t.dim,
                        ),
                    ];
                    if differs {
                        spans.push(Span::styled(" ≠live", t.warning));
                    }
                    if !n.spec.depends_on.is_empty() {
                        spans.push(Span::styled(
                            format!(" ← {}", n.spec.depends_on.join(", ")),
                            t.dim,
                        ));
                    }
                    let mut line = Line::from(spans);
                    if selected {
                        line = line.style(t.selection);
                    }
                    lines.push(line);
                }
            }
        }
        if let Some(f) = &s.finished {
            lines.push(Line::raw(""));
            let text = format!("{} {}", if f.passed { "✓" } else { "✗" }, f.summary);
            for piece in super::wrap(&text, usize::from(area.width.saturating_sub(2))) {
                lines.push(Line::styled(piece, if f.passed { t.ok } else { t.error }));
            }
        }
    }
    let scroll = if welcome { 0 } else { scroll(app, area.height) };
    let mut p = Paragraph::new(lines).scroll((scroll as u16, 0));
    if welcome {
        p = p.wrap(ratatui::widgets::Wrap { trim: false });
    }
    let p = p.block(block(app, Focus::Graph, title(app, "Workflow", detail)));
    frame.render_widget(p, area);
}

/// The node drawn on `row` (0 = the first line inside the frame).
pub fn row_node(app: &App, row: usize, pane_height: u16) -> Option<String> {
    match rows(app).into_iter().nth(row + scroll(app, pane_height))? {
        Row::Node(n) => Some(n),
        Row::Level(_) => None,
    }
}

/// Rows scrolled off the top so the selected node stays in view.
fn scroll(app: &App, pane_height: u16) -> usize {
    let height = usize::from(pane_height.saturating_sub(2));
    let selected = rows(app)
        .iter()
        .position(|r| matches!(r, Row::Node(n) if app.selected.as_deref() == Some(n.as_str())))
        .unwrap_or(0);
    selected.saturating_sub(height.saturating_sub(1))
}
