//! Building the request: the body, the optional fields a server may turn
//! down (and the client then leaves out), the base URL and the HTTP client.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::errors::error_chain;
use super::{LlmError, OpenAiOptions};
use crate::ChatRequest;

/// Optional request fields a server may reject (HTTP 400/422 naming them):
/// older servers know no `stream_options`; OpenAI's reasoning models take no
/// `temperature` and want `max_completion_tokens` instead of `max_tokens`.
/// Each is given up at most once per client, and never counts as a retry.
#[derive(Debug, Default)]
pub(super) struct Quirks {
    no_stream_options: AtomicBool,
    no_temperature: AtomicBool,
    max_completion_tokens: AtomicBool,
}

impl Quirks {
    /// Learn from a rejected request; true if the request is worth sending again.
    pub(super) fn learn(&self, sent: &Value, error_body: &str) -> bool {
        let mentions = |name: &str| sent.get(name).is_some() && error_body.contains(name);
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

    /// The JSON body for `request`, as this server takes it.
    pub(super) fn body(&self, options: &OpenAiOptions, request: &ChatRequest) -> Value {
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
        if let Some(n) = request.max_tokens.or(options.max_tokens) {
            if quirk(&self.max_completion_tokens) {
                body["max_completion_tokens"] = json!(n);
            } else {
                body["max_tokens"] = json!(n);
            }
        }
        body
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
