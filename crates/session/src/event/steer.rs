//! Steering: the steps the engine can pause before, and the commands the
//! person at the keyboard gives. Their variants keep their fields inline:
//! each is matched in one place per consumer, and a payload struct each
//! would only add a name to the many places that write them.

use serde::{Deserialize, Serialize};

use codeloop_protocol::ChatMessage;

use super::{FunctionSpec, PauseChange, Purpose};

/// A step the engine can pause before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Step {
    /// Before a model call. `again`: why the call is asked once more, not
    /// for the first time (a reply with no code, a fallback to the other
    /// way of asking, a repeat): every call is paused before, and the
    /// pause says which it is.
    ModelCall {
        purpose: Purpose,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        again: Option<String>,
    },
    Run {
        node: Option<String>,
        iteration: u32,
    },
    /// Replace a node's tests with the model's fix (approve applies it,
    /// skip rejects it).
    TestFix {
        node: String,
        iteration: u32,
        old: String,
        new: String,
        reason: String,
    },
    /// A model call's prompt, written and not yet sent (the person asked to
    /// see it, `Command::ReviewPrompt`): approve sends it (as edited, if it
    /// was), skip does not make the call.
    Prompt {
        purpose: Purpose,
        tag: String,
        messages: Vec<ChatMessage>,
    },
    /// A node's code was reviewed before it runs (its `Event::Review` is
    /// just before): approve runs it, skip sends it to a repair with the
    /// review's findings, unrun; an edit of the code or a hint meanwhile
    /// is taken as always.
    Review { node: String, iteration: u32 },
    /// The test of a node may be wrong (its reflection on `iteration`'s
    /// failure says so, `why`): the person may edit the tests before the
    /// repaired code runs; approve (or skip) goes on with it. With
    /// `set_aside`, the loop blamed that test (`Next::SetAsideTest`):
    /// approve sets it aside, skip keeps it (the loop goes on with the
    /// code), an edit of the tests is taken instead.
    SuspectTest {
        node: String,
        iteration: u32,
        why: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        set_aside: Option<String>,
    },
}

/// Steering: what the person at the keyboard asks of the engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Command {
    /// Pause before every model call and every run.
    SetStepMode {
        on: bool,
    },
    /// Do the step the engine is paused before.
    Approve,
    /// Skip the step the engine is paused before (a run counts as not run; a model call is not made).
    Skip,
    EditTask {
        task: String,
    },
    EditSpec {
        node: String,
        spec: FunctionSpec,
    },
    EditCode {
        node: String,
        code: String,
    },
    EditTests {
        node: String,
        code: String,
    },
    /// Goes into the node's next reflection and repair prompt.
    Hint {
        node: String,
        text: String,
    },
    /// Run this node's tests again (and then its dependents).
    RerunNode {
        node: String,
    },
    /// Stop the session; what is done stays on the tape.
    Cancel,
    /// Paused before a model call: go on, and pause again once its prompt
    /// is written (a `Step::Prompt`), so the person sees it and may edit it.
    ReviewPrompt,
    /// Paused before a prompt is sent (`Step::Prompt`): send these messages
    /// instead (the next approve sends them).
    EditPrompt {
        messages: Vec<ChatMessage>,
    },
}

impl Step {
    /// The node whose step it is: a call's (not the plan's), a run's (not
    /// the program's), a test fix's or a review's.
    pub fn node(&self) -> Option<&str> {
        match self {
            Step::ModelCall { purpose, .. } | Step::Prompt { purpose, .. } => purpose.node(),
            Step::Run { node, .. } => node.as_deref(),
            Step::TestFix { node, .. }
            | Step::Review { node, .. }
            | Step::SuspectTest { node, .. } => Some(node),
        }
    }
}

impl Command {
    /// How the command changes a pause: approving, skipping, cancelling
    /// or asking to see the prompt ends it (the prompt's own pause follows).
    pub(crate) fn pause_change(&self) -> PauseChange<'static> {
        match self {
            Command::Approve | Command::Skip | Command::Cancel | Command::ReviewPrompt => {
                PauseChange::Ends
            }
            Command::SetStepMode { .. }
            | Command::EditTask { .. }
            | Command::EditSpec { .. }
            | Command::EditCode { .. }
            | Command::EditTests { .. }
            | Command::Hint { .. }
            | Command::RerunNode { .. }
            | Command::EditPrompt { .. } => PauseChange::Keeps,
        }
    }
}
