//! Building the request: the body, the optional fields a server may turn
//! down (and the client then leaves out), the base URL and the HTTP client.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::errors::{ServerKind, error_chain};
use super::{LlmError, OpenAiOptions};
use crate::{ChatRequest, Structured};

/// Optional request fields a server may reject (HTTP 400/422 naming them):
/// older servers know no `stream_options`; OpenAI's reasoning models take no
/// `temperature` and want `max_completion_tokens` instead of `max_tokens`.
/// Each is given up at most once per client, and never counts as a retry.
///
/// A reply's JSON schema goes down a ladder ([`Structured`]): `json_schema`,
/// then `json_object` with the schema, then the prompt alone, one step at
/// each refusal that names the format (HTTP 400, 422 or 500: llama-cpp-python
/// answers `json_schema` with a 500), remembered for the client's life.
#[derive(Debug, Default)]
pub(super) struct Quirks {
    no_stream_options: AtomicBool,
    no_temperature: AtomicBool,
    max_completion_tokens: AtomicBool,
    /// 0: json_schema, 1: json_object, 2: the prompt alone.
    structured_step: AtomicU8,
}

/// What a body is built with beyond the request.
pub(super) struct BodyFacts {
    pub(crate) server: ServerKind,
    /// The reply limit to send, fitted to the window where it is known.
    pub(crate) max_tokens: Option<u32>,
}

impl Quirks {
    /// The shape a schema is asked in now.
    pub(super) fn structured(&self) -> Structured {
        match self.structured_step.load(Ordering::Relaxed) {
            0 => Structured::JsonSchema,
            1 => Structured::JsonObject,
            _ => Structured::PromptOnly,
        }
    }

    /// Learn from a rejected request; true if the request is worth sending again.
    pub(super) fn learn(&self, sent: &Value, status: u16, error_body: &str) -> bool {
        let mentions = |name: &str| sent.get(name).is_some() && error_body.contains(name);
        if sent.get("response_format").is_some()
            && matches!(status, 400 | 422 | 500)
            && [
                "response_format",
                "json_schema",
                "json_object",
                "schema",
                "grammar",
            ]
            .iter()
            .any(|word| error_body.contains(word))
        {
            let step = self.structured_step.load(Ordering::Relaxed);
            // Only the step that was sent is given up (two calls refused at
            // once step down once).
            let sent_step = match sent["response_format"]["type"].as_str() {
                Some("json_schema") => 0,
                _ => 1,
            };
            if step == sent_step {
                self.structured_step.store(step + 1, Ordering::Relaxed);
            }
            return true;
        }
        if !matches!(status, 400 | 422) {
            return false;
        }
        let flag = if mentions("stream_options") {
            &self.no_stream_options
        } else if mentions("max_tokens") && error_body.contains("max_completion_tokens") {
            &self.max_completion_tokens
        } else if mentions("temperature") {
            &self.no_temperature
        } else {
            return false;
        };
        !flag.swap(true, Ordering::Relaxed)
    }

    /// The JSON body for `request`, as this server takes it, and the shape
    /// its schema was asked in (None without a schema).
    pub(super) fn body(
        &self,
        options: &OpenAiOptions,
        request: &ChatRequest,
        facts: &BodyFacts,
    ) -> (Value, Option<Structured>) {
        let quirk = |flag: &AtomicBool| flag.load(Ordering::Relaxed);
        let mut body = json!({
            "model": options.model,
            "messages": request.messages,
            "stream": true,
        });
        if !quirk(&self.no_stream_options) {
            // Without it OpenAI and vLLM send no usage in a stream.
            body["stream_options"] = json!({ "include_usage": true });
        }
        if let Some(t) = request.temperature.or(options.temperature)
            && !quirk(&self.no_temperature)
        {
            body["temperature"] = json!(t);
        }
        if let Some(n) = facts.max_tokens {
            if quirk(&self.max_completion_tokens) {
                body["max_completion_tokens"] = json!(n);
            } else {
                body["max_tokens"] = json!(n);
            }
        }
        if facts.server == ServerKind::LlamaCpp {
            // llama.cpp keeps the prompt's evaluated prefix for the next
            // request (the default in new versions; older ones need asking).
            body["cache_prompt"] = json!(true);
        }
        let structured = request.schema.as_ref().map(|schema| {
            let shape = self.structured();
            match shape {
                Structured::JsonSchema => {
                    body["response_format"] = json!({
                        "type": "json_schema",
                        "json_schema": { "name": schema.name, "schema": schema.schema },
                    });
                }
                Structured::JsonObject => {
                    body["response_format"] = json!({
                        "type": "json_object",
                        "schema": schema.schema,
                    });
                }
                Structured::PromptOnly => {}
            }
            shape
        });
        (body, structured)
    }
}

/// `http(s)://host[:port]/path` without a trailing slash or `/chat/completions`.
pub fn normalize_base_url(base_url: &str) -> Result<String, LlmError> {
    let trimmed = base_url.trim().trim_end_matches('/');
    let trimmed = trimmed
        .strip_suffix("/chat/completions")
        .unwrap_or(trimmed)
        .trim_end_matches('/');
    let parsed = reqwest::Url::parse(trimmed).map_err(|e| {
        LlmError::BadSetting(format!(
            "the base URL \"{trimmed}\" is not a URL ({e}); it looks like http://localhost:11434/v1"
        ))
    })?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(LlmError::BadSetting(format!(
            "the base URL \"{trimmed}\" must start with http:// or https:// and name a host, like http://localhost:11434/v1"
        )));
    }
    Ok(trimmed.to_string())
}

/// The server's root, where llama.cpp serves `/props` and Ollama `/api/...`:
/// the base URL without its trailing `/v1`.
pub(super) fn root_url(base_url: &str) -> &str {
    base_url.strip_suffix("/v1").unwrap_or(base_url)
}

pub(super) fn http_client(
    base_url: &str,
    connect_timeout: Duration,
) -> Result<reqwest::Client, LlmError> {
    let mut builder = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .user_agent(concat!("codeloop/", env!("CARGO_PKG_VERSION")));
    // A local server is never behind the proxy set for the internet.
    if is_loopback(base_url) {
        builder = builder.no_proxy();
    }
    builder
        .build()
        .map_err(|e| LlmError::BadSetting(format!("cannot set up HTTP: {}", error_chain(&e))))
}

pub(super) fn is_loopback(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host == "localhost" || host.ends_with(".localhost"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_normalized_and_bad_ones_explained() {
        assert_eq!(
            normalize_base_url("http://localhost:11434/v1/").unwrap(),
            "http://localhost:11434/v1"
        );
        assert_eq!(
            normalize_base_url(" https://api.openai.com/v1/chat/completions ").unwrap(),
            "https://api.openai.com/v1"
        );
        let err = normalize_base_url("localhost:11434")
            .unwrap_err()
            .to_string();
        assert!(err.contains("http://"), "{err}");
        assert!(is_loopback("http://127.0.0.1:8000/v1"));
        assert!(is_loopback("http://localhost/v1"));
        assert!(is_loopback("http://[::1]:8000/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert_eq!(
            root_url("http://localhost:11434/v1"),
            "http://localhost:11434"
        );
        assert_eq!(root_url("http://h:8080"), "http://h:8080");
    }
}
