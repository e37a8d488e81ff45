//! What can go wrong with a model call, and what kind of wrong it is.
//!
//! Callers decide on the kind, not on the variant: `bench` counts a problem
//! whose model call failed apart from one whose code failed; the engine stops a
//! session on an unrecoverable error, trims its prompt on a context overflow,
//! and records a cancel as a cancel.

/// A failed model call. Every message says what happened and what to do.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("cannot reach the model at {url}: {message}. Is the server running there?")]
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
        "the model at {url} sent no data for {secs} s in the middle of its reply (keep-alive comments are not data; raise `request_timeout_secs` in the config if the model is just slow)"
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
    /// The prompt (with room for the reply) is larger than the model's context
    /// window: said by the server (vLLM, llama.cpp, OpenAI, Ollama error bodies,
    /// llama.cpp's empty stream), or found before the call for a server that
    /// would silently cut the prompt (Ollama).
    #[error("the request to {url} does not fit the model's context window: {detail}. {advice}")]
    ContextOverflow {
        url: String,
        /// The window in tokens, when known.
        window: Option<u64>,
        /// The prompt's size in tokens, when known (counted by the server or estimated).
        prompt_tokens: Option<u64>,
        /// What the server said, or what codeloop found.
        detail: String,
        /// What to do, for this kind of server.
        advice: String,
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
    #[error("the scripted model has no recorded answer to this prompt: {0}")]
    ScriptMiss(String),
    #[error("cannot load scripted replies from {path}: {message}")]
    Script { path: String, message: String },
    #[error("the request was cancelled")]
    Cancelled,
}

/// What kind of failure a [`LlmError`] is, for callers that count or decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LlmErrorKind {
    /// The person (or the program) stopped the call: not a failure.
    Cancelled,
    /// The server turned the API key down or none was sent (HTTP 401/403).
    Auth,
    /// The server cannot be reached, or did not answer in time.
    Unreachable,
    /// The prompt does not fit the model's context: a shorter prompt may work.
    ContextOverflow,
    /// The server stayed busy or failing (429/5xx) through every retry.
    Busy,
    /// The server answered, but not with a usable reply (another HTTP status,
    /// an error in the stream, a stream cut off, a body in another format).
    BadReply,
    /// The settings or the script are not usable (a bad base URL, a replies
    /// file that ran out).
    Setup,
}

impl LlmError {
    pub fn kind(&self) -> LlmErrorKind {
        match self {
            LlmError::Cancelled => LlmErrorKind::Cancelled,
            LlmError::Status {
                status: 401 | 403, ..
            } => LlmErrorKind::Auth,
            LlmError::Unreachable { .. } | LlmError::Timeout { .. } | LlmError::Stalled { .. } => {
                LlmErrorKind::Unreachable
            }
            LlmError::ContextOverflow { .. } => LlmErrorKind::ContextOverflow,
            LlmError::RetriesExhausted { .. } | LlmError::RetryTooLong { .. } => LlmErrorKind::Busy,
            LlmError::Status { .. }
            | LlmError::InStream { .. }
            | LlmError::StreamCut { .. }
            | LlmError::Protocol { .. } => LlmErrorKind::BadReply,
            LlmError::BadSetting(_)
            | LlmError::ScriptExhausted(_)
            | LlmError::ScriptMiss(_)
            | LlmError::Script { .. } => LlmErrorKind::Setup,
        }
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.kind() == LlmErrorKind::Cancelled
    }

    /// The model call failed (anything but a cancel): the model, its server or
    /// its settings are at fault, not the code the model wrote. `bench` counts
    /// such a problem as an error, apart from the failures.
    pub fn is_model_failure(&self) -> bool {
        !self.is_cancelled()
    }

    /// Asking again with the same prompt will not help: the session should
    /// stop with this message. A context overflow is not unrecoverable (a
    /// shorter prompt may fit) and a cancel is not a failure at all; every
    /// other error already had its retries inside the client.
    pub fn is_unrecoverable(&self) -> bool {
        match self.kind() {
            LlmErrorKind::Cancelled | LlmErrorKind::ContextOverflow => false,
            LlmErrorKind::Auth
            | LlmErrorKind::Unreachable
            | LlmErrorKind::Busy
            | LlmErrorKind::BadReply
            | LlmErrorKind::Setup => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_tell_failures_from_cancels_and_overflows() {
        let url = || "http://x/v1/chat/completions".to_string();
        let auth = LlmError::Status {
            url: url(),
            status: 401,
            body: String::new(),
        };
        assert_eq!(auth.kind(), LlmErrorKind::Auth);
        assert!(auth.is_unrecoverable() && auth.is_model_failure());
        let overflow = LlmError::ContextOverflow {
            url: url(),
            window: Some(4096),
            prompt_tokens: Some(5000),
            detail: "5000 tokens".into(),
            advice: "shorten it".into(),
        };
        assert!(!overflow.is_unrecoverable() && overflow.is_model_failure());
        assert!(!LlmError::Cancelled.is_model_failure());
        assert!(!LlmError::Cancelled.is_unrecoverable());
        let busy = LlmError::RetriesExhausted {
            url: url(),
            status: 503,
            attempts: 4,
            body: String::new(),
        };
        assert_eq!(busy.kind(), LlmErrorKind::Busy);
    }
}
