//! The app's side of the model-call inspector (`m`): where it opens, its
//! intents, and the prompt edit it leads to (the editor's text back into
//! messages, sent as `Command::EditPrompt`).

use crossterm::event::KeyEvent;

use super::{Action, App, Popup};
use crate::keymap::{self, GlobalAct, SteerAct};
use crate::panes::Handled;
use crate::panes::editor::EditTarget;
use crate::panes::inspector::{Inspector, InspectorIntent};
use crate::panes::inspector_lines::{self, parse_prompt, prompt_text};
use codeloop_session::{Command, NoticeLevel, Step};

impl App {
    /// The waiting call is shown only live, at the end of the tape.
    fn inspect_live(&self) -> bool {
        self.engine_alive() && self.at_end()
    }

    /// Open the inspector on the selected node's latest call at the cursor
    /// (or the call the engine waits before).
    pub(super) fn open_inspector(&mut self) {
        let live = self.inspect_live();
        match inspector_lines::opening(self.state(), self.selected(), live) {
            Some(target) => self
                .popups
                .push(Popup::Inspector(Box::new(Inspector::new(target, live)))),
            None => self.say(
                NoticeLevel::Info,
                "no model call yet: the inspector shows each call once it is made",
            ),
        }
    }

    pub(super) fn on_inspector_key(
        &mut self,
        mut inspector: Box<Inspector>,
        key: KeyEvent,
        actions: &mut Vec<Action>,
    ) {
        let (state, theme, screen) = (self.session.timeline.state(), &self.theme, self.screen);
        match inspector.on_key(key, state, theme, screen) {
            Handled::Intent(InspectorIntent::Close) => {}
            Handled::Intent(InspectorIntent::EditPrompt) => {
                self.popups.push(Popup::Inspector(inspector));
                self.edit_prompt(actions);
            }
            Handled::Done => self.popups.push(Popup::Inspector(inspector)),
            Handled::NotMine => {
                self.popups.push(Popup::Inspector(inspector));
                // Approve and skip work from here: the prompt is in view.
                if let Some(GlobalAct::Steer(act @ (SteerAct::Approve | SteerAct::Skip))) =
                    keymap::lookup(keymap::STEER, &key).filter(|_| !self.read_only())
                {
                    self.on_steer(act, actions);
                }
            }
        }
    }

    /// Paused before a prompt is sent: edit it. Paused before the call:
    /// have its prompt written and shown first (the engine pauses again).
    pub(super) fn edit_prompt(&mut self, actions: &mut Vec<Action>) {
        if !self.inspect_live() {
            self.say(
                NoticeLevel::Warning,
                "only a prompt not yet sent can be edited: in a live session, in step mode (s), paused before a model call",
            );
            return;
        }
        let state = self.state();
        match &state.paused {
            Some(Step::Prompt { tag, messages, .. }) => {
                let shown = state.prompt_edit.as_ref().map_or(messages, |e| &e.messages);
                let text = prompt_text(shown);
                let tag = tag.clone();
                self.open_editor(EditTarget::Prompt { tag }, text);
            }
            Some(Step::ModelCall { .. }) => {
                actions.push(Action::Steer(Command::ReviewPrompt));
                self.popups.edit_prompt_when_written = true;
                self.say(
                    NoticeLevel::Info,
                    "writing the prompt: it opens in the editor once written",
                );
            }
            Some(
                Step::Run { .. }
                | Step::TestFix { .. }
                | Step::Review { .. }
                | Step::SuspectTest { .. },
            )
            | None => self.say(
                NoticeLevel::Warning,
                "no model call waits: turn step mode on (s) to pause before the next one",
            ),
        }
    }

    /// The edited prompt as a command, or (a line to fix) back to the editor.
    pub(super) fn prompt_command(&mut self, tag: String, text: String) -> Option<Command> {
        match parse_prompt(&text) {
            Ok(messages) => Some(Command::EditPrompt { messages }),
            Err(message) => {
                self.say(NoticeLevel::Error, message);
                self.open_editor(EditTarget::Prompt { tag }, text);
                None
            }
        }
    }
}
