//! Moving the focus between the panes on screen.

use super::{App, Focus, view};

impl App {
    /// The next (or previous) pane on screen. Panes the layout hides are
    /// skipped (the welcome screen shows only the task and the demos);
    /// zoomed, Tab changes which pane fills the screen.
    pub(super) fn cycle_focus(&mut self, forward: bool) {
        let areas = view::layout(self, self.screen);
        let mut f = self.focus;
        for _ in 0..Focus::ALL.len() {
            f = if forward { f.next() } else { f.prev() };
            if self.zoom || areas.of(f).area() > 0 {
                break;
            }
        }
        self.focus = f;
    }
}
