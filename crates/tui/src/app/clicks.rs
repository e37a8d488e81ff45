//! Clicks on what looks clickable beyond a pane's rows: the code pane's tabs.

use ratatui::layout::{Position, Rect};

use super::{App, Focus, view};

impl App {
    /// A click in the code pane at `area`: on a tab of its title, show that tab.
    pub(super) fn click_code(&mut self, area: Rect, pos: Position) {
        let tab = self.code.tab_at(&view::ctx(self, Focus::Code), area, pos);
        if let Some(tab) = tab {
            self.code.show_tab(tab);
            self.dirty = true;
        }
    }
}
