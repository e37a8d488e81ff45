//! The model-call inspector (`m`): any call of the session, its prompt, raw
//! reply, reasoning, tokens and time (lines in `inspector_lines`), moved
//! through with `[` / `]`. It draws from the state at the cursor each frame,
//! so a call being streamed grows as it is read. Live, it also shows the
//! call the engine is paused before, and `e` edits that call's prompt.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph};

use super::inspector_lines::{self, Target};
use super::{Handled, Scroll, page, popup_area, scroll_keys};
use crate::keymap::{self, Binding, Key, Row};
use crate::theme::Theme;
use codeloop_session::State;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InspectAct {
    Scroll(Scroll),
    Top,
    Bottom,
    Prev,
    Next,
    Edit,
    Close,
}

/// What the person asked of the app.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InspectorIntent {
    Close,
    /// Edit the prompt of the call the engine is paused before (or have
    /// it written first, when it is not yet).
    EditPrompt,
}

pub(crate) const KEYS: &[Binding<InspectAct>] = &[
    Binding {
        label: "[ / ]",
        does: "previous / next model call",
        short: "call",
        keys: &[
            (Key::ch('['), InspectAct::Prev),
            (Key::ch(']'), InspectAct::Next),
        ],
    },
    Binding {
        label: "↑ ↓ PgUp PgDn",
        does: "scroll",
        short: "scroll",
        keys: scroll_keys!(InspectAct::Scroll),
    },
    Binding {
        label: "g / G",
        does: "top / bottom",
        short: "",
        keys: &[
            (Key::ch('g'), InspectAct::Top),
            (Key::ch('G'), InspectAct::Bottom),
        ],
    },
    Binding {
        label: "e",
        does: "edit the prompt of the call the engine is paused before (live, step mode)",
        short: "edit prompt",
        keys: &[(Key::ch('e'), InspectAct::Edit)],
    },
    Binding {
        label: "Esc / m / q",
        does: "close",
        short: "close",
        keys: &[
            (Key::code(KeyCode::Esc), InspectAct::Close),
            (Key::ch('m'), InspectAct::Close),
            (Key::ch('q'), InspectAct::Close),
        ],
    },
];

#[derive(Debug, Clone, PartialEq)]
pub struct Inspector {
    target: Target,
    /// First line shown; `usize::MAX` is the bottom.
    scroll: usize,
    /// Whether the waiting call is among the targets (a live session).
    live: bool,
}

impl Inspector {
    pub(crate) fn new(target: Target, live: bool) -> Inspector {
        Inspector {
            target,
            scroll: 0,
            live,
        }
    }

    pub fn target(&self) -> Target {
        self.target
    }

    /// The keys the status bar names while the inspector is open.
    pub(crate) fn status_rows() -> Vec<Row> {
        super::status_rows(KEYS, |a| {
            matches!(a, InspectAct::Scroll(_) | InspectAct::Top)
        })
    }

    /// `screen`: the frame's size, for pages and the bottom line.
    pub(crate) fn on_key(
        &mut self,
        key: KeyEvent,
        state: &State,
        theme: &Theme,
        screen: Rect,
    ) -> Handled<InspectorIntent> {
        let Some(act) = keymap::lookup(KEYS, &key) else {
            return Handled::NotMine;
        };
        let step = page(screen.height);
        match act {
            InspectAct::Scroll(s) => {
                let top = self.scroll.min(self.last_top(state, theme, screen));
                self.scroll = match s {
                    Scroll::Up => top.saturating_sub(1),
                    Scroll::Down => top + 1,
                    Scroll::PageUp => top.saturating_sub(step),
                    Scroll::PageDown => top + step,
                };
            }
            InspectAct::Top => self.scroll = 0,
            InspectAct::Bottom => self.scroll = usize::MAX,
            InspectAct::Prev | InspectAct::Next => {
                let all = inspector_lines::targets(state, self.live);
                let here = all.iter().position(|t| *t == self.target);
                let next = match (act, here) {
                    (InspectAct::Prev, Some(i)) => i.checked_sub(1),
                    (InspectAct::Next, Some(i)) => Some(i + 1),
                    _ => all.len().checked_sub(1),
                };
                if let Some(t) = next.and_then(|i| all.get(i)) {
                    self.target = *t;
                    self.scroll = 0;
                }
            }
            InspectAct::Edit => return Handled::Intent(InspectorIntent::EditPrompt),
            InspectAct::Close => return Handled::Intent(InspectorIntent::Close),
        }
        Handled::Done
    }

    /// Where the popup goes on a screen.
    fn area(screen: Rect) -> Rect {
        popup_area(screen, 92, 92)
    }

    /// The first line shown when the last line is at the bottom.
    fn last_top(&self, state: &State, theme: &Theme, screen: Rect) -> usize {
        let area = Inspector::area(screen);
        let rows = usize::from(area.height.saturating_sub(2));
        let width = usize::from(area.width.saturating_sub(2));
        inspector_lines::lines(state, self.target, theme, width)
            .len()
            .saturating_sub(rows)
    }

    pub(crate) fn render(&self, state: &State, theme: &Theme, frame: &mut Frame) {
        let t = theme;
        let area = Inspector::area(frame.area());
        let width = usize::from(area.width.saturating_sub(2));
        let rows = usize::from(area.height.saturating_sub(2));
        let lines = inspector_lines::lines(state, self.target, t, width);
        let top = self.scroll.min(lines.len().saturating_sub(rows));
        let position = if lines.len() > rows {
            format!(
                " {}-{} of {} lines ",
                top + 1,
                (top + rows).min(lines.len()),
                lines.len()
            )
        } else {
            String::new()
        };
        frame.render_widget(Clear, area);
        frame.render_widget(
            Paragraph::new(lines.into_iter().skip(top).take(rows).collect::<Vec<_>>()).block(
                Block::bordered()
                    .border_style(t.border_focused)
                    .title(Line::styled(
                        format!(
                            " Model call · {} ",
                            inspector_lines::title(state, self.target)
                        ),
                        t.title,
                    ))
                    .title(Line::styled(position, t.dim).right_aligned())
                    .title_bottom(Line::styled(
                        format!(" {} ", keymap::hint_line(KEYS)),
                        t.dim,
                    )),
            ),
            area,
        );
    }
}

impl super::popup::PopupView for Inspector {
    fn render(&self, cx: &super::popup::PopupCtx, frame: &mut Frame) {
        Self::render(self, cx.state, cx.theme, frame);
    }
    fn footer(&self) -> Option<(&'static str, Vec<Row>)> {
        Some(("Model call", Self::status_rows()))
    }
}
