//! Moving the focus between the panes on screen.

use super::{App, Focus, view};

impl App {
    /// The next (or previous) pane on screen, in registry order. Panes
    /// not on this screen are skipped (the welcome screen shows only the
    /// task and the welcome); zoomed, Tab changes which of them fills the
    /// screen.
    pub(super) fn cycle_focus(&mut self, forward: bool) {
        let on_screen = view::tiled(self, self.screen);
        let shown = |f: Focus| on_screen.iter().any(|(p, area)| *p == f && area.area() > 0);
        let mut f = self.focus;
        for _ in 0..Focus::ALL.len() {
            f = if forward { f.next() } else { f.prev() };
            if shown(f) {
                break;
            }
        }
        self.focus = f;
    }
}
