//! The fold of a person's steering command: what each `Command` on the
//! tape changes in the state (the pause it ends is cleared by
//! `pause_after`, in the fold itself).

use super::event::{Command, Step};
use super::state::{HistoryEntry, NodeState, PromptEdit, State, SteerAt};

impl State {
    pub(super) fn steer(&mut self, command: &Command) {
        // A cancel once the session ended stops nothing: the workbench
        // wrote one when a person quit from the past of a passed session
        // (before issue 21), and such tapes must still read as passed.
        if matches!(command, Command::Cancel) && self.ended() {
            return;
        }
        self.steer_with(command);
        let steer = self.steers.len();
        self.steers.push(command.clone());
        // The pause this answers is still set (cleared after, by `pause_after`).
        let review_skip =
            matches!(command, Command::Skip) && matches!(self.paused, Some(Step::Review { .. }));
        let at = self.steer_at(command);
        self.history.push(HistoryEntry::Steer {
            steer,
            review_skip,
            at,
        });
    }

    /// Where `command` comes: its node (or the node of the step paused
    /// before), that node's iteration, the prompt paused before.
    fn steer_at(&self, command: &Command) -> SteerAt {
        let own = match command {
            Command::EditSpec { node, .. }
            | Command::EditCode { node, .. }
            | Command::EditTests { node, .. }
            | Command::Hint { node, .. }
            | Command::RerunNode { node } => Some(node.clone()),
            Command::SetStepMode { .. }
            | Command::Approve
            | Command::Skip
            | Command::EditTask { .. }
            | Command::Cancel
            | Command::ReviewPrompt
            | Command::EditPrompt { .. } => None,
        };
        let paused_node = self
            .paused
            .as_ref()
            .and_then(Step::node)
            .map(str::to_string);
        let tag = match &self.paused {
            Some(Step::Prompt { tag, .. }) => Some(tag.clone()),
            _ => None,
        };
        let node = own.or(paused_node);
        let iteration = node
            .as_deref()
            .and_then(|n| self.nodes.get(n))
            .map_or(0, |n| n.iteration());
        SteerAt {
            node,
            iteration,
            tag,
        }
    }

    /// What the command changes: how the engine steps (step mode, and the
    /// answers to the pause it is in: go on, skip, cancel, see the prompt,
    /// send it edited), and the work (the task, a spec, tests, hints, a
    /// node run again).
    fn steer_with(&mut self, command: &Command) {
        match command {
            Command::SetStepMode { on } => self.step_mode = *on,
            // The pause these end is cleared after this, by `pause_after`.
            Command::Skip => {
                if let Some(n) = self.node_paused_before_run() {
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
            Command::Approve => {
                if let Some(n) = self.node_paused_before_run() {
                    n.run_approved = true;
                }
            }
            Command::ReviewPrompt => {
                if let Some(Step::ModelCall { purpose, .. }) = &self.paused {
                    self.prompt_review = Some(purpose.clone());
                }
            }
            // Only the prompt the engine is paused before can be edited.
            Command::EditPrompt { messages } => {
                if let Some(Step::Prompt { purpose, .. }) = &self.paused {
                    self.prompt_edit = Some(PromptEdit {
                        purpose: purpose.clone(),
                        messages: messages.clone(),
                    });
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
    }

    /// The node whose run the engine is paused before, if it is.
    fn node_paused_before_run(&mut self) -> Option<&mut NodeState> {
        let Some(Step::Run {
            node: Some(node), ..
        }) = &self.paused
        else {
            return None;
        };
        self.nodes.get_mut(node)
    }
}

#[cfg(test)]
mod tests {
    use crate::event::{
        CodeEvent, CodeSource, Event, FunctionSpec, PausedEvent, PlanEvent, Record, RunKind,
        RunStartedEvent, SteerEvent,
    };

    use super::*;

    fn fold(events: Vec<Event>) -> State {
        let records: Vec<Record> = events
            .into_iter()
            .enumerate()
            .map(|(seq, event)| Record {
                seq: seq as u64,
                t_ms: 0,
                event,
            })
            .collect();
        State::from_records(&records)
    }

    fn code(source: CodeSource, iteration: u32) -> Event {
        Event::Code(CodeEvent {
            node: "f".into(),
            iteration,
            code: "def f(): pass\n".into(),
            source,
            notes: Vec::new(),
        })
    }

    #[test]
    fn an_approved_run_is_on_the_tape_until_it_runs_or_the_model_writes_new_code() {
        let opening = || {
            vec![
                Event::Plan(PlanEvent {
                    specs: vec![FunctionSpec {
                        name: "f".into(),
                        purpose: "p".into(),
                        inputs: String::new(),
                        output: String::new(),
                        depends_on: vec![],
                        head: None,
                    }],
                }),
                code(CodeSource::Model, 1),
                Event::Paused(PausedEvent {
                    step: Step::Run {
                        node: Some("f".into()),
                        iteration: 1,
                    },
                }),
                Event::Steer(SteerEvent {
                    command: Command::Approve,
                }),
            ]
        };
        let approved = |events: Vec<Event>| fold(events).nodes["f"].run_approved;
        assert!(approved(opening()));
        // The person's edit made while it waited keeps the approval.
        assert!(approved(
            [opening(), vec![code(CodeSource::Edit, 2)]].concat()
        ));
        // The model's repair does not.
        assert!(!approved(
            [opening(), vec![code(CodeSource::Model, 2)]].concat()
        ));
        // The run spends it.
        let run = Event::RunStarted(RunStartedEvent {
            run_id: 1,
            node: Some("f".into()),
            iteration: 1,
            kind: RunKind::NodeTests,
        });
        assert!(!approved([opening(), vec![run]].concat()));
        // Approving another step approves no run.
        let mut other = opening();
        other[2] = Event::Paused(PausedEvent {
            step: Step::ModelCall {
                purpose: crate::event::Purpose::Code { node: "f".into() },
                again: None,
            },
        });
        assert!(!approved(other));
    }
}
