//! A yes/no question before something that cannot be undone.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph};

use super::popup_area;
use crate::keymap::{self, Binding, Key};
use crate::theme::Theme;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirm {
    CancelSession,
    Quit,
    /// Delete the session the welcome screen's list has selected.
    DeleteSession,
    /// Start or open something in place of the unsent task.
    DiscardDraft,
    /// Leave the session on screen for a new one.
    LeaveSession,
    /// Skip the planning call the engine waits before.
    SkipPlan,
    /// Skip a function's run the engine waits before.
    SkipRun,
    /// Skip the call for a function's tests.
    SkipTests,
    /// Skip the call for a function's first code.
    SkipCode,
    /// Skip the call for a function's repair.
    SkipRepair,
}

/// A question on screen with what a yes acts on: the popup carries its
/// payload (a session's folder, what would replace the screen), so nothing
/// waits for the answer outside it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Asking<T> {
    pub(crate) question: Confirm,
    pub(crate) about: T,
}

impl<T> Asking<T> {
    pub(crate) fn new(question: Confirm, about: T) -> Asking<T> {
        Asking { question, about }
    }
}

impl<T> super::popup::PopupView for Asking<T> {
    fn render(&self, cx: &super::popup::PopupCtx, frame: &mut Frame) {
        self.question.render(cx.theme, frame);
    }
}

/// Yes; any other key is no.
pub(crate) const KEYS: &[Binding<bool>] = &[Binding {
    label: "y / Enter",
    does: "yes (any other key: no)",
    short: "yes",
    keys: &[(Key::ch('y'), true), (Key::code(KeyCode::Enter), true)],
}];

impl Confirm {
    /// Whether the key says yes.
    pub(crate) fn answer(key: &KeyEvent) -> bool {
        keymap::lookup(KEYS, key).unwrap_or(false)
    }

    pub(crate) fn question(self) -> &'static str {
        match self {
            Confirm::CancelSession => "Cancel the session? What is done stays on the tape.  y / n",
            Confirm::Quit => "A session is running. Cancel it and quit?  y / n",
            Confirm::DeleteSession => "Delete this session's folder for good?  y / n",
            Confirm::DiscardDraft => {
                "Discard the task you typed (it is not saved) and go on?  y / n"
            }
            Confirm::LeaveSession => {
                "Leave this session for a new one? It stays on its tape (codeloop open last).  y / n"
            }
            Confirm::SkipPlan => {
                "Skip the planning call? Everything depends on the plan: with none, the session ends (P then lets you write the plan).  y / n"
            }
            Confirm::SkipRun => {
                "Skip this run? The function will not count as passing, nor will what depends on it: the session cannot pass.  y / n"
            }
            Confirm::SkipTests => {
                "Skip writing this function's tests? Its code is still asked for, but with no tests it cannot pass until you write them (t, then e).  y / n"
            }
            Confirm::SkipCode => {
                "Skip writing this function's code? With none it gives up, and what depends on it cannot run: the session cannot pass.  y / n"
            }
            Confirm::SkipRepair => {
                "Skip this repair? The function gives up with its failing code, and what depends on it cannot run: the session cannot pass.  y / n"
            }
        }
    }

    pub(crate) fn render(self, theme: &Theme, frame: &mut Frame) {
        let screen = frame.area();
        let area = popup_area(screen, 70, 10);
        // As many rows as the wrapped question needs (at 80 columns a long
        // one takes two or three), between its borders.
        let lines = super::wrap(self.question(), usize::from(area.width.saturating_sub(2)));
        let height = (lines.len() as u16 + 2).min(screen.height.saturating_sub(area.y));
        let area = Rect { height, ..area };
        frame.render_widget(Clear, area);
        frame.render_widget(
            Paragraph::new(
                lines
                    .into_iter()
                    .map(|l| Line::styled(l, theme.text))
                    .collect::<Vec<_>>(),
            )
            .block(Block::bordered().border_style(theme.warning)),
            area,
        );
    }
}
