//! A plan the person writes or edits (`P`, once a session ended): the
//! specs as text in the editor, read back and checked like the model's,
//! and a new session on the same task that goes on from it (the model is
//! asked only for the tests and the code). And what a new session keeps
//! of one that did not pass: its task and its files, ready to send again.

use codeloop_protocol::present::plural;
use std::path::PathBuf;

use super::{Action, App, Popup, StartRequest};
use crate::describe::{parse_plan, plan_text};
use crate::panes::editor::{EditTarget, EditorPopup};
use codeloop_session::{NoticeLevel, Outcome, State};

impl App {
    /// The session as it is now, wherever the cursor is.
    pub(super) fn now(&self) -> &State {
        self.session.timeline.head().unwrap_or(self.state())
    }

    /// `P`: the plan in the editor, the session's own or a template.
    pub(super) fn write_plan(&mut self) {
        if self.session_running() {
            self.say(
                NoticeLevel::Warning,
                "a session is running: E edits a function's spec; P writes the plan once it ended",
            );
            return;
        }
        let now = self.now();
        // A demo's session without a plan starts from the demo's own: its
        // replies answer the functions it planned.
        let specs = match now.config.demo() {
            Some(demo) if now.specs.is_empty() => self
                .session
                .info
                .demos
                .iter()
                .find(|d| d.name == demo)
                .map(|d| d.plan.clone())
                .unwrap_or_default(),
            _ => now.specs.clone(),
        };
        let text = plan_text(&specs);
        self.open_editor(EditTarget::Plan, text);
    }

    /// The written plan sent: a new session from it, or the editor again
    /// with what is wrong.
    pub(super) fn send_plan(&mut self, text: String, actions: &mut Vec<Action>) {
        let specs = match parse_plan(&text) {
            Ok(specs) => specs,
            Err(why) => {
                self.say(NoticeLevel::Error, why.clone());
                let editor = EditorPopup::new(EditTarget::Plan, &text, &self.theme);
                self.popups
                    .push(Popup::Editor(Box::new(editor.with_error(why))));
                return;
            }
        };
        let now = self.now();
        let (task, inputs) = task_and_files(now);
        let step_mode = now.step_mode;
        let demo = now.config.demo().map(str::to_string);
        let said = format!(
            "a new session from your plan ({} function{})…",
            specs.len(),
            plural(specs.len())
        );
        self.go_live();
        let request = StartRequest::Task {
            task,
            inputs,
            step_mode,
            plan: Some(specs),
            demo,
        };
        self.start(request, actions);
        self.say(NoticeLevel::Info, said);
    }

    /// A new session after one that did not pass starts from its task and
    /// its files, ready to edit and send again: the files to describe again
    /// (each attached once its description comes back).
    pub(super) fn carry_over(&mut self, left: &State) -> Vec<PathBuf> {
        if Outcome::of(left) == Outcome::Passed || left.task.trim().is_empty() {
            return Vec::new();
        }
        let (task, files) = task_and_files(left);
        self.panes.task.insert_str(&task);
        files
    }
}

/// A session's task and the files attached to it (where they were read from).
fn task_and_files(s: &State) -> (String, Vec<PathBuf>) {
    let files = s
        .inputs
        .iter()
        .map(|i| PathBuf::from(&i.source_path))
        .collect();
    (s.task.clone(), files)
}
