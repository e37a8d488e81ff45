//! The app's side of `o`: what the editor is given, and what comes back.

use super::{Action, App, CodeTab};
use crate::session::NoticeLevel;
use crate::tui::external_editor::EditorOutcome;
use crate::tui::panes::editor::EditTarget;

impl App {
    /// The selected node's code, or its tests on the tests tab, to edit.
    pub(super) fn code_target(&self, node: String) -> (EditTarget, String) {
        let n = self.state().nodes.get(&node);
        if self.code.tab() == CodeTab::Tests {
            let text = n.and_then(|n| n.tests.clone()).unwrap_or_default();
            (EditTarget::Tests { node }, text)
        } else {
            let text = n.and_then(|n| n.code()).unwrap_or_default().to_string();
            (EditTarget::Code { node }, text)
        }
    }

    /// The person's editor closed: send a changed text, say when nothing
    /// changed, and on a failure keep what was written in the editor popup.
    pub(super) fn on_editor_done(
        &mut self,
        target: EditTarget,
        outcome: EditorOutcome,
        actions: &mut Vec<Action>,
    ) {
        match outcome {
            EditorOutcome::Edited(text) => self.send_edit(target, text, actions),
            EditorOutcome::Unchanged => {
                self.say(NoticeLevel::Info, "unchanged in the editor: nothing sent");
            }
            EditorOutcome::Failed {
                message,
                text: Some(text),
            } => {
                self.open_editor(target, text);
                self.say(
                    NoticeLevel::Error,
                    format!("{message}; what it wrote is here: Ctrl-S sends, Esc discards"),
                );
            }
            EditorOutcome::Failed {
                message,
                text: None,
            } => self.say(
                NoticeLevel::Error,
                format!("{message}; nothing was changed"),
            ),
        }
        self.dirty = true;
    }
}
