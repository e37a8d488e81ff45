//! Streaming chat models: the trait, an OpenAI-compatible HTTP client, and a
//! scripted model that answers from recorded replies.
//!
//! This module knows nothing of sessions, processes or terminals.

pub mod openai;
pub mod scripted;

use std::future::Future;
use std::pin::Pin;

use tokio::sync::mpsc;

use crate::protocol::{ChatMessage, Usage};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    /// What the request is for, e.g. "plan", "tests/parse_line", "code/parse_line/2",
    /// "reflect/parse_line/1". HTTP models ignore it; the scripted model answers by it.
    pub tag: String,
    pub messages: Vec<ChatMessage>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
}

/// A finished reply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatReply {
    /// The whole text (all deltas concatenated).
    pub text: String,
    pub usage: Option<Usage>,
    /// The usage was estimated (about 4 characters a token), not counted by the
    /// model: the scripted and demo models estimate when their script has none.
    pub usage_estimated: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("cannot reach the model at {url}: {message}. Is the server running? Check --base-url.")]
    Unreachable { url: String, message: String },
    #[error("the model at {url} answered HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error(
        "the model at {url} did not answer within {secs} s (raise `request_timeout_secs` in the config)"
    )]
    Timeout { url: String, secs: u64 },
    #[error(
        "the model at {url} went silent for {secs} s in the middle of its reply (raise `request_timeout_secs` in the config if the model is just slow)"
    )]
    Stalled { url: String, secs: u64 },
    #[error(
        "the model at {url} still answered HTTP {status} after {attempts} attempts: {body}. The server is busy or failing: try again later, or raise `retries` in the config"
    )]
    RetriesExhausted {
        url: String,
        status: u16,
        attempts: u32,
        body: String,
    },
    #[error(
        "the model at {url} answered HTTP {status} and asked to be retried in {wait_secs} s, longer than codeloop waits ({max_secs} s): {body}. Try again later"
    )]
    RetryTooLong {
        url: String,
        status: u16,
        wait_secs: u64,
        max_secs: u64,
        body: String,
    },
    #[error("the model at {url} reported an error in the middle of its reply: {message}")]
    InStream { url: String, message: String },
    #[error("the model settings are not usable: {0}")]
    BadSetting(String),
    #[error("the reply stream from {url} was cut off before it finished: {message}")]
    StreamCut { url: String, message: String },
    #[error("the model at {url} sent something that is not the OpenAI chat format: {message}")]
    Protocol { url: String, message: String },
    #[error(
        "the scripted model has no reply left for this request ({0}); the replies file is shorter than the session"
    )]
    ScriptExhausted(String),
    #[error("cannot load scripted replies from {path}: {message}")]
    Script { path: String, message: String },
    #[error("the request was cancelled")]
    Cancelled,
}

pub type ChatFuture<'a> = Pin<Box<dyn Future<Output = Result<ChatReply, LlmError>> + Send + 'a>>;

/// A chat model that streams its reply.
pub trait ChatModel: Send + Sync {
    /// Send the request; each piece of text is sent to `deltas` as it arrives
    /// (a closed receiver is not an error), and the whole reply is returned.
    fn stream_chat<'a>(
        &'a self,
        request: ChatRequest,
        deltas: mpsc::Sender<String>,
    ) -> ChatFuture<'a>;

    /// "openai-compatible", "scripted", "demo".
    fn provider(&self) -> &str;
    /// The model name as configured.
    fn model_name(&self) -> &str;
    /// Base URL, or the replies file for scripted models.
    fn endpoint(&self) -> &str;
}
