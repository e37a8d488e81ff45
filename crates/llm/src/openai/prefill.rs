//! An answer's start (`ChatRequest::prefill`) given to the server, so the
//! model goes on from it (a function's `def` line, a test's first
//! `assert`) and writes only the rest. No OpenAI-compatible chat endpoint says how to do it, and each
//! server does it its own way or not at all:
//!
//! - llama.cpp's server: a final assistant message starts a new turn, but
//!   `/apply-template` renders the chat as the model's template does (with
//!   the assistant's turn opened), so the prefill goes after that and
//!   `/completions` goes on from the whole.
//! - vLLM: the prefill as a final assistant message, with
//!   `continue_final_message` and no new generation prompt.
//! - The others (llama-cpp-python, Ollama's `/v1`, hosted APIs): a final
//!   assistant message ends that turn and the model starts another, so the
//!   request goes without the prefill and the reply says so
//!   (`Prefilled::NotContinued`).

use serde_json::{Value, json};

use super::OpenAiClient;
use super::errors::ServerKind;
use super::request::root_url;
use crate::{ChatMessage, ChatRequest, Prefilled};

/// How a request is sent.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Way {
    /// `/chat/completions` with the request's messages (the prefill left out).
    Chat,
    /// `/chat/completions` with the prefill as a final assistant message
    /// that the server continues.
    ContinueFinal,
    /// `/completions` with this prompt: the chat rendered by the server's
    /// template, then the prefill.
    Completions { prompt: String },
}

impl Way {
    /// What the reply says of its prefill; None without one.
    pub(super) fn prefilled(&self, request: &ChatRequest) -> Option<Prefilled> {
        request.prefill.as_ref()?;
        Some(match self {
            Way::Chat => Prefilled::NotContinued,
            Way::ContinueFinal => Prefilled::ContinueFinal,
            Way::Completions { .. } => Prefilled::Completions,
        })
    }

    /// The prefill the reply goes on from, if it does.
    pub(super) fn continues<'a>(&self, request: &'a ChatRequest) -> Option<&'a str> {
        match self {
            Way::Chat => None,
            Way::ContinueFinal | Way::Completions { .. } => {
                request.prefill.as_ref().map(|p| p.text.as_str())
            }
        }
    }

    /// The body's fields that differ by way: the messages or the prompt,
    /// and where an answer gone on from the prefill stops.
    pub(super) fn fill(&self, body: &mut Value, request: &ChatRequest) {
        let prefill = request.prefill.clone().unwrap_or_default();
        if self.continues(request).is_some() && !prefill.stop.is_empty() {
            body["stop"] = json!(prefill.stop);
        }
        match self {
            Way::Chat => {}
            Way::ContinueFinal => {
                let mut messages = request.messages.clone();
                messages.push(ChatMessage::assistant(prefill.text));
                body["messages"] = json!(messages);
                body["continue_final_message"] = json!(true);
                body["add_generation_prompt"] = json!(false);
            }
            Way::Completions { prompt } => {
                if let Some(map) = body.as_object_mut() {
                    map.remove("messages");
                }
                body["prompt"] = json!(prompt);
            }
        }
    }
}

impl OpenAiClient {
    /// How `request` is sent to this server (asked about itself once).
    pub(super) async fn way_for(&self, request: &ChatRequest) -> Way {
        let Some(prefill) = request.prefill.as_ref().map(|p| &p.text) else {
            return Way::Chat;
        };
        match self.server_facts().await.server {
            ServerKind::Vllm => Way::ContinueFinal,
            ServerKind::LlamaCpp => match self.apply_template(&request.messages).await {
                Some(rendered) => Way::Completions {
                    prompt: format!("{rendered}{prefill}"),
                },
                None => Way::Chat,
            },
            ServerKind::LlamaCppPython
            | ServerKind::LmStudio
            | ServerKind::Ollama
            | ServerKind::OpenAi
            | ServerKind::Unknown => Way::Chat,
        }
    }

    /// The chat as llama.cpp's server renders it for the model, the
    /// assistant's turn opened; None when it does not say.
    async fn apply_template(&self, messages: &[ChatMessage]) -> Option<String> {
        let url = format!("{}/apply-template", root_url(&self.options.base_url));
        let mut builder = self.http.post(url).json(&json!({ "messages": messages }));
        if let Some(key) = &self.options.api_key {
            builder = builder.bearer_auth(key.expose());
        }
        let response = tokio::time::timeout(self.options.request_timeout, builder.send())
            .await
            .ok()?
            .ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body = super::errors::read_limited(response, 4 << 20, self.options.request_timeout)
            .await
            .ok()?;
        let value: Value = serde_json::from_slice(&body).ok()?;
        value
            .get("prompt")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(str::to_string)
    }

    /// Where a request of `way` goes.
    pub(super) fn url_of(&self, way: &Way) -> &str {
        match way {
            Way::Completions { .. } => &self.completions_url,
            Way::Chat | Way::ContinueFinal => &self.chat_url,
        }
    }
}
