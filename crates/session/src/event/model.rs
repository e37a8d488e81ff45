//! The events of a model call: the request, its streamed reply and
//! reasoning, a restart or continuation, how it ended; and why it was made.

use serde::{Deserialize, Serialize};

use codeloop_protocol::{ChatMessage, Usage};

use super::{About, Begun, Delivers, Facts, PauseChange, Payload};

/// `Event::ModelRequest`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequestEvent {
    pub call_id: u64,
    pub purpose: Purpose,
    /// The request's tag as the model saw it ("plan", "code/parse_line/2"):
    /// the scripted model answers by it, so a tape can be replayed as a script.
    #[serde(default)]
    pub tag: String,
    pub messages: Vec<ChatMessage>,
}

/// `Event::ModelDelta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelDeltaEvent {
    pub call_id: u64,
    pub text: String,
}

/// `Event::ModelReasoning`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelReasoningEvent {
    pub call_id: u64,
    pub text: String,
}

/// `Event::ModelRestart`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRestartEvent {
    pub call_id: u64,
    pub reason: String,
}

/// `Event::ModelContinued`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelContinuedEvent {
    pub call_id: u64,
}

/// `Event::ModelReply`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelReplyEvent {
    pub call_id: u64,
    pub text: String,
    #[serde(default)]
    pub usage: Option<Usage>,
    pub duration_ms: u64,
    /// The model's reasoning, kept apart from `text`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reasoning: String,
    /// Why the reply ended, when not a plain stop ("length", "content_filter").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// `usage` was estimated (about 4 characters a token), not reported by the model.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub usage_estimated: bool,
    /// How the reply's JSON schema was asked of the server
    /// ("json_schema", "json_object", "prompt only"); None when the call
    /// had no schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<String>,
    /// codeloop stopped the reply there, its job done (its code block or
    /// its JSON closed): why, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The request gave the answer's start (a function's head): how the
    /// server took it ("continued: ...", "not continued: ...").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefilled: Option<String>,
}

/// `Event::ModelError`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelErrorEvent {
    pub call_id: u64,
    pub message: String,
    /// Tokens the failed call spent all the same (the prompt, and what
    /// streamed before it failed), estimated when the server said none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// Why a model call was made. `Review`: the review of a node's code
/// before it runs; `Inputs`: inputs of a node's function proposed to vote
/// on its candidates (functional consensus).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Purpose {
    Plan,
    Tests { node: String },
    Code { node: String },
    Reflect { node: String },
    Repair { node: String },
    Review { node: String },
    Inputs { node: String },
}

impl Purpose {
    pub fn node(&self) -> Option<&str> {
        match self {
            Purpose::Plan => None,
            Purpose::Tests { node }
            | Purpose::Code { node }
            | Purpose::Reflect { node }
            | Purpose::Repair { node }
            | Purpose::Review { node }
            | Purpose::Inputs { node } => Some(node),
        }
    }
}

impl Payload for ModelRequestEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "model_request",
            about: About {
                node: self.purpose.node(),
                call: Some(self.call_id),
                run: None,
                at_work: true,
            },
            streamed: false,
            pause: PauseChange::Begins(Begun::Call(&self.purpose)),
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

impl Payload for ModelDeltaEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "model_delta",
            about: About::call(self.call_id),
            streamed: true,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

impl Payload for ModelReasoningEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "model_reasoning",
            about: About::call(self.call_id),
            streamed: true,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

impl Payload for ModelRestartEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "model_restart",
            about: About::call(self.call_id),
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

impl Payload for ModelContinuedEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "model_continued",
            about: About::call(self.call_id),
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

impl Payload for ModelReplyEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "model_reply",
            about: About::call(self.call_id),
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

impl Payload for ModelErrorEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "model_error",
            about: About::call(self.call_id),
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}
