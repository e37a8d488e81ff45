//! Nothing typed or on screen is dropped by one keystroke: what would
//! replace the welcome screen's unsent task (a demo, a listed session, a
//! resume or fork), or leave a session for a new one, asks first.

use std::path::PathBuf;

use super::{Action, App, Popup, StartRequest};
use crate::tui::panes::confirm::Confirm;

/// What waits for the person's yes.
#[derive(Debug, Clone, PartialEq)]
pub enum Replacing {
    Start(StartRequest),
    Open { tape: PathBuf, replay: bool },
    NewSession,
}

impl App {
    /// Typed work that would be lost: a task or an attachment not yet sent.
    pub fn has_draft(&self) -> bool {
        self.welcome() && (!self.task.text().trim().is_empty() || !self.task.attached().is_empty())
    }

    /// Do `what` now, or first ask when it would drop a draft or leave the
    /// session on screen.
    pub(super) fn replace(&mut self, what: Replacing, actions: &mut Vec<Action>) {
        let question = match &what {
            Replacing::NewSession => Some(Confirm::LeaveSession),
            Replacing::Start(_) | Replacing::Open { .. } if self.has_draft() => {
                Some(Confirm::DiscardDraft)
            }
            Replacing::Start(_) | Replacing::Open { .. } => None,
        };
        match question {
            Some(confirm) => {
                self.replacing = Some(what);
                self.popups.push(Popup::Confirm(confirm));
            }
            None => self.do_replace(what, actions),
        }
    }

    /// The answer to a `replace` question.
    pub(super) fn on_replace_answer(&mut self, yes: bool, actions: &mut Vec<Action>) {
        match self.replacing.take() {
            Some(what) if yes => self.do_replace(what, actions),
            Some(_) | None => self.say(
                crate::session::NoticeLevel::Info,
                "kept as it was: nothing was started",
            ),
        }
    }

    fn do_replace(&mut self, what: Replacing, actions: &mut Vec<Action>) {
        match what {
            Replacing::Start(request) => self.start(request, actions),
            Replacing::Open { tape, replay } => actions.push(Action::Open { tape, replay }),
            Replacing::NewSession => self.new_session(),
        }
    }
}
