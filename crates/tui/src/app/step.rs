//! Step mode's answers that take more than one key's thought: `e` at a
//! pause before a model call opens its prompt in the editor (the engine
//! first writes it and pauses again; the editor opens then, in one key),
//! and `x` on what everything after depends on (the plan, a function's
//! run) asks first and says what it will end.

use super::{Action, App};
use crate::describe::describe_command;
use crate::panes::confirm::Confirm;
use codeloop_session::{Command, NoticeLevel, Purpose, Step};

impl App {
    /// The engine is paused before a model call, at the end of a live tape.
    pub(super) fn paused_before_a_call(&self) -> bool {
        self.at_end()
            && matches!(
                self.engine_paused(),
                Some(Step::ModelCall { .. } | Step::Prompt { .. })
            )
    }

    /// A pause (or the end) was recorded: the prompt `e` asked for is
    /// written when it is a prompt pause, and opens in the editor.
    pub(super) fn prompt_written(&mut self, prompt: bool, actions: &mut Vec<Action>) {
        if !std::mem::take(&mut self.popups.edit_prompt_when_written) {
            return;
        }
        if prompt && self.paused_before_a_call() {
            self.edit_prompt(actions);
        }
    }

    /// `x`: skip the step the engine waits at, asking first when what it
    /// skips is what the rest depends on.
    pub(super) fn skip(&mut self, actions: &mut Vec<Action>) {
        let question = match self.engine_paused() {
            Some(Step::ModelCall {
                purpose: Purpose::Plan,
            })
            | Some(Step::Prompt {
                purpose: Purpose::Plan,
                ..
            }) => Some(Confirm::SkipPlan),
            Some(Step::Run { node: Some(_), .. }) => Some(Confirm::SkipRun),
            Some(
                Step::ModelCall { .. }
                | Step::Prompt { .. }
                | Step::Run { node: None, .. }
                | Step::TestFix { .. }
                | Step::Review { .. },
            )
            | None => None,
        };
        match question {
            Some(confirm) => self.ask(confirm, super::guard::OnYes::Skip),
            None => self.send_skip(actions),
        }
    }

    /// The skip, to the engine (from the past of the tape too).
    pub(super) fn send_skip(&mut self, actions: &mut Vec<Action>) {
        if self.engine_paused().is_none() {
            self.say(NoticeLevel::Info, "nothing to skip: the engine went on");
            return;
        }
        if self.at_end() {
            self.say(
                NoticeLevel::Info,
                format!("sent: {}", describe_command(&Command::Skip)),
            );
            actions.push(Action::Steer(Command::Skip));
        } else {
            self.steer_from_the_past(Command::Skip, actions);
        }
    }
}
