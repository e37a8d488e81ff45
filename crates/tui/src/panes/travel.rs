//! The question before going on from another moment: fork the reviewed
//! session at the cursor (F), or rewind the live session's node to its
//! previous iteration (U). It says what will happen, where, and that the
//! session left behind stays; y or Enter says yes, any other key no.

use std::path::PathBuf;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::{fit_to_lines, popup_area};
use crate::theme::Theme;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TravelKind {
    /// A new session from record `at` of the reviewed one.
    ForkHere,
    /// The live session cancelled, and a new branch from record `at`.
    Rewind { node: String },
}

/// A fork or a rewind waiting for a yes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Travel {
    pub(crate) kind: TravelKind,
    /// The tape the new session forks from.
    pub(crate) tape: PathBuf,
    /// The record it forks at.
    pub(crate) at: u64,
    /// What will happen, in words.
    pub(crate) question: String,
}

impl Travel {
    pub(crate) fn title(&self) -> &'static str {
        match self.kind {
            TravelKind::ForkHere => " Fork here? ",
            TravelKind::Rewind { .. } => " Rewind? ",
        }
    }

    pub(crate) fn render(&self, theme: &Theme, frame: &mut Frame) {
        let mut lines: Vec<Line> = self
            .question
            .lines()
            .map(|l| Line::styled(l.to_string(), theme.text))
            .collect();
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            "y / Enter: yes · any other key: no",
            theme.dim,
        ));
        let area = popup_area(frame.area(), 80, 100);
        let area = Rect {
            width: area.width.min(76),
            x: frame.area().width.saturating_sub(area.width.min(76)) / 2,
            ..area
        };
        let area = fit_to_lines(area, &lines);
        frame.render_widget(Clear, area);
        frame.render_widget(
            Paragraph::new(lines).wrap(Wrap { trim: false }).block(
                Block::bordered()
                    .title(self.title())
                    .border_style(theme.warning),
            ),
            area,
        );
    }
}

impl super::popup::PopupView for Travel {
    fn render(&self, cx: &super::popup::PopupCtx, frame: &mut Frame) {
        Self::render(self, cx.theme, frame);
    }
}
