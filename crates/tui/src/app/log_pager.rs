//! The log pager's round trip: the output pane asks for a run's whole log,
//! the app opens the pager and asks the event loop to read the file off the
//! UI thread, and the text comes back as `Msg::LogRead`.

use std::path::PathBuf;
use std::sync::Arc;

use crossterm::event::KeyEvent;

use super::{Action, App, Popup};
use crate::log_reader::{LogText, log_path, stderr_ranges};
use crate::panes::Handled;
use crate::panes::pager::{Pager, PagerIntent};
use codeloop_session::NoticeLevel;

impl App {
    /// Open the pager over the output pane's run.
    pub(super) fn open_log(&mut self, actions: &mut Vec<Action>) {
        let program = self.panes.code.tab() == super::CodeTab::Program;
        let shown = self
            .session
            .timeline
            .state()
            .run_to_show(self.panes.graph.selected(), program);
        let Some(run_id) = shown else {
            self.say(
                NoticeLevel::Info,
                "no run yet: its log appears once it starts",
            );
            return;
        };
        let Some(dir) = self.session.info.session_dir.clone() else {
            self.say(
                NoticeLevel::Warning,
                "this view has no session folder, so no logs (open the session with `codeloop open`)",
            );
            return;
        };
        let state = self.session.timeline.state();
        let Some(run) = state.runs.get(&run_id) else {
            return;
        };
        let title = match &run.node {
            Some(n) => format!("run {run_id} · {n} it {}", run.iteration),
            None => format!("run {run_id} · program"),
        };
        let path = log_path(&dir, run_id);
        let pager = Pager::open(title, path.clone(), stderr_ranges(run));
        self.popups.push(Popup::Pager(Box::new(pager)));
        actions.push(Action::ReadLog(path));
    }

    pub(super) fn on_pager_key(
        &mut self,
        mut pager: Box<Pager>,
        key: KeyEvent,
        actions: &mut Vec<Action>,
    ) {
        match pager.on_key(key, self.screen) {
            Handled::Intent(PagerIntent::Close) => return,
            Handled::Intent(PagerIntent::Reload) => {
                actions.push(Action::ReadLog(pager.path().to_path_buf()));
            }
            Handled::Intent(PagerIntent::Say(say)) => self.say(say.0, say.1),
            Handled::Done | Handled::NotMine => {}
        }
        self.popups.push(Popup::Pager(pager));
    }

    /// A log was read: the pager open on it takes the text.
    pub(super) fn on_log_read(&mut self, path: PathBuf, result: Result<Arc<LogText>, String>) {
        for popup in self.popups.iter_mut() {
            if let Popup::Pager(p) = popup
                && p.path() == path
            {
                p.loaded(result.clone());
            }
        }
        self.dirty = true;
    }

    /// The open pager, if any (tests).
    pub fn pager(&self) -> Option<&Pager> {
        self.popups.iter().rev().find_map(|p| match p {
            Popup::Pager(p) => Some(p.as_ref()),
            Popup::Help(_)
            | Popup::Confirm(_)
            | Popup::Editor(_)
            | Popup::Palette(_)
            | Popup::Message(_)
            | Popup::Travel(_)
            | Popup::Servers(_)
            | Popup::Pictures(_)
            | Popup::Inspector(_)
            | Popup::Lineage(_) => None,
        })
    }
}
