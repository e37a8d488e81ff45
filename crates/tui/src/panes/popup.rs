//! The popup contract: what a popup over the panes shows, and what the
//! footer says while one covers them. The app keeps the stack (top last;
//! the top one takes every key) and the registry, `popups!` in
//! `app/popups.rs`: a popup is its file here, one line there, and its
//! keys' arm in `app/keys.rs`, `on_popup_key` (the one place a popup's
//! answer becomes an act; the compiler asks for it).

use ratatui::Frame;

use super::help::HelpContent;
use crate::keymap::Row;
use crate::theme::Theme;
use codeloop_session::State;

/// What a popup reads while it draws.
pub(crate) struct PopupCtx<'a> {
    pub(crate) theme: &'a Theme,
    /// The state at the cursor.
    pub(crate) state: &'a State,
    /// The help's content (the focused pane's keys, then the mode's),
    /// made only when a popup asks for it.
    pub(crate) help: &'a dyn Fn() -> HelpContent<'static>,
}

/// A popup over the panes. It carries what it acts on; it draws only,
/// from that and the `PopupCtx`.
pub(crate) trait PopupView {
    /// Draw it over the panes (it chooses its own area on `frame`).
    fn render(&self, cx: &PopupCtx, frame: &mut Frame);
    /// Of a popup that covers the panes and takes every key (the log
    /// pager, the inspector): the footer's title and keys, in place of the
    /// focused pane's. None: the footer stays the pane's.
    fn footer(&self) -> Option<(&'static str, Vec<Row>)> {
        None
    }
}

impl<T: PopupView + ?Sized> PopupView for Box<T> {
    fn render(&self, cx: &PopupCtx, frame: &mut Frame) {
        (**self).render(cx, frame);
    }
    fn footer(&self) -> Option<(&'static str, Vec<Row>)> {
        (**self).footer()
    }
}
