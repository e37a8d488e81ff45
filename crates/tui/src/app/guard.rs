//! Nothing typed or on screen is dropped by one keystroke: what would
//! replace the welcome screen's unsent task (a demo, a listed session, a
//! resume or fork), or leave a session for a new one, asks first; a path
//! the attach prompt refuses stays in the prompt.

use std::path::PathBuf;

use super::{Action, App, Message, Popup, StartRequest};
use crate::panes::confirm::{Asking, Confirm};

use crate::panes::sessions::SessionIntent;
use codeloop_session::NoticeLevel;

/// What waits for the person's yes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Replacing {
    Start(StartRequest),
    Open {
        tape: PathBuf,
        replay: bool,
    },
    NewSession,
    /// Leave the ended session on screen for another that starts at once
    /// (a demo's key).
    LeaveFor(StartRequest),
    /// Quit with a task typed and not started.
    Quit,
}

/// What a yes to a confirmation does: the confirm popup carries it
/// (`Asking<OnYes>`), with the folder or the replacement it is about.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum OnYes {
    /// Cancel the running session.
    Cancel,
    /// Cancel the running session and quit.
    CancelAndQuit,
    /// Delete this session's folder.
    Delete(PathBuf),
    /// Drop the draft or leave the session for this.
    Replace(Replacing),
    /// Skip the step the engine waits at.
    Skip,
}

impl Replacing {
    /// What a key on the welcome screen's session list starts or opens;
    /// a delete is not a replacement (its folder, for its own question),
    /// nor is the lineage (shown over the list: handled before).
    pub(crate) fn for_session(intent: SessionIntent) -> Result<Replacing, PathBuf> {
        match intent {
            SessionIntent::Open(tape) => Ok(Replacing::Open {
                tape,
                replay: false,
            }),
            SessionIntent::Replay(tape) => Ok(Replacing::Open { tape, replay: true }),
            SessionIntent::Resume(tape) => Ok(Replacing::Start(StartRequest::Resume { tape })),
            SessionIntent::Fork(tape) | SessionIntent::Lineage(tape) => {
                Ok(Replacing::Start(StartRequest::Fork { tape }))
            }
            SessionIntent::Delete(dir) => Err(dir),
        }
    }
}

impl App {
    /// A demo's key once the session ended: leave it for that demo (asked
    /// first), in step mode if the session was.
    pub(super) fn leave_for_demo(&mut self, i: usize, actions: &mut Vec<Action>) {
        if self.session_running() {
            self.say(
                NoticeLevel::Warning,
                "a session is running: c cancels it first",
            );
            return;
        }
        let Some(demo) = self.session.info.demos.get(i) else {
            return;
        };
        let request = StartRequest::Demo {
            name: demo.name.clone(),
            step_mode: self.now().step_mode,
        };
        self.replace(Replacing::LeaveFor(request), actions);
    }

    /// The attached files' descriptions (as the prompts have them), in a
    /// message; the session at the cursor's.
    pub(super) fn describe_inputs(&mut self) {
        let inputs = &self.session.timeline.state().inputs;
        let text = if inputs.is_empty() {
            "No file is attached to this session.".to_string()
        } else {
            inputs
                .iter()
                .map(|f| f.described())
                .collect::<Vec<_>>()
                .join("\n\n")
        };
        self.popups.push(Popup::Message(Message {
            title: "Attached files".into(),
            text: crate::sanitize::sanitize(&text),
        }));
    }

    /// Typed work that would be lost: a task or an attachment not yet sent.
    pub(crate) fn has_draft(&self) -> bool {
        self.welcome()
            && (!self.panes.task.text().trim().is_empty()
                || !self.panes.task.attached().is_empty()
                || !self.panes.task.pending().is_empty())
    }

    /// Do `what` now, or first ask when it would drop a draft or leave the
    /// session on screen.
    pub(super) fn replace(&mut self, what: Replacing, actions: &mut Vec<Action>) {
        let question = match &what {
            Replacing::NewSession | Replacing::LeaveFor(_) => Some(Confirm::LeaveSession),
            Replacing::Start(_) | Replacing::Open { .. } | Replacing::Quit if self.has_draft() => {
                Some(Confirm::DiscardDraft)
            }
            Replacing::Start(_) | Replacing::Open { .. } | Replacing::Quit => None,
        };
        match question {
            Some(confirm) => self.ask(confirm, OnYes::Replace(what)),
            None => self.do_replace(what, actions),
        }
    }

    /// The answer to a `replace` question.
    pub(super) fn on_replace_answer(
        &mut self,
        what: Replacing,
        yes: bool,
        actions: &mut Vec<Action>,
    ) {
        if yes {
            self.do_replace(what, actions);
        } else {
            self.say(NoticeLevel::Info, "kept as it was: nothing was started");
        }
    }

    /// Ask `question` in a popup that carries what a yes does.
    pub(super) fn ask(&mut self, question: Confirm, on_yes: OnYes) {
        self.popups
            .push(Popup::Confirm(Asking::new(question, on_yes)));
    }

    /// The answer to a confirmation: act on what it carries.
    pub(super) fn on_confirm_answer(
        &mut self,
        asked: Asking<OnYes>,
        yes: bool,
        actions: &mut Vec<Action>,
    ) {
        match asked.about {
            OnYes::Delete(dir) => {
                if yes {
                    actions.push(Action::DeleteSession(dir));
                }
            }
            OnYes::Replace(what) => self.on_replace_answer(what, yes, actions),
            OnYes::Skip if yes => self.send_skip(actions),
            OnYes::Skip => self.say(NoticeLevel::Info, "not skipped: the engine still waits"),
            OnYes::Cancel | OnYes::CancelAndQuit if !yes => {}
            OnYes::Cancel => actions.push(Action::Steer(codeloop_session::Command::Cancel)),
            OnYes::CancelAndQuit => {
                actions.push(Action::Steer(codeloop_session::Command::Cancel));
                self.quit = true;
                actions.push(Action::Quit);
            }
        }
    }

    fn do_replace(&mut self, what: Replacing, actions: &mut Vec<Action>) {
        match what {
            // A resume of a listed session says first when nothing is left.
            Replacing::Start(StartRequest::Resume { tape }) => self.resume_listed(tape, actions),
            Replacing::Start(request) => self.start(request, actions),
            Replacing::Open { tape, replay } => actions.push(Action::Open { tape, replay }),
            Replacing::NewSession => {
                self.new_session(actions);
                // The welcome screen lists the session just left.
                actions.push(Action::ListSessions);
            }
            Replacing::LeaveFor(request) => {
                self.new_session(actions);
                self.start(request, actions);
            }
            Replacing::Quit => {
                self.quit = true;
                actions.push(Action::Quit);
            }
        }
    }
}
