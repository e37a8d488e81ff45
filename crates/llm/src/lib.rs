//! Streaming chat models: the trait, an OpenAI-compatible HTTP client, and a
//! scripted model that answers from recorded replies.
//!
//! What a caller gets from a call: the answer apart from the model's reasoning
//! ([`Delta`] while it streams, [`ChatReply::text`] and [`ChatReply::reasoning`]
//! at the end), why the reply ended ([`FinishReason`]: a reply cut off at the
//! token limit can be continued with [`ChatRequest::continuation`]), its token
//! usage (estimated and marked so when the server sends none), and on failure
//! an [`LlmError`] whose [`LlmErrorKind`] tells a failed call from a cancel.
//!
//! This module knows nothing of sessions, processes or terminals.
#![warn(unreachable_pub)]

mod error;
pub mod openai;
mod reasoning;
pub mod repetition;
pub mod scripted;
pub mod tokens;

use std::future::Future;
use std::pin::Pin;

use tokio::sync::mpsc;

pub use codeloop_protocol::{ChatMessage, Usage};
pub use error::{LlmError, LlmErrorKind};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    /// What the request is for, e.g. "plan", "tests/parse_line", "code/parse_line/2",
    /// "reflect/parse_line/1". HTTP models ignore it; the scripted model answers by it.
    pub tag: String,
    pub messages: Vec<ChatMessage>,
    pub temperature: Option<f32>,
    /// The longest reply, in tokens; None leaves it to the model's settings
    /// (`max_tokens` in the config, `--max-tokens`), then to the server.
    pub max_tokens: Option<u32>,
    /// For a reply read as data (a plan, a verdict): the JSON schema it must
    /// follow, asked of the server in the shape it takes (see
    /// [`Structured`]). The prompt still describes the format, and the reply
    /// is still validated: a server may ignore the schema.
    pub schema: Option<ReplySchema>,
    /// The start of the answer (a code block's opening and a function's
    /// `def` line): where the server can go on from it (see [`Prefilled`]),
    /// the model writes only the rest, and the reply's text begins with it;
    /// where it cannot, the request goes without it.
    pub prefill: Option<Prefill>,
}

/// The start of an answer, and where an answer gone on from it ends.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Prefill {
    pub text: String,
    /// Where the answer gone on from `text` ends (a code block opened in
    /// `text` closes at "```"): the server stops there, and the stop is not
    /// part of the reply. Sent only where `text` is gone on from.
    pub stop: Vec<String>,
}

/// Whether a request's prefill was gone on from, and how: each server
/// takes it another way, or not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefilled {
    /// llama.cpp's server: the chat rendered by its `/apply-template`, the
    /// prefill after it, and `/completions` goes on from there.
    Completions,
    /// vLLM: the prefill as a final assistant message with
    /// `continue_final_message`.
    ContinueFinal,
    /// The server has no way to go on from an answer's start (a final
    /// assistant message starts a new turn there): asked without it.
    NotContinued,
}

impl Prefilled {
    /// The words on the tape.
    pub fn as_str(self) -> &'static str {
        match self {
            Prefilled::Completions => "continued: /apply-template and /completions",
            Prefilled::ContinueFinal => "continued: continue_final_message",
            Prefilled::NotContinued => {
                "not continued: the server cannot go on from an answer's start"
            }
        }
    }

    /// The reply goes on from the prefill (its text begins with it).
    pub fn continued(self) -> bool {
        !matches!(self, Prefilled::NotContinued)
    }
}

/// A JSON schema for a reply, with the name servers want for it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplySchema {
    /// A short name (`plan`), as OpenAI's `json_schema.name` wants it.
    pub name: String,
    /// The JSON schema itself.
    pub schema: serde_json::Value,
}

/// How a reply's JSON schema was asked of the server: each server takes
/// another shape, and codeloop goes down this ladder until one is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Structured {
    /// `response_format: {type: "json_schema", json_schema: {name, schema}}`:
    /// OpenAI, vLLM, LM Studio, llama.cpp's server, Ollama's `/v1`.
    JsonSchema,
    /// `response_format: {type: "json_object", schema}`: llama-cpp-python's
    /// server (which answers `json_schema` with a 500).
    JsonObject,
    /// The server took neither: the prompt alone asks for the format.
    PromptOnly,
}

impl Structured {
    /// The word on the tape and in `codeloop models`.
    pub fn as_str(self) -> &'static str {
        match self {
            Structured::JsonSchema => "json_schema",
            Structured::JsonObject => "json_object",
            Structured::PromptOnly => "prompt only",
        }
    }
}

/// The tag suffix of a request that continues a cut-off reply.
pub(crate) const CONTINUE_TAG: &str = "continue";

impl ChatRequest {
    /// The request that asks the model to go on with a reply cut off at the
    /// token limit (`cut.finish_reason == FinishReason::Length`): the same
    /// conversation, the partial answer as the assistant's turn, and a user
    /// turn asking it to continue exactly where it stopped. Join the two
    /// replies with [`ChatReply::extend`]. Tagged `"{tag}/continue"`, so a
    /// scripted model can hold the continuation too.
    ///
    /// (Putting the partial answer last as an assistant turn and letting the
    /// model extend it works only on some servers; a new user turn works on all.)
    pub fn continuation(&self, cut: &ChatReply) -> ChatRequest {
        let mut messages = self.messages.clone();
        messages.push(ChatMessage::assistant(cut.text.clone()));
        messages.push(ChatMessage::user(
            "Your reply was cut off at the length limit. Continue exactly where it stopped: \
             do not repeat anything, do not start over, add no preface; if you were inside a \
             code block, go on inside it.",
        ));
        ChatRequest {
            tag: format!("{}/{CONTINUE_TAG}", self.tag),
            messages,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            schema: self.schema.clone(),
            prefill: None,
        }
    }
}

/// Why a reply ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum FinishReason {
    /// The model finished (also when the server did not say).
    #[default]
    Stop,
    /// The reply reached the token limit and was cut off (`"length"`).
    Length,
    /// Anything else the server said ("content_filter", "tool_calls", ...).
    Other(String),
}

impl FinishReason {
    /// From the wire's `finish_reason` (`"stop"`, `"length"`, ...; llama.cpp and
    /// some others say `"eos"` for a model that finished).
    pub(crate) fn from_wire(reason: &str) -> FinishReason {
        match reason {
            "stop" | "eos" | "end_turn" | "stop_sequence" => FinishReason::Stop,
            "length" | "max_tokens" => FinishReason::Length,
            other => FinishReason::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::Other(other) => other,
        }
    }
}

/// A finished reply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatReply {
    /// The answer: every content delta concatenated, reasoning left out.
    pub text: String,
    /// The model's reasoning: the server's reasoning field, and inline
    /// `<think>` blocks taken out of the content. Empty for most models.
    pub reasoning: String,
    /// Why the reply ended; `Length` means `text` is cut off.
    pub finish_reason: FinishReason,
    /// Tokens spent, reasoning included.
    pub usage: Option<Usage>,
    /// The usage was estimated (about 4 characters a token, see
    /// [`tokens`]), not counted by the model: the server sent none.
    pub usage_estimated: bool,
    /// How the request's schema was asked of the server; None when the
    /// request had no schema.
    pub structured: Option<Structured>,
    /// How the request's prefill was taken; None when it had none.
    pub prefilled: Option<Prefilled>,
}

impl ChatReply {
    /// The reply stopped at the token limit: its text is not whole.
    pub fn is_cut_off(&self) -> bool {
        self.finish_reason == FinishReason::Length
    }

    /// Join the reply to a [`ChatRequest::continuation`] of it: texts and
    /// reasoning run on, usage adds up, the continuation's finish reason wins.
    pub fn extend(&mut self, more: ChatReply) {
        self.text.push_str(&more.text);
        self.reasoning.push_str(&more.reasoning);
        self.finish_reason = more.finish_reason;
        self.usage = match (self.usage, more.usage) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.usage_estimated |= more.usage_estimated;
        self.structured = self.structured.or(more.structured);
        self.prefilled = self.prefilled.or(more.prefilled);
    }
}

/// A piece of a streamed reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delta {
    /// A piece of the answer.
    Content(String),
    /// A piece of the model's reasoning.
    Reasoning(String),
    /// Everything streamed so far for this call is void: the pieces that
    /// follow replace it. Sent when the stream broke after part of the reply
    /// and the call is made again, and when the reply turns out to have begun
    /// inside a reasoning block (its start is sent again as reasoning). Says why.
    Restart(String),
    /// A word for the person about the call, not part of the reply: it
    /// waits for the server's turn, or keeps the turn within this process.
    Status(String),
    /// The server took the request and its reply begins: the shape its
    /// schema was asked in and how its begun answer was taken, as the
    /// reply would say them, for a reply the caller stops before its end.
    Began {
        structured: Option<Structured>,
        prefilled: Option<Prefilled>,
    },
}

/// The model's context window: prompt and reply together, in tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextWindow {
    pub tokens: u64,
    /// Where the figure comes from, for messages: "the config", "llama.cpp's
    /// /props (n_ctx)", "Ollama's default (assumed)", ...
    pub source: String,
}

pub type ChatFuture<'a> = Pin<Box<dyn Future<Output = Result<ChatReply, LlmError>> + Send + 'a>>;
pub(crate) type ReportFuture<'a> = Pin<Box<dyn Future<Output = Option<ServerReport>> + Send + 'a>>;

/// What a model server is and what it takes (`codeloop models`).
#[derive(Debug)]
pub struct ServerReport {
    /// Its software, as far as codeloop can tell ("llama-cpp-python's server").
    pub server: String,
    /// The model names it lists.
    pub models: Vec<String>,
    pub window: Option<ContextWindow>,
    /// How many requests it serves at once; None for no known limit.
    pub slots: Option<usize>,
    /// The shape of structured reply it took for a tiny request with a
    /// schema, or why that request failed.
    pub structured: Result<Structured, LlmError>,
}
pub type ContextFuture<'a> = Pin<Box<dyn Future<Output = Option<ContextWindow>> + Send + 'a>>;

/// A chat model that streams its reply.
pub trait ChatModel: Send + Sync {
    /// Send the request; each piece of the reply is sent to `deltas` as it
    /// arrives (a closed receiver is not an error), and the whole reply is
    /// returned. Transient failures are retried inside (see the client's docs);
    /// an error here is final for this request.
    fn stream<'a>(&'a self, request: ChatRequest, deltas: mpsc::Sender<Delta>) -> ChatFuture<'a>;

    /// [`ChatModel::stream`] with only the answer's pieces forwarded, as plain
    /// text: reasoning is left out, and a [`Delta::Restart`] cannot be told
    /// (after one, the text streamed before it is void; the returned reply is
    /// always right). For callers that do not show reasoning or restarts.
    fn stream_chat<'a>(
        &'a self,
        request: ChatRequest,
        deltas: mpsc::Sender<String>,
    ) -> ChatFuture<'a> {
        Box::pin(async move {
            let (tx, mut rx) = mpsc::channel::<Delta>(64);
            let forward = async move {
                while let Some(delta) = rx.recv().await {
                    if let Delta::Content(text) = delta {
                        // A closed receiver is not an error: nobody is watching.
                        let _ = deltas.send(text).await;
                    }
                }
            };
            let (reply, ()) = tokio::join!(self.stream(request, tx), forward);
            reply
        })
    }

    /// The model's context window, when it is known: set in the config, or
    /// told by the server (asked once, then remembered). None when unknown.
    fn context_window<'a>(&'a self) -> ContextFuture<'a> {
        Box::pin(async { None })
    }

    /// What the server is and takes, asked of it (one tiny model call to
    /// learn the structured-reply shape); None for a model with no server.
    fn server_report<'a>(&'a self) -> ReportFuture<'a> {
        Box::pin(async { None })
    }

    /// Whether the model has an answer for a call tagged `tag`: false only
    /// for a model that answers from recorded replies and holds none left
    /// so tagged (the engine then does not ask for what it cannot give,
    /// e.g. one more candidate from a demo that has none).
    fn can_answer(&self, _tag: &str) -> bool {
        true
    }

    /// "openai-compatible", "scripted", "demo".
    fn provider(&self) -> &str;
    /// The model name as configured.
    fn model_name(&self) -> &str;
    /// Base URL, or the replies file for scripted models.
    fn endpoint(&self) -> &str;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_continuation_carries_the_cut_text_and_joins_back() {
        let request = ChatRequest {
            tag: "code/f/1".into(),
            messages: vec![ChatMessage::user("write f")],
            temperature: Some(0.2),
            max_tokens: Some(100),
            ..Default::default()
        };
        let mut cut = ChatReply {
            text: "def f():\n    ret".into(),
            finish_reason: FinishReason::from_wire("length"),
            usage: Some(Usage::new(5, 100)),
            ..Default::default()
        };
        assert!(cut.is_cut_off());
        let next = request.continuation(&cut);
        assert_eq!(next.tag, "code/f/1/continue");
        assert_eq!(next.messages.len(), 3);
        assert_eq!(
            next.messages[1],
            ChatMessage::assistant("def f():\n    ret")
        );
        cut.extend(ChatReply {
            text: "urn 1\n".into(),
            usage: Some(Usage::new(120, 3)),
            ..Default::default()
        });
        assert_eq!(cut.text, "def f():\n    return 1\n");
        assert!(!cut.is_cut_off());
        assert_eq!(cut.usage.map(|u| u.total()), Some(228));
        assert_eq!(
            FinishReason::from_wire("content_filter").as_str(),
            "content_filter"
        );
    }
}
