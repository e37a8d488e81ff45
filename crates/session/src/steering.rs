//! The fold of a person's steering command: what each `Command` on the
//! tape changes in the state (the pause it ends is cleared by
//! `pause_after`, in the fold itself).

use super::event::{Command, Step};
use super::state::{HistoryEntry, State};

impl State {
    pub(super) fn steer(&mut self, command: &Command) {
        // A cancel once the session ended stops nothing: the workbench
        // wrote one when a person quit from the past of a passed session
        // (before issue 21), and such tapes must still read as passed.
        if matches!(command, Command::Cancel) && self.ended() {
            return;
        }
        match command {
            Command::SetStepMode { on } => self.step_mode = *on,
            // The pause these end is cleared after this, by `pause_after`.
            Command::Skip => {
                if let Some(Step::Run {
                    node: Some(node), ..
                }) = &self.paused
                    && let Some(n) = self.nodes.get_mut(node)
                {
                    n.run_skipped = true;
                }
                self.prompt_review = None;
                self.prompt_edit = None;
            }
            Command::Cancel => {
                self.cancelled = true;
                self.prompt_review = None;
                self.prompt_edit = None;
            }
            Command::Approve => {}
            Command::ReviewPrompt => {
                if let Some(Step::ModelCall { purpose }) = &self.paused {
                    self.prompt_review = Some(purpose.clone());
                }
            }
            // Only the prompt the engine is paused before can be edited.
            Command::EditPrompt { messages } => {
                if let Some(Step::Prompt { purpose, .. }) = &self.paused {
                    self.prompt_edit = Some((purpose.clone(), messages.clone()));
                }
            }
            Command::EditTask { task } => {
                self.task = task.clone();
                self.replan = true;
            }
            // Applied only when the edited plan is still a valid DAG;
            // the engine records why when it is not (a `PlanError`).
            Command::EditSpec { node, spec } => {
                if let Ok(specs) = super::plan::edit_spec(&self.specs, node, spec) {
                    self.specs = specs;
                    if let Some(n) = self.nodes.get_mut(node) {
                        n.spec = spec.clone();
                    }
                }
            }
            Command::EditTests { node, code } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.set_tests(code);
                    n.queue_edit();
                }
            }
            Command::Hint { node, text } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.hints.push(text.clone());
                }
            }
            Command::RerunNode { node } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.unsettle();
                    n.queued = true;
                }
            }
            // An edited code version arrives as a `Code` event with source `Edit`.
            Command::EditCode { .. } => {}
        }
        self.steers.push(command.clone());
        self.history.push(HistoryEntry::Steer {
            command: command.clone(),
        });
    }
}
