//! Attaching an input file: what no run could read is refused at once,
//! from its metadata (the prompt stays open with the path and why); the
//! description is made off the UI thread (`Action::DescribeInput`, by the
//! event loop's `Hooks::describer`: the binary's, which describes in a
//! child process under limits, `codeloop_engine::inputs`) and comes back
//! as `Msg::InputDescribed`; the Task pane says the file is being
//! described meanwhile. A file that could not be described is attached
//! all the same, with why and what to do.

use std::path::PathBuf;

use super::{Action, App, Focus, Popup};
use crate::panes::editor::{EditTarget, EditorPopup};
use codeloop_session::{InputFile, NoticeLevel};

/// Where an attachment was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachFrom {
    /// The attach prompt, with the text typed (shown again on a refusal).
    Prompt(String),
    /// The last session's files, carried over to a new one.
    Carried,
}

impl App {
    /// Attach the file at the path typed: refused at once when no run
    /// could read it, else described in the background.
    pub(super) fn attach(&mut self, text: String, actions: &mut Vec<Action>) {
        let path = PathBuf::from(text.trim());
        match codeloop_inputs::open(&path) {
            Ok(_) => self.describe_file(path, AttachFrom::Prompt(text), actions),
            Err(refusal) => self.refused(refusal.to_string(), AttachFrom::Prompt(text)),
        }
    }

    /// Describe `path` off the UI thread; it is attached when the
    /// description comes back.
    pub(super) fn describe_file(
        &mut self,
        path: PathBuf,
        from: AttachFrom,
        actions: &mut Vec<Action>,
    ) {
        if matches!(from, AttachFrom::Prompt(_)) {
            let shown = crate::sanitize::sanitize(&path.display().to_string());
            self.say(NoticeLevel::Info, format!("describing {shown}…"));
        }
        self.panes.task.describing(path.clone());
        actions.push(Action::DescribeInput { path, from });
    }

    /// A description came back: the file attached (with a warning when it
    /// could not be described), or refused with why and what to do.
    pub(super) fn on_input_described(
        &mut self,
        path: PathBuf,
        from: AttachFrom,
        result: Result<InputFile, codeloop_inputs::Refusal>,
    ) {
        let shown = crate::sanitize::sanitize(&path.display().to_string());
        let file = match result {
            Ok(file) => file,
            Err(refusal) => {
                self.panes.task.not_described(&path);
                return self.refused(refusal.to_string(), from);
            }
        };
        let failure = file
            .description
            .as_ref()
            .and_then(|d| d.failure())
            .map(str::to_string);
        let room = self.session.info.input_room;
        match self.panes.task.attach_described(path, &file, room) {
            Ok(summary) => {
                match failure {
                    Some(why) => self.say(
                        NoticeLevel::Warning,
                        format!(
                            "attached {shown}, but could not describe this file: {}; {}",
                            crate::sanitize::sanitize(&why),
                            codeloop_inputs::UNDESCRIBED_TODO
                        ),
                    ),
                    None => self.say(NoticeLevel::Info, format!("attached {shown}: {summary}")),
                }
                if matches!(from, AttachFrom::Prompt(_)) {
                    self.focus = Focus::Task;
                }
            }
            Err(refusal) => self.refused(refusal.to_string(), from),
        }
    }

    /// A file not attached: the prompt it came from opened again with the
    /// path and why, or a warning for a file carried over.
    fn refused(&mut self, why: String, from: AttachFrom) {
        let why = crate::sanitize::sanitize(&why);
        match from {
            AttachFrom::Prompt(text) => {
                self.say(NoticeLevel::Error, why.clone());
                let editor = EditorPopup::new(EditTarget::Attach, &text, &self.theme);
                self.popups
                    .push(Popup::Editor(Box::new(editor.with_error(why))));
            }
            AttachFrom::Carried => self.say(
                NoticeLevel::Warning,
                format!("not attached again: the input file {why}"),
            ),
        }
    }
}
