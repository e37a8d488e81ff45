//! The `?` popup: the rows of the focused pane's table, then the workbench's
//! tables of this mode. The same rows the keys are dispatched by.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::popup_area;
use crate::tui::keymap::Row;
use crate::tui::theme::Theme;

/// What the popup lists.
pub struct HelpContent<'a> {
    pub pane: &'a str,
    pub pane_rows: &'a [Row],
    /// "Everywhere (review: read-only)".
    pub everywhere: &'a str,
    pub global_rows: &'a [Row],
}

pub fn render(theme: &Theme, content: &HelpContent, frame: &mut Frame) {
    let t = theme;
    let mut lines = vec![Line::styled(format!("{} pane", content.pane), t.title)];
    let key_line = |r: &Row| {
        Line::from(vec![
            Span::styled(format!("  {:<16}", r.label), t.accent),
            Span::styled(r.does.to_string(), t.text),
        ])
    };
    lines.extend(content.pane_rows.iter().map(key_line));
    lines.push(Line::raw(""));
    lines.push(Line::styled(content.everywhere.to_string(), t.title));
    lines.extend(content.global_rows.iter().map(key_line));
    lines.push(Line::raw(""));
    lines.push(Line::styled("any key closes this help", t.dim));
    let height = (lines.len() as u16 + 2).min(frame.area().height);
    let area = popup_area(frame.area(), 70, 100);
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
