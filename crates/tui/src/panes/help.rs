//! The `?` popup: the rows of the focused pane's table, then the workbench's
//! tables of this mode. The same rows the keys are dispatched by. What a
//! key does is wrapped beside its keys, and a help taller than the screen
//! (80x24 in a replay) scrolls; any other key closes it.

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::{Scroll, popup_area, scroll_keys, wrap};
use crate::keymap::{self, Binding, Row};
use crate::theme::Theme;

/// What the popup lists.
pub(crate) struct HelpContent<'a> {
    pub(crate) pane: &'a str,
    pub(crate) pane_rows: Vec<Row>,
    /// "Everywhere (review: read-only)".
    pub(crate) everywhere: &'a str,
    pub(crate) global_rows: Vec<Row>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HelpAct {
    Scroll(Scroll),
}

/// The keys that scroll a help taller than the screen.
pub(crate) const KEYS: &[Binding<HelpAct>] = &[Binding {
    label: "↑ ↓ PgUp PgDn",
    does: "scroll the help",
    short: "more",
    keys: scroll_keys!(HelpAct::Scroll),
}];

/// The open help: how far it is scrolled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Help {
    top: usize,
}

/// Columns the keys take before what they do.
const LABEL: usize = 16;

impl Help {
    /// A key: true when it scrolled a help taller than the screen; false
    /// when it closes the help (any other key, or any key when it fits).
    pub(crate) fn on_key(&mut self, key: &KeyEvent, content: &HelpContent, screen: Rect) -> bool {
        let Some(HelpAct::Scroll(scroll)) = keymap::lookup(KEYS, key) else {
            return false;
        };
        let (area, shown) = area(screen, content);
        let total = lines(content, &Theme::no_color(), area.width).len();
        if total <= shown {
            return false;
        }
        let last = total - shown;
        let page = shown.saturating_sub(1).max(1);
        self.top = match scroll {
            Scroll::Up => self.top.saturating_sub(1),
            Scroll::Down => self.top + 1,
            Scroll::PageUp => self.top.saturating_sub(page),
            Scroll::PageDown => self.top + page,
        }
        .min(last);
        true
    }

    pub(crate) fn render(&self, theme: &Theme, content: &HelpContent, frame: &mut Frame) {
        let t = theme;
        let (area, shown) = area(frame.area(), content);
        let mut lines = lines(content, t, area.width);
        let total = lines.len();
        let top = self.top.min(total.saturating_sub(shown));
        lines.drain(..top);
        let mut block = Block::bordered()
            .border_style(t.border_focused)
            .title(Line::styled(" Keys ", t.title));
        if total > shown {
            let more = format!(
                " {} {} · any other key closes ",
                KEYS[0].label, KEYS[0].short
            );
            block = block.title_bottom(Line::styled(more, t.dim));
        }
        frame.render_widget(Clear, area);
        frame.render_widget(Paragraph::new(lines).block(block), area);
    }
}

/// Where the help goes on `screen`, and how many of its lines show.
fn area(screen: Rect, content: &HelpContent) -> (Rect, usize) {
    // Narrow screens give it nearly all their width, so less wraps.
    let percent = if screen.width < 120 { 94 } else { 70 };
    let area = popup_area(screen, percent, 100);
    let total = lines(content, &Theme::no_color(), area.width).len();
    let height = (total as u16 + 2).min(screen.height);
    let area = Rect {
        y: area.y + (area.height.saturating_sub(height)) / 2,
        height,
        ..area
    };
    (area, usize::from(height.saturating_sub(2)))
}

/// The help's lines in a popup `width` columns wide (borders included).
fn lines<'a>(content: &HelpContent, t: &Theme, width: u16) -> Vec<Line<'a>> {
    let room = usize::from(width.saturating_sub(2)).saturating_sub(LABEL + 2);
    let key_lines = |r: &Row| -> Vec<Line<'a>> {
        let mut parts = wrap(r.does, room);
        if parts.is_empty() {
            parts.push(String::new());
        }
        parts
            .into_iter()
            .enumerate()
            .map(|(i, part)| {
                let label = if i == 0 { r.label } else { "" };
                Line::from(vec![
                    Span::styled(format!("  {label:<LABEL$}"), t.accent),
                    Span::styled(part, t.text),
                ])
            })
            .collect()
    };
    let mut lines = vec![Line::styled(format!("{} pane", content.pane), t.title)];
    lines.extend(content.pane_rows.iter().flat_map(key_lines));
    lines.push(Line::raw(""));
    lines.push(Line::styled(content.everywhere.to_string(), t.title));
    lines.extend(content.global_rows.iter().flat_map(key_lines));
    lines.push(Line::raw(""));
    lines.push(Line::styled("any key closes this help", t.dim));
    lines
}

impl super::popup::PopupView for Help {
    fn render(&self, cx: &super::popup::PopupCtx, frame: &mut Frame) {
        Self::render(self, cx.theme, &(cx.help)(), frame);
    }
}
