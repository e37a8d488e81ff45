//! Step mode's answers that take more than one key's thought: `e` at a
//! pause before a model call opens its prompt in the editor (the engine
//! first writes it and pauses again; the editor opens then, in one key),
//! and `x` on a step whose skip ends something (the plan; a function's
//! tests, code, repair or run) asks first and says what it will end.

use super::{Action, App};
use crate::panes::confirm::Confirm;
use codeloop_session::story::words;
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

    /// The node whose test the engine waits at, doubted (`Step::SuspectTest`),
    /// at the end of a live tape.
    pub(super) fn doubted_node(&self) -> Option<String> {
        match self.engine_paused() {
            Some(Step::SuspectTest { node, .. }) if self.at_end() => Some(node.clone()),
            _ => None,
        }
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

    /// `x`: skip the step the engine waits at, asking first when skipping
    /// it ends something: the plan, a function's tests, code, repair or run.
    pub(super) fn skip(&mut self, actions: &mut Vec<Action>) {
        match self.skip_question() {
            Some(confirm) => self.ask(confirm, super::guard::OnYes::Skip),
            None => self.send_skip(actions),
        }
    }

    /// What to ask before skipping the step the engine waits at, if its
    /// skip ends something; None where it only leaves a call out (a
    /// review, the vote's inputs, one more candidate) or rejects a test fix.
    fn skip_question(&self) -> Option<Confirm> {
        let (purpose, tag) = match self.engine_paused()? {
            Step::ModelCall { purpose, .. } => (purpose, None),
            Step::Prompt { purpose, tag, .. } => (purpose, Some(tag.as_str())),
            Step::Run { node: Some(_), .. } => return Some(Confirm::SkipRun),
            Step::Run { node: None, .. }
            | Step::TestFix { .. }
            | Step::Review { .. }
            | Step::SuspectTest { .. } => {
                return None;
            }
        };
        match purpose {
            Purpose::Plan => Some(Confirm::SkipPlan),
            Purpose::Tests { .. } => Some(Confirm::SkipTests),
            Purpose::Code { node } if !self.another_candidate(node, tag) => Some(Confirm::SkipCode),
            Purpose::Repair { .. } => Some(Confirm::SkipRepair),
            Purpose::Code { .. }
            | Purpose::Reflect { .. }
            | Purpose::Review { .. }
            | Purpose::Inputs { .. } => None,
        }
    }

    /// Whether the code call the engine waits before is one more candidate
    /// for the vote (`--candidates N`), whose skip only leaves it out: its
    /// tag says so (`code/NAME/1/cK`), or, before its prompt is written,
    /// the function has no code yet and a code call was made for it.
    fn another_candidate(&self, node: &str, tag: Option<&str>) -> bool {
        if let Some(tag) = tag {
            return tag.starts_with(&format!("code/{node}/1/c"));
        }
        let Some(state) = self.session.timeline.head() else {
            return false;
        };
        state.nodes.get(node).is_some_and(|n| n.versions.is_empty())
            && state
                .calls
                .values()
                .any(|c| matches!(&c.purpose, Purpose::Code { node: n } if n == node))
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
                format!("sent: {}", words::command(&Command::Skip)),
            );
            actions.push(Action::Steer(Command::Skip));
        } else {
            self.steer_from_the_past(Command::Skip, actions);
        }
    }
}
