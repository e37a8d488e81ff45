//! A message of several lines the person must read (why a task cannot start,
//! and what to do); any key closes it.

use ratatui::Frame;
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::{fit_to_lines, popup_area};
use crate::theme::Theme;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub title: String,
    pub text: String,
}

impl Message {
    pub(crate) fn render(&self, theme: &Theme, frame: &mut Frame) {
        let mut lines: Vec<Line> = self
            .text
            .lines()
            .map(|l| Line::styled(l.to_string(), theme.text))
            .collect();
        lines.push(Line::raw(""));
        lines.push(Line::styled("any key closes this message", theme.dim));
        let area = popup_area(frame.area(), 90, 100);
        let area = fit_to_lines(area, &lines);
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

impl super::popup::PopupView for Message {
    fn render(&self, cx: &super::popup::PopupCtx, frame: &mut Frame) {
        Self::render(self, cx.theme, frame);
    }
}
