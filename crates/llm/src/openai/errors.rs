//! Reading what a server says when something is wrong: the message in its
//! error body (each server has its own shape), whether it is a context
//! overflow, and what to tell the person about it.

use std::time::Duration;

use serde_json::Value;

use super::retry::whole_secs;

/// Characters of a server's answer quoted in an error message.
const EXCERPT_CHARS: usize = 300;

/// Which server software answers, as far as codeloop can tell. Decides how a
/// context overflow is explained (each server raises its window its own way)
/// and whether a prompt is checked before it is sent (Ollama cuts a prompt
/// past its window silently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerKind {
    Ollama,
    /// llama.cpp's own `llama-server`.
    LlamaCpp,
    /// llama-cpp-python's `python -m llama_cpp.server`.
    LlamaCppPython,
    /// LM Studio's server (its own API beside the OpenAI one: `/api/v0`).
    LmStudio,
    Vllm,
    OpenAi,
    Unknown,
}

impl ServerKind {
    /// The server's name in messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ServerKind::Ollama => "Ollama",
            ServerKind::LlamaCpp => "llama.cpp's llama-server",
            ServerKind::LlamaCppPython => "llama-cpp-python's server",
            ServerKind::LmStudio => "LM Studio",
            ServerKind::Vllm => "vLLM",
            ServerKind::OpenAi => "OpenAI",
            ServerKind::Unknown => "an OpenAI-compatible server",
        }
    }

    /// What to do about a prompt that does not fit, on this server.
    pub(crate) fn overflow_advice(self, model: &str) -> String {
        let shorter = "or give the model a shorter prompt";
        match self {
            ServerKind::Ollama => format!(
                "Ollama cuts a prompt longer than its num_ctx without a word, so codeloop does not send it. Raise num_ctx: start Ollama with `OLLAMA_CONTEXT_LENGTH=16384 ollama serve`, or make a model with a larger one (a Modelfile with `FROM {model}` and `PARAMETER num_ctx 16384`, then `ollama create {model}-16k -f Modelfile` and use --model {model}-16k); then tell codeloop the size with `context = 16384` in the model's config section, {shorter}"
            ),
            ServerKind::LlamaCpp => format!(
                "Start llama-server with a larger context (--ctx-size 16384, up to what the model was trained for), {shorter}"
            ),
            ServerKind::LlamaCppPython => format!(
                "Start llama-cpp-python's server with a larger context (`python -m llama_cpp.server --n_ctx 8192`, up to what the model was trained for), lower --max-tokens, {shorter}"
            ),
            ServerKind::LmStudio => format!(
                "Load the model in LM Studio with a larger context length (its load settings, or `lms load {model} --context-length 16384`), lower --max-tokens, {shorter}"
            ),
            ServerKind::Vllm => format!(
                "Start vLLM with a larger --max-model-len (up to what the model supports), lower --max-tokens, {shorter}"
            ),
            ServerKind::OpenAi | ServerKind::Unknown => {
                format!("Use a model with a larger context window, lower --max-tokens, {shorter}")
            }
        }
    }
}

/// What an overflow error body says, read for the figures in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Overflow {
    pub(crate) detail: String,
    pub(crate) window: Option<u64>,
    pub(crate) prompt_tokens: Option<u64>,
    /// The server the body's shape gives away, if any.
    pub(crate) server: Option<ServerKind>,
}

/// Whether an error body (or an error message from a stream) says the
/// prompt does not fit. Knows the wording of vLLM ("This model's maximum
/// context length is 4096 tokens. However, you requested 5000 tokens", or
/// "... and your request has 3500 input tokens"; "The decoder prompt (length
/// 5000) is longer than the maximum model length of 4096"), llama.cpp
/// (`exceed_context_size_error` with `n_prompt_tokens`/`n_ctx`; older ones
/// "the request exceeds the available context size" or "input is too large
/// to process"), OpenAI (`context_length_exceeded`) and Ollama ("prompt too
/// long; exceeded max context length by 100 tokens").
pub(crate) fn overflow_in(raw: &str) -> Option<Overflow> {
    let lower = raw.to_ascii_lowercase();
    const PHRASES: [&str; 12] = [
        "context_length_exceeded",
        "exceed_context_size_error",
        "maximum context length",
        "max context length",
        "maximum model length",
        "exceeds the available context size",
        "exceeds the context size",
        "context window",
        "input is too large to process",
        "prompt is too long",
        "prompt too long",
        "too many tokens",
    ];
    if !PHRASES.iter().any(|p| lower.contains(p)) {
        return None;
    }
    let value = serde_json::from_str::<Value>(raw).ok();
    let field = |name: &str| {
        value.as_ref().and_then(|v| {
            v.get("error")
                .and_then(|e| e.get(name))
                .or_else(|| v.get(name))
                .and_then(Value::as_u64)
                .and_then(super::numbers::plausible)
        })
    };
    let window = field("n_ctx")
        .or_else(|| number_after(&lower, "maximum context length is "))
        .or_else(|| number_after(&lower, "maximum model length of "))
        .or_else(|| number_after(&lower, "max context length of "))
        .or_else(|| number_after(&lower, "exceed context window of "));
    let prompt_tokens = field("n_prompt_tokens")
        .or_else(|| number_after(&lower, "your messages resulted in "))
        .or_else(|| number_after(&lower, "you requested "))
        .or_else(|| number_after(&lower, "your request has "))
        .or_else(|| number_after(&lower, "decoder prompt (length "));
    let server = if lower.contains("n_ctx") || lower.contains("context size") {
        Some(ServerKind::LlamaCpp)
    } else if lower.contains("exceed context window of") {
        // llama-cpp-python, raising inside its stream (seen in its log only)
        // or in a plain answer.
        Some(ServerKind::LlamaCppPython)
    } else if lower.contains("context_length_exceeded") {
        Some(ServerKind::OpenAi)
    } else if lower.contains("maximum model length") || lower.contains("\"object\":\"error\"") {
        Some(ServerKind::Vllm)
    } else {
        None
    };
    Some(Overflow {
        detail: error_excerpt(raw),
        window,
        prompt_tokens,
        server,
    })
}

/// The whole number that follows `phrase` in `text`.
fn number_after(text: &str, phrase: &str) -> Option<u64> {
    let start = text.find(phrase)? + phrase.len();
    let digits: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok().and_then(super::numbers::plausible)
}

/// The message of an error object, in any of the shapes servers use.
pub(crate) fn error_message(value: &Value) -> Option<String> {
    if let Some(error) = value.get("error") {
        return Some(match error {
            Value::String(s) => s.clone(),
            Value::Object(_) => {
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| excerpt(&error.to_string()));
                match error
                    .get("type")
                    .or_else(|| error.get("code"))
                    .and_then(Value::as_str)
                {
                    Some(kind) if !message.contains(kind) => format!("{message} ({kind})"),
                    _ => message,
                }
            }
            Value::Null => return None,
            other => excerpt(&other.to_string()),
        });
    }
    // vLLM's ErrorResponse: {"object": "error", "message": ..., "type": ...}
    if value.get("object").and_then(Value::as_str) == Some("error") {
        return Some(
            value
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| excerpt(&value.to_string())),
        );
    }
    None
}

/// What to quote from an error body: its error message when it has one, else
/// the start of the text with whitespace collapsed.
pub(crate) fn error_excerpt(raw: &str) -> String {
    let from_json = serde_json::from_str::<Value>(raw).ok().and_then(|v| {
        error_message(&v).or_else(|| {
            // FastAPI-style servers say {"detail": ...}.
            v.get("detail").map(|d| match d {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
        })
    });
    excerpt(&from_json.unwrap_or_else(|| raw.to_string()))
}

/// At most `EXCERPT_CHARS` characters, whitespace collapsed.
pub(crate) fn excerpt(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= EXCERPT_CHARS {
        return collapsed;
    }
    let mut cut: String = collapsed.chars().take(EXCERPT_CHARS).collect();
    cut.push('…');
    cut
}

/// Read at most `limit` bytes of a body, each piece within `timeout`.
pub(crate) async fn read_limited(
    mut response: reqwest::Response,
    limit: usize,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while body.len() < limit {
        match tokio::time::timeout(timeout, response.chunk()).await {
            Err(_) => return Err(format!("no data for {} s", whole_secs(timeout))),
            Ok(Err(e)) => return Err(error_chain(&e)),
            Ok(Ok(None)) => break,
            Ok(Ok(Some(chunk))) => {
                let room = limit - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
        }
    }
    Ok(body)
}

/// The root cause of a transport error ("Connection refused (os error 111)",
/// "unexpected EOF during chunk size line"): the outer layers only repeat the
/// URL, which our own messages name already.
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut root = error;
    while let Some(cause) = root.source() {
        root = cause;
    }
    root.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_are_quoted_by_their_message() {
        assert_eq!(
            error_excerpt(r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#),
            "Rate limit reached (requests)"
        );
        assert_eq!(
            error_excerpt(r#"{"object":"error","message":"The model `x` does not exist."}"#),
            "The model `x` does not exist."
        );
        assert_eq!(error_excerpt(r#"{"detail":"Not Found"}"#), "Not Found");
        let long = "<html>\n  <body>".to_string() + &"x".repeat(1000);
        let quoted = error_excerpt(&long);
        assert!(quoted.starts_with("<html> <body>"), "{quoted}");
        assert!(quoted.chars().count() <= EXCERPT_CHARS + 1);
    }

    #[test]
    fn overflow_bodies_of_each_server_are_read_for_their_figures() {
        let vllm = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#;
        let o = overflow_in(vllm).unwrap();
        assert_eq!((o.window, o.prompt_tokens), (Some(4096), Some(5000)));
        assert_eq!(o.server, Some(ServerKind::Vllm));
        let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}"#;
        let o = overflow_in(llama).unwrap();
        assert_eq!((o.window, o.prompt_tokens), (Some(4096), Some(5000)));
        assert_eq!(o.server, Some(ServerKind::LlamaCpp));
        let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9,100 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let o = overflow_in(openai).unwrap();
        assert_eq!((o.window, o.prompt_tokens), (Some(8192), Some(9100)));
        assert_eq!(o.server, Some(ServerKind::OpenAi));
        let ollama = r#"{"error":{"message":"prompt too long; exceeded max context length by 100 tokens","type":"api_error"}}"#;
        assert!(overflow_in(ollama).is_some());
        assert!(overflow_in(r#"{"error":{"message":"model not found"}}"#).is_none());
    }
}
