//! The context window: what is known of it (the config, what the server
//! told, what its first overflow said), the reply limit fitted to what a
//! prompt leaves of it, a prompt refused before it is sent, and the overflow
//! an empty stream hides (llama-cpp-python's).

use std::sync::atomic::Ordering;

use serde_json::Value;

use super::errors::{Overflow, overflow_in, read_limited};
use super::{MAX_ERROR_BODY_BYTES, MIN_REPLY_TOKENS, OpenAiClient, ServerKind};
use crate::{ChatRequest, ContextWindow, LlmError, tokens};

impl OpenAiClient {
    /// The window known without asking: the configured one, else what the
    /// server already told, else what its first overflow said.
    pub(super) fn known_window(&self) -> Option<ContextWindow> {
        match self.options.context_window {
            Some(tokens) => Some(ContextWindow {
                tokens,
                source: "the config".into(),
            }),
            None => self.facts.get().and_then(|f| f.window.clone()).or_else(|| {
                match self.learned_window.load(Ordering::Relaxed) {
                    0 => None,
                    tokens => Some(ContextWindow {
                        tokens,
                        source: "the server's overflow error".into(),
                    }),
                }
            }),
        }
    }

    /// The reply limit to send: the one asked for, cut to what the known
    /// window leaves after the prompt (estimated, with a margin). An error
    /// when the prompt leaves no room for a reply at all.
    pub(super) fn fitted_max_tokens(&self, request: &ChatRequest) -> Result<Option<u32>, LlmError> {
        // The person's limit (config, profile, --max-tokens) wins over the
        // caller's default for the kind of reply.
        let wanted = self.options.max_tokens.or(request.max_tokens);
        let Some(window) = self.known_window() else {
            return Ok(wanted);
        };
        let prompt = tokens::estimate_prompt_tokens(&request.messages);
        // The estimate can be a third too low for code (see `tokens`).
        let left = window.tokens.saturating_sub(prompt + prompt / 3 + 16);
        if left < MIN_REPLY_TOKENS {
            return Err(LlmError::ContextOverflow {
                url: self.chat_url.clone(),
                window: Some(window.tokens),
                prompt_tokens: Some(prompt),
                detail: format!(
                    "the prompt is about {prompt} tokens, and the window is {} tokens ({}): no room is left for a reply",
                    window.tokens, window.source
                ),
                advice: self.known_server().overflow_advice(&self.options.model),
            });
        }
        Ok(wanted.map(|n| u64::from(n).min(left) as u32))
    }

    /// A 200 with an empty event stream: llama-cpp-python's answer to a
    /// prompt past its window (it raises inside the stream, and only its
    /// log says so). The same body asked for without streaming gets the
    /// plain error, which names the window: learned, and the overflow
    /// returned. None when the plain request does not overflow.
    pub(super) async fn probe_overflow(&self, sent: &Value) -> Option<LlmError> {
        let mut body = sent.clone();
        body["stream"] = Value::Bool(false);
        if let Some(map) = body.as_object_mut() {
            map.remove("stream_options");
        }
        body["max_tokens"] = Value::from(1);
        let response = self.send(&self.chat_url, &body).await.ok()?;
        if response.status().is_success() {
            return None;
        }
        let raw = read_limited(response, MAX_ERROR_BODY_BYTES, self.options.request_timeout)
            .await
            .ok()?;
        let overflow = overflow_in(&String::from_utf8_lossy(&raw))?;
        if let Some(window) = overflow.window {
            self.learned_window.store(window, Ordering::Relaxed);
        }
        Some(self.overflow(overflow))
    }

    /// Refuse, before sending it, a prompt a silently truncating server
    /// (Ollama) could not hold whole.
    pub(super) fn check_fit(&self, request: &ChatRequest) -> Result<(), LlmError> {
        if self.known_server() != ServerKind::Ollama {
            return Ok(());
        }
        let Some(window) = self.known_window() else {
            return Ok(());
        };
        let prompt = tokens::estimate_prompt_tokens(&request.messages);
        if tokens::fits(prompt, 0, window.tokens) {
            return Ok(());
        }
        let model_max = self
            .facts
            .get()
            .and_then(|f| f.model_max)
            .map(|n| format!("; the model itself supports {n}"))
            .unwrap_or_default();
        Err(LlmError::ContextOverflow {
            url: self.chat_url.clone(),
            window: Some(window.tokens),
            prompt_tokens: Some(prompt),
            detail: format!(
                "the prompt is about {prompt} tokens, and the window is {} tokens ({}){model_max}",
                window.tokens, window.source
            ),
            advice: ServerKind::Ollama.overflow_advice(&self.options.model),
        })
    }

    pub(super) fn overflow(&self, overflow: Overflow) -> LlmError {
        if let Some(window) = overflow.window
            && self.facts.get().and_then(|f| f.window.as_ref()).is_none()
        {
            self.learned_window.store(window, Ordering::Relaxed);
        }
        let server = match self.known_server() {
            ServerKind::Unknown => overflow.server.unwrap_or(ServerKind::Unknown),
            known => known,
        };
        LlmError::ContextOverflow {
            url: self.chat_url.clone(),
            window: overflow
                .window
                .or_else(|| self.known_window().map(|w| w.tokens)),
            prompt_tokens: overflow.prompt_tokens,
            detail: self.scrub(&overflow.detail),
            advice: server.overflow_advice(&self.options.model),
        }
    }
}
