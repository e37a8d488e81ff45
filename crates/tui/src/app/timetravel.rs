//! Going on from another moment: F forks the reviewed session at the tape
//! cursor, u rewinds the live session's selected node to its previous
//! iteration (a fork at the end of that iteration's run, the session left
//! behind cancelled and kept), R on a listed session resumes it, or says
//! plainly why nothing would. Each asks first; on a yes the workbench
//! becomes the live view of the new session, whose records stream in.

use std::path::PathBuf;

use super::{Action, App, Info, Message, Mode, Popup, StartRequest};
use crate::keymap::TravelAct;
use crate::panes::lineage::LineageView;
use crate::panes::travel::{Travel, TravelKind};
use codeloop_session::index::{SessionResult, SessionSummary};
use codeloop_session::{Command, NoticeLevel};

/// How a refused resume begins, so it is shown as a message, not a flash.
pub const NOTHING_TO_RESUME: &str = "nothing to resume";

impl App {
    pub(super) fn on_travel(&mut self, act: TravelAct) {
        match act {
            TravelAct::ForkHere => self.ask_fork_here(),
            TravelAct::Rewind => self.ask_rewind(),
        }
    }

    /// The tape this view shows, when it is a file a fork can read.
    fn tape_file(&self) -> Option<PathBuf> {
        if let Some(dir) = &self.session.info.session_dir {
            return Some(dir.join("tape.jsonl"));
        }
        let source = PathBuf::from(&self.session.info.source);
        source
            .extension()
            .is_some_and(|e| e == "jsonl")
            .then_some(source)
    }

    fn ask_fork_here(&mut self) {
        let Some(tape) = self.tape_file() else {
            self.say(
                NoticeLevel::Warning,
                "a bundled demo's tape is not a session: run the demo first (`codeloop run --demo NAME`), then fork that session",
            );
            return;
        };
        let records = self.session.timeline.records();
        let (Some(first), Some(last)) = (records.first(), records.last()) else {
            self.say(NoticeLevel::Warning, "the tape is empty: nothing to fork");
            return;
        };
        let cursor = self.session.timeline.cursor();
        let at = match cursor.checked_sub(1).and_then(|i| records.get(i)) {
            Some(r) => r.seq,
            None => first.seq,
        };
        let last = last.seq;
        let id = self.session.timeline.state().session_id.clone();
        let moment = match self.session.timeline.active() {
            Some(node) => format!(", while on `{node}`"),
            None => String::new(),
        };
        let stays = if self.session_running() {
            "is cancelled (what it did stays on its tape)"
        } else {
            "stays as it is"
        };
        let mut question = format!(
            "Fork session {id} at record #{at} of {last}{moment}?\nA new session starts from this moment, with everything before it, and goes on live; {id} {stays}."
        );
        if at == last {
            question.push_str(
                "\n(The cursor is at the end: ←/→ or [ / ] move it to an earlier moment.)",
            );
        }
        if let Mode::Replay(clock) = &mut self.session.mode {
            clock.pause();
        }
        self.popups.push(Popup::Travel(Travel {
            kind: TravelKind::ForkHere,
            tape,
            at,
            question,
        }));
    }

    fn ask_rewind(&mut self) {
        if !matches!(&self.session.mode, Mode::Live(l) if l.started) {
            self.say(
                NoticeLevel::Warning,
                "no session to rewind: start one first",
            );
            return;
        }
        let Some(node) = self.selected().map(str::to_string) else {
            self.say(
                NoticeLevel::Warning,
                "select a node first (Workflow pane, ↑/↓): u rewinds it",
            );
            return;
        };
        let Some(dir) = self.session.info.session_dir.clone() else {
            self.say(
                NoticeLevel::Warning,
                "the session has not started yet: wait a moment",
            );
            return;
        };
        match codeloop_session::story::rewind_point(self.session.timeline.records(), &node) {
            Err(why) => self.say(
                NoticeLevel::Warning,
                format!("cannot rewind `{node}`: {why}"),
            ),
            Ok(at) => {
                let this = if self.session_running() {
                    "This session is cancelled, and a new branch"
                } else {
                    "This session keeps its result; a new branch"
                };
                let question = format!(
                    "Rewind `{node}` to its previous iteration?\n{this} goes on from record #{at} (where that iteration's run ended, so what followed is asked again). The branch left behind stays on disk and in the session list."
                );
                self.popups.push(Popup::Travel(Travel {
                    kind: TravelKind::Rewind { node },
                    tape: dir.join("tape.jsonl"),
                    at,
                    question,
                }));
            }
        }
    }

    pub(super) fn on_travel_answer(
        &mut self,
        travel: Travel,
        yes: bool,
        actions: &mut Vec<Action>,
    ) {
        if !yes {
            self.say(NoticeLevel::Info, "nothing changed");
            return;
        }
        let Travel { kind, tape, at, .. } = travel;
        let said = match kind {
            TravelKind::Rewind { node } => {
                // A branch left behind mid-run ends here, cancelled, on its
                // own tape; a finished one keeps its result (its engine,
                // kept for edits, ends when the workbench lets go of it).
                if self.session_running() {
                    actions.push(Action::Steer(Command::Cancel));
                }
                format!("rewinding `{node}`: a new branch from record #{at}…")
            }
            TravelKind::ForkHere => {
                // A live session forked from its past is left for the
                // fork: it stops (a finished one keeps its result).
                if self.session_running() {
                    actions.push(Action::Steer(Command::Cancel));
                }
                format!("forking at record #{at}…")
            }
        };
        self.go_live();
        self.start(StartRequest::ForkAt { tape, at }, actions);
        self.say(NoticeLevel::Info, said);
    }

    /// A fresh live workbench for the session about to start.
    pub(super) fn go_live(&mut self) {
        let info = Info {
            session_dir: None,
            truncated_line: None,
            unfinished: false,
            damage: None,
            ..self.session.info.clone()
        };
        let mut fresh = App::live(info, self.theme.clone());
        fresh.screen = self.screen;
        fresh.keys_handled = self.keys_handled;
        let mut left = std::mem::replace(self, fresh);
        left.travelled_from = None;
        self.travelled_from = Some(Box::new(left));
    }

    /// R on a session of the welcome screen's list: a passed one has
    /// nothing to resume, and the person is told what to do instead.
    pub(super) fn resume_listed(&mut self, tape: PathBuf, actions: &mut Vec<Action>) {
        let passed = self
            .session
            .info
            .sessions
            .iter()
            .find(|s| s.tape() == tape && s.result == SessionResult::Passed);
        if let Some(s) = passed {
            let text = format!(
                "Session {} finished and passed, so there is nothing to continue.\n\n{}",
                s.id,
                instead(&s.id)
            );
            self.popups.push(Popup::Message(Message {
                title: "Nothing to resume".into(),
                text,
            }));
            return;
        }
        self.start(StartRequest::Resume { tape }, actions);
    }

    /// Starting a session failed: a refused resume is a message to read,
    /// anything else a line in the status bar.
    pub(super) fn start_failed(&mut self, message: String) {
        // A fork or rewind that did not start: back to the view it left,
        // with why (and what to pass) in a message to read.
        if let Some(left) = self.travelled_from.take() {
            let (screen, keys) = (self.screen, self.keys_handled);
            *self = *left;
            self.screen = screen;
            self.keys_handled = keys;
            self.popups.push(Popup::Message(Message {
                title: "The fork did not start".into(),
                text: message,
            }));
            return;
        }
        match message.find(NOTHING_TO_RESUME) {
            Some(at) => {
                let why = message[at + NOTHING_TO_RESUME.len()..].trim_start_matches([':', ' ']);
                let mut text: Vec<char> = why.chars().collect();
                if let Some(first) = text.first_mut() {
                    *first = first.to_ascii_uppercase();
                }
                self.popups.push(Popup::Message(Message {
                    title: "Nothing to resume".into(),
                    text: text.into_iter().collect(),
                }));
            }
            None => self.say(NoticeLevel::Error, message),
        }
    }

    /// The recent sessions, read again (the welcome screen shows).
    pub fn set_sessions(&mut self, sessions: Vec<SessionSummary>) {
        self.session.info.sessions = sessions;
        self.dirty = true;
    }
}

/// What to do instead of resuming session `id`.
pub fn instead(id: &str) -> String {
    format!(
        "To change something, fork it:\n· F here forks it at its end (a new session goes on from there);\n· Enter opens it: move to an earlier moment (←/→, [ / ]) and press F to fork there;\n· headless: codeloop resume {id} --at SEQ"
    )
}

impl App {
    /// `b`: the lineage of the session on screen, read off the UI thread.
    pub(super) fn ask_lineage(&mut self, actions: &mut Vec<Action>) {
        match self.tape_file() {
            Some(tape) => actions.push(Action::ReadLineage(tape)),
            None => self.say(
                NoticeLevel::Info,
                "no lineage: this view has no session folder to read it from",
            ),
        }
    }

    /// The lineage read: its popup, or why there is none.
    pub(super) fn on_lineage_read(
        &mut self,
        tape: &std::path::Path,
        result: Result<Option<Box<codeloop_session::lineage::Lineage>>, String>,
    ) {
        // The session on screen, or the one the welcome's list chose.
        let (id, mark) = match &self.session.info.sessions.iter().find(|s| s.tape() == tape) {
            Some(s) if self.welcome() => (s.id.clone(), crate::panes::lineage::CHOSEN),
            _ => (
                self.session.timeline.state().session_id.clone(),
                crate::panes::lineage::ON_SCREEN,
            ),
        };
        match result {
            Ok(Some(lineage)) => self.popups.push(Popup::Lineage(Box::new(LineageView::new(
                &lineage, &id, mark,
            )))),
            Ok(None) => self.say(
                NoticeLevel::Info,
                format!("no lineage: session {id} is no fork and has none (F forks it)"),
            ),
            Err(e) => self.say(NoticeLevel::Error, format!("cannot read the lineage: {e}")),
        }
        self.dirty = true;
    }

    /// Enter on a branch of the lineage: open it, unless a session runs.
    pub(super) fn open_branch(&mut self, tape: PathBuf, actions: &mut Vec<Action>) {
        if self.session_running() {
            self.say(
                NoticeLevel::Warning,
                "the session is still running: open a branch once it ended (or c cancels it)",
            );
            return;
        }
        self.replace(
            super::guard::Replacing::Open {
                tape,
                replay: false,
            },
            actions,
        );
    }
}
