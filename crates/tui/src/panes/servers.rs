//! The question when several model servers answer on this machine and none
//! is configured: which one the next session uses. It lists them (what
//! each is, the model it would answer with, its address); ↑/↓ or a
//! number picks, Enter uses the one picked, Esc leaves it for later (the
//! palette's "model server…" asks again, and so does a task sent before a
//! choice). The bundled demos play without one.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::{Handled, fit_to_lines, popup_area};
use crate::app::FoundServer;
use crate::theme::Theme;

/// The servers to choose from, and which one is picked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerChoice {
    pub(crate) servers: Vec<FoundServer>,
    pub(crate) picked: usize,
    /// Asked when a task was sent: it starts once a server is chosen.
    pub(crate) then_submit: bool,
}

/// What the person answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ServerAnswer {
    Use(FoundServer),
    Later,
}

impl ServerChoice {
    pub(crate) fn new(servers: Vec<FoundServer>, chosen: Option<&FoundServer>) -> ServerChoice {
        let picked = chosen
            .and_then(|c| servers.iter().position(|s| s == c))
            .unwrap_or(0);
        ServerChoice {
            servers,
            picked,
            then_submit: false,
        }
    }

    pub(crate) fn on_key(&mut self, key: &KeyEvent) -> Handled<ServerAnswer> {
        let last = self.servers.len().saturating_sub(1);
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.picked = self.picked.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.picked = (self.picked + 1).min(last),
            KeyCode::Char(c @ '1'..='9') => {
                let i = usize::from(c as u8 - b'1');
                if let Some(server) = self.servers.get(i) {
                    return Handled::Intent(ServerAnswer::Use(server.clone()));
                }
            }
            KeyCode::Enter => {
                if let Some(server) = self.servers.get(self.picked) {
                    return Handled::Intent(ServerAnswer::Use(server.clone()));
                }
            }
            KeyCode::Esc | KeyCode::Char('q') => return Handled::Intent(ServerAnswer::Later),
            _ => {}
        }
        Handled::Done
    }

    pub(crate) fn render(&self, theme: &Theme, frame: &mut Frame) {
        let t = theme;
        let mut lines = vec![
            Line::styled(
                format!(
                    "{} model servers answer on this machine, and none is configured. The next session uses the one you choose:",
                    self.servers.len()
                ),
                t.text,
            ),
            Line::raw(""),
        ];
        for (i, s) in self.servers.iter().enumerate() {
            let here = i == self.picked;
            lines.push(Line::from(vec![
                Span::styled(if here { "› " } else { "  " }, t.accent),
                Span::styled(format!("{}  ", i + 1), t.dim),
                Span::styled(
                    format!("{} · {}", s.server, s.model),
                    if here { t.selection } else { t.text },
                ),
            ]));
            lines.push(Line::styled(format!("     {}", s.base_url), t.dim));
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            "↑/↓ or 1-9 pick · Enter uses it · Esc later (`:` model server…) · the demos play without one",
            t.dim,
        ));
        let area = popup_area(frame.area(), 90, 100);
        let area = Rect {
            width: area.width.min(100),
            x: frame.area().width.saturating_sub(area.width.min(100)) / 2,
            ..area
        };
        let area = fit_to_lines(area, &lines);
        frame.render_widget(Clear, area);
        frame.render_widget(
            Paragraph::new(lines).wrap(Wrap { trim: false }).block(
                Block::bordered()
                    .border_style(t.accent)
                    .title(Line::styled(" Which model server? ", t.title)),
            ),
            area,
        );
    }
}

impl super::popup::PopupView for ServerChoice {
    fn render(&self, cx: &super::popup::PopupCtx, frame: &mut Frame) {
        Self::render(self, cx.theme, frame);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn server(port: u16) -> FoundServer {
        FoundServer {
            base_url: format!("http://localhost:{port}/v1"),
            server: "llama.cpp's llama-server".into(),
            model: "smollm2".into(),
        }
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn arrows_pick_enter_uses_a_number_uses_at_once_esc_waits() {
        let mut choice = ServerChoice::new(vec![server(8080), server(8000)], None);
        assert_eq!(choice.picked, 0);
        assert_eq!(choice.on_key(&key(KeyCode::Down)), Handled::Done);
        assert_eq!(choice.on_key(&key(KeyCode::Down)), Handled::Done);
        assert_eq!(choice.picked, 1, "the last stays picked");
        assert_eq!(
            choice.on_key(&key(KeyCode::Enter)),
            Handled::Intent(ServerAnswer::Use(server(8000)))
        );
        assert_eq!(
            choice.on_key(&key(KeyCode::Char('1'))),
            Handled::Intent(ServerAnswer::Use(server(8080)))
        );
        assert_eq!(choice.on_key(&key(KeyCode::Char('7'))), Handled::Done);
        assert_eq!(
            choice.on_key(&key(KeyCode::Esc)),
            Handled::Intent(ServerAnswer::Later)
        );
        // Asked again, the one chosen before is picked.
        let again = ServerChoice::new(vec![server(8080), server(8000)], Some(&server(8000)));
        assert_eq!(again.picked, 1);
    }
}
