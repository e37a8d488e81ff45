//! The app's side of `o` (what the editor is given, what comes back) and of
//! the palette's theme switch.

use super::{Action, App, CodeTab, Theme};
use crate::external_editor::EditorOutcome;
use crate::panes::editor::EditTarget;
use codeloop_session::NoticeLevel;

impl App {
    /// The selected node's code, or its tests on the tests tab, to edit.
    pub(super) fn code_target(&self, node: String) -> (EditTarget, String) {
        let n = self.state().nodes.get(&node);
        if self.panes.code.tab() == CodeTab::Tests {
            let text = n.and_then(|n| n.tests.clone()).unwrap_or_default();
            (EditTarget::Tests { node }, text)
        } else {
            let text = n.and_then(|n| n.code()).unwrap_or_default().to_string();
            (EditTarget::Code { node }, text)
        }
    }

    /// Switch to a built-in theme (the palette); NO_COLOR keeps colours off.
    pub(super) fn set_theme(&mut self, name: &str) {
        if crate::theme::no_color() {
            self.say(
                NoticeLevel::Info,
                "NO_COLOR is set: the theme stays colourless",
            );
            return;
        }
        match Theme::load_coloured(name, std::path::Path::new("")) {
            Ok(theme) => {
                self.theme = theme;
                self.say(
                    NoticeLevel::Info,
                    format!("theme: {name} (for this window; [ui] theme in the config keeps it)"),
                );
            }
            Err(e) => self.say(NoticeLevel::Error, e.to_string()),
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
