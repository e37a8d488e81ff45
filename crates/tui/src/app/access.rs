//! What the app lets its views and tests read (and the few things they may
//! set): the mode, the state at the cursor, the components' state.

use super::*;

impl App {
    pub fn mode(&self) -> &Mode {
        &self.session.mode
    }
    pub fn info(&self) -> &Info {
        &self.session.info
    }
    pub fn theme(&self) -> &Theme {
        &self.theme
    }
    /// The session folded at the cursor.
    pub fn state(&self) -> &State {
        self.session.timeline.state()
    }
    pub fn timeline(&self) -> &Timeline {
        &self.session.timeline
    }
    pub fn records(&self) -> &[Record] {
        self.session.timeline.records()
    }
    pub fn cursor(&self) -> usize {
        self.session.timeline.cursor()
    }
    /// The cursor is behind the last record (not reviewing the past).
    pub fn at_end(&self) -> bool {
        self.session.timeline.at_end()
    }
    /// The panes, each one's own state (the code pane's tab, the output's
    /// lines, the task typed...); `get(focus)` as a `Pane`.
    pub fn panes(&self) -> &crate::panes::Panes {
        &self.panes
    }
    pub fn focus(&self) -> Focus {
        self.focus
    }
    pub fn set_focus(&mut self, focus: Focus) {
        self.focus = focus;
        self.dirty = true;
    }
    pub fn zoomed(&self) -> bool {
        self.zoom
    }
    pub fn set_zoom(&mut self, zoom: bool) {
        self.zoom = zoom;
        self.dirty = true;
    }
    /// The node the code and output panes show.
    pub fn selected(&self) -> Option<&str> {
        self.panes.graph.selected()
    }
    pub fn task_mut(&mut self) -> &mut TaskPane {
        self.dirty = true;
        &mut self.panes.task
    }
    pub fn flash(&self) -> Option<&(NoticeLevel, String)> {
        self.flash.as_ref()
    }
    /// Tell the person something in the status line.
    pub(crate) fn say(&mut self, level: NoticeLevel, text: impl Into<String>) {
        self.flash = Some((level, text.into()));
        self.dirty = true;
    }
    pub fn confirm(&self) -> Option<Confirm> {
        match self.popups.last() {
            Some(Popup::Confirm(asked)) => Some(asked.question),
            _ => None,
        }
    }
    pub fn editor(&self) -> Option<&EditorPopup> {
        self.popups.iter().rev().find_map(|p| match p {
            Popup::Editor(e) => Some(e.as_ref()),
            _ => None,
        })
    }
    pub fn editor_mut(&mut self) -> Option<&mut EditorPopup> {
        self.popups.iter_mut().rev().find_map(|p| match p {
            Popup::Editor(e) => Some(e.as_mut()),
            _ => None,
        })
    }
    /// The open command palette, if it is on top.
    pub fn palette(&self) -> Option<&crate::panes::palette::Palette> {
        match self.popups.last() {
            Some(Popup::Palette(p)) => Some(p),
            _ => None,
        }
    }
    /// The message popup on top, if one is.
    pub fn message(&self) -> Option<&Message> {
        match self.popups.last() {
            Some(Popup::Message(m)) => Some(m),
            _ => None,
        }
    }
    /// The model-call inspector on top, if it is.
    pub fn inspector(&self) -> Option<&crate::panes::inspector::Inspector> {
        match self.popups.last() {
            Some(Popup::Inspector(i)) => Some(i),
            _ => None,
        }
    }
    pub fn help_open(&self) -> bool {
        matches!(self.popups.last(), Some(Popup::Help(_)))
    }
    pub fn reruns(&self) -> &crate::panes::Reruns {
        &self.session.reruns
    }
    pub fn quitting(&self) -> bool {
        self.quit
    }
    pub(crate) fn keys_handled(&self) -> u64 {
        self.keys_handled
    }
    pub fn set_session_dir(&mut self, dir: PathBuf) {
        self.session.info.session_dir = Some(dir);
    }
    /// A session folder was deleted: it leaves the welcome screen's list.
    pub fn forget_session(&mut self, dir: &std::path::Path) {
        self.session.info.sessions.retain(|s| s.dir != dir);
        self.dirty = true;
    }

    /// Something changed since the last frame.
    pub(crate) fn is_dirty(&self) -> bool {
        self.dirty
    }
    pub(crate) fn mark_drawn(&mut self) {
        self.dirty = false;
    }
    /// The screen's size, as the last frame had it.
    pub(crate) fn screen(&self) -> Rect {
        self.screen
    }
    /// The screen's size, as the last frame had it.
    pub fn set_screen(&mut self, screen: Rect) {
        self.screen = screen;
    }

    /// This app, opened from `left` (the app it replaces on screen): where
    /// `left` is the welcome screen, or a session opened from it, `q` goes
    /// back to that welcome.
    pub fn opened_from(&mut self, left: App) {
        self.screen = left.screen;
        self.keys_handled = left.keys_handled;
        self.listed_from = match left.listed_from {
            Some(list) => Some(list),
            None if left.welcome() => Some(Box::new(left)),
            None => None,
        };
    }

    /// `q` goes back to the welcome screen this session was opened from.
    pub(crate) fn opened_from_list(&self) -> bool {
        self.listed_from.is_some()
    }

    /// Read-only: review and replay never steer.
    pub fn read_only(&self) -> bool {
        !matches!(self.session.mode, Mode::Live(_))
    }

    /// The engine of a live session takes commands (it stays after the
    /// session finished, for edits and re-runs).
    pub(crate) fn engine_alive(&self) -> bool {
        matches!(&self.session.mode, Mode::Live(l) if l.started && l.ended.is_none())
    }

    /// What the live engine is paused before, whatever the cursor shows:
    /// reviewing the past of a live session, the engine still waits at
    /// the end of the tape. None outside a live session.
    pub(crate) fn engine_paused(&self) -> Option<&codeloop_session::Step> {
        if !self.engine_alive() {
            return None;
        }
        if self.at_end() {
            return self.state().paused.as_ref();
        }
        codeloop_session::state::pause_at_end(self.records())
    }

    /// A live session is running (not ended), wherever the cursor is: a
    /// cursor in the past of a finished session is not a running session.
    pub fn session_running(&self) -> bool {
        let now = self.session.timeline.head().unwrap_or(self.state());
        self.engine_alive() && now.finished.is_none()
    }

    /// The live workbench before a session starts (the welcome screen).
    pub fn welcome(&self) -> bool {
        matches!(&self.session.mode, Mode::Live(l) if !l.started)
    }

    /// Step mode chosen on the welcome screen, for the session about to start.
    pub fn step_armed(&self) -> bool {
        matches!(&self.session.mode, Mode::Live(l) if l.step_armed)
    }

    /// Which keymap tables apply.
    pub(crate) fn mode_kind(&self) -> ModeKind {
        match &self.session.mode {
            Mode::Live(l) if !l.started => ModeKind::Welcome,
            Mode::Live(_) => ModeKind::Live,
            Mode::Review => ModeKind::Review,
            Mode::Replay(_) => ModeKind::Replay,
        }
    }

    /// The running session's elapsed time as the last tick saw it.
    pub(crate) fn elapsed_ms(&self) -> u64 {
        match &self.session.mode {
            Mode::Live(Live {
                since: Some(since),
                now: Some(now),
                ..
            }) if self.at_end() && self.session_running() => {
                now.saturating_duration_since(*since).as_millis() as u64
            }
            _ => self.state().t_ms,
        }
    }

    // ---- update -------------------------------------------------------
}

impl App {
    /// The open lineage popup, if any (tests).
    pub fn lineage(&self) -> Option<&crate::panes::lineage::LineageView> {
        self.popups.iter().rev().find_map(|p| match p {
            Popup::Lineage(v) => Some(v.as_ref()),
            Popup::Help(_)
            | Popup::Confirm(_)
            | Popup::Editor(_)
            | Popup::Palette(_)
            | Popup::Message(_)
            | Popup::Travel(_)
            | Popup::Pager(_)
            | Popup::Pictures(_)
            | Popup::Inspector(_)
            | Popup::Servers(_) => None,
        })
    }
}
