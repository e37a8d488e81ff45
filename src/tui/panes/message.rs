//! A message of several lines the person must read (why a task cannot start,
//! and what to do); any key closes it.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::popup_area;
use crate::tui::theme::Theme;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub title: String,
    pub text: String,
}

impl Message {
    pub fn render(&self, theme: &Theme, frame: &mut Frame) {
        let mut lines: Vec<Line> = self
            .text
            .lines()
            .map(|l| Line::styled(l.to_string(), theme.text))
            .collect();
        lines.push(Line::raw(""));
        lines.push(Line::styled("any key closes this message", theme.dim));
        let area = popup_area(frame.area(), 90, 100);
        // Room for the wrapped lines, the border, and no more.
        let inner = area.width.saturating_sub(2).max(1) as usize;
        let needed: usize = lines.iter().map(|l| l.width().max(1).div_ceil(inner)).sum();
        let height = (needed as u16 + 2).min(area.height);
        let area = Rect {
            y: area.y + area.height.saturating_sub(height) / 2,
            height,
            ..area
        };
        frame.render_widget(Clear, area);
        frame.render_widget(
            Paragraph::new(lines).wrap(Wrap { trim: false }).block(
                Block::bordered()
                    .border_style(theme.warning)
                    .title(Line::styled(format!(" {} ", self.title), theme.title)),
            ),
            area,
        );
    }
}
