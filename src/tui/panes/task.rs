//! The task: an editor before a session starts, the task as recorded after.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::super::app::{App, Focus, Mode};
use super::{block, title};

pub fn render(app: &App, area: Rect, frame: &mut Frame) {
    let editable = matches!(&app.mode, Mode::Live(l) if !l.started);
    if editable {
        let detail = if app.focus == Focus::Task {
            "Ctrl-S start · Ctrl-O attach".to_string()
        } else {
            "i or Tab to write".to_string()
        };
        let outer = block(app, Focus::Task, title(app, "Task", detail));
        let inner = outer.inner(area);
        frame.render_widget(outer, area);
        let [edit, files] = Layout::vertical([
            Constraint::Fill(1),
            Constraint::Length(u16::from(!app.attached.is_empty())),
        ])
        .areas(inner);
        frame.render_widget(&app.task, edit);
        if !app.attached.is_empty() {
            let names: Vec<String> = app
                .attached
                .iter()
                .map(|p| {
                    p.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                })
                .collect();
            frame.render_widget(
                Paragraph::new(Line::styled(
                    format!("attached: {}", names.join(", ")),
                    app.theme.dim,
                )),
                files,
            );
        }
        return;
    }
    let s = &app.state;
    let mut lines: Vec<Line> = s
        .task
        .lines()
        .map(|l| Line::styled(l.to_string(), app.theme.text))
        .collect();
    if s.task.is_empty() {
        lines.push(Line::styled("starting…", app.theme.dim));
    }
    for f in &s.inputs {
        lines.push(Line::from(vec![
            Span::styled("attached ", app.theme.dim),
            Span::styled(f.name.clone(), app.theme.accent),
            Span::styled(format!(" ({})", human_bytes(f.size_bytes)), app.theme.dim),
        ]));
    }
    let p = Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(block(app, Focus::Task, title(app, "Task", String::new())));
    frame.render_widget(p, area);
}

pub fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 => format!("{:.1} MB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}
