//! One file per pane. Each draws from `&App` only.

pub mod code;
pub mod graph;
pub mod history;
pub mod output;
pub mod task;

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType};

use super::app::{App, Focus};

/// The frame of a pane: the focused one stands out.
pub fn block<'a>(app: &App, focus: Focus, title: Line<'a>) -> Block<'a> {
    let focused = app.focus == focus;
    Block::bordered()
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Plain
        })
        .border_style(if focused {
            app.theme.border_focused
        } else {
            app.theme.border
        })
        .title(title)
}

/// A title: the pane's name, then details.
pub fn title<'a>(app: &App, name: &'a str, detail: String) -> Line<'a> {
    let mut spans = vec![Span::styled(format!(" {name} "), app.theme.title)];
    if !detail.is_empty() {
        spans.push(Span::styled(format!("{detail} "), app.theme.dim));
    }
    Line::from(spans)
}

/// Wrap `text` to `width` columns (by characters' display width).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    use unicode_width::UnicodeWidthChar;
    let width = width.max(8);
    let mut out = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        let mut w = 0;
        for word in para.split(' ') {
            let ww: usize = word.chars().map(|c| c.width().unwrap_or(0)).sum();
            if w > 0 && w + 1 + ww > width {
                out.push(std::mem::take(&mut line));
                w = 0;
            }
            if w > 0 {
                line.push(' ');
                w += 1;
            }
            if ww > width {
                // A word longer than the line: cut it.
                for c in word.chars() {
                    let cw = c.width().unwrap_or(0);
                    if w + cw > width {
                        out.push(std::mem::take(&mut line));
                        w = 0;
                    }
                    line.push(c);
                    w += cw;
                }
            } else {
                line.push_str(word);
                w += ww;
            }
        }
        out.push(line);
    }
    out
}

/// A style for a node status.
pub fn status_style(app: &App, status: crate::session::NodeStatus) -> Style {
    use crate::session::NodeStatus;
    let t = &app.theme;
    match status {
        NodeStatus::Pending => t.dim,
        NodeStatus::Generating | NodeStatus::Checking | NodeStatus::Running => t.running,
        NodeStatus::Passed => t.ok,
        NodeStatus::Failed | NodeStatus::GaveUp => t.error,
        NodeStatus::Blocked => t.warning,
    }
}

pub fn status_symbol(status: crate::session::NodeStatus) -> &'static str {
    use crate::session::NodeStatus;
    match status {
        NodeStatus::Pending => "·",
        NodeStatus::Generating => "✎",
        NodeStatus::Checking => "…",
        NodeStatus::Running => "▶",
        NodeStatus::Passed => "✓",
        NodeStatus::Failed => "✗",
        NodeStatus::Blocked => "⊘",
        NodeStatus::GaveUp => "✗",
    }
}
