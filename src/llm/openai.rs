//! The OpenAI-compatible streaming client (`/v1/chat/completions`, SSE).
//!
//! The servers that speak this protocol differ in small ways, and the client
//! accepts all of them:
//! - Usage: OpenAI, vLLM and Ollama send it in a last chunk with empty
//!   `choices` when asked with `stream_options.include_usage`; llama.cpp puts
//!   it in the chunk with `finish_reason`; some servers send none.
//! - End of stream: `data: [DONE]` (all of the above). Some llama.cpp forks end
//!   the stream after the `finish_reason` chunk without it; a stream that saw a
//!   `finish_reason` is complete, one that saw neither was cut off.
//! - Errors mid-stream: `data: {"error": {...}}` (OpenAI, Ollama), a vLLM
//!   `{"object": "error", ...}`, `event: error` (proxies) or an `error:` line
//!   (llama.cpp).
//! - A server that ignores `stream: true` answers with one JSON completion:
//!   accepted as a single delta.
//! - A server that rejects `stream_options`, `temperature` or `max_tokens`
//!   (HTTP 400/422 naming it) is asked again without it (`max_tokens` becomes
//!   `max_completion_tokens` when the server asks for that), and the client
//!   remembers.
//!
//! The API key is held in [`ApiKey`], whose `Debug` hides it; it is sent only
//! in the Authorization header (marked sensitive) and scrubbed from every error
//! message built from what the server sent back.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{ChatFuture, ChatModel, ChatReply, ChatRequest, LlmError, Usage};

/// Longest SSE line accepted (a line is one JSON chunk; real ones are < 4 KiB).
const MAX_LINE_BYTES: usize = 8 << 20;
/// Largest reply text accepted, and largest non-streamed body read.
const MAX_REPLY_BYTES: usize = 32 << 20;
/// Most of an error body read to quote from it.
const MAX_ERROR_BODY_BYTES: usize = 16 << 10;
/// Characters of a server's answer quoted in an error message.
const EXCERPT_CHARS: usize = 300;

/// An API key. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// None for an empty or blank key (as if none was set).
    pub fn new(key: impl Into<String>) -> Option<ApiKey> {
        let key = key.into().trim().to_string();
        (!key.is_empty()).then_some(ApiKey(key))
    }

    /// The key in the environment variable `var`, if it is set and not blank.
    pub fn from_env(var: &str) -> Option<ApiKey> {
        std::env::var(var).ok().and_then(ApiKey::new)
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<hidden>)")
    }
}

/// Everything the client needs; `OpenAiOptions::new` fills sensible defaults.
#[derive(Debug, Clone)]
pub struct OpenAiOptions {
    /// e.g. http://localhost:11434/v1 (a trailing `/chat/completions` is dropped).
    pub base_url: String,
    pub model: String,
    pub api_key: Option<ApiKey>,
    /// The environment variable the key is read from, named in error hints.
    pub api_key_env: String,
    /// The longest the server may stay silent: before its answer starts, and
    /// between two pieces of a streamed reply.
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    /// The longest one whole reply may take, retries included.
    pub reply_deadline: Duration,
    /// Retries on HTTP 429 and 5xx (so at most `retries + 1` attempts).
    pub retries: u32,
    /// First backoff delay; doubled at each retry, with jitter.
    pub backoff_base: Duration,
    /// Longest wait between two attempts; a Retry-After beyond it ends the call.
    pub max_retry_wait: Duration,
    /// Used when the request sets no temperature.
    pub temperature: Option<f32>,
}

impl OpenAiOptions {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> OpenAiOptions {
        OpenAiOptions {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            api_key_env: "OPENAI_API_KEY".into(),
            request_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            reply_deadline: Duration::from_secs(30 * 60),
            retries: 3,
            backoff_base: Duration::from_millis(500),
            max_retry_wait: Duration::from_secs(30),
            temperature: None,
        }
    }
}

/// A streaming client for one OpenAI-compatible server and model.
#[derive(Debug)]
pub struct OpenAiClient {
    http: reqwest::Client,
    options: OpenAiOptions,
    /// `{base_url}/chat/completions`.
    chat_url: String,
    /// What this server turned down, learned from its 400 answers.
    quirks: Quirks,
}

/// Optional request fields a server may reject (HTTP 400/422 naming them):
/// older servers know no `stream_options`; OpenAI's reasoning models take no
/// `temperature` and want `max_completion_tokens` instead of `max_tokens`.
/// Each is given up at most once per client, and never counts as a retry.
#[derive(Debug, Default)]
struct Quirks {
    no_stream_options: AtomicBool,
    no_temperature: AtomicBool,
    max_completion_tokens: AtomicBool,
}

impl Quirks {
    /// Learn from a rejected request; true if the request is worth sending again.
    fn learn(&self, sent: &Value, error_body: &str) -> bool {
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
}

impl OpenAiClient {
    pub fn new(mut options: OpenAiOptions) -> Result<OpenAiClient, LlmError> {
        options.base_url = normalize_base_url(&options.base_url)?;
        let http = http_client(&options.base_url, options.connect_timeout)?;
        let chat_url = format!("{}/chat/completions", options.base_url);
        Ok(OpenAiClient {
            http,
            options,
            chat_url,
            quirks: Quirks::default(),
        })
    }

    pub fn options(&self) -> &OpenAiOptions {
        &self.options
    }

    async fn chat(
        &self,
        request: ChatRequest,
        deltas: mpsc::Sender<String>,
    ) -> Result<ChatReply, LlmError> {
        let started = Instant::now();
        let mut failed_attempts = 0u32;
        loop {
            let sent = self.request_body(&request);
            let response = self.send(&sent).await?;
            let status = response.status();
            if status.is_success() {
                return self.read_reply(response, deltas, started).await;
            }
            let retry_after = retry_after(response.headers());
            let raw = read_limited(response, MAX_ERROR_BODY_BYTES, self.options.request_timeout)
                .await
                .unwrap_or_default();
            let raw = String::from_utf8_lossy(&raw).into_owned();
            let code = status.as_u16();
            if (code == 400 || code == 422) && self.quirks.learn(&sent, &raw) {
                continue;
            }
            let body = self.scrub(&error_excerpt(&raw));
            // OpenAI answers 429 for an exhausted quota too: waiting does not help.
            let out_of_quota = code == 429 && raw.contains("insufficient_quota");
            if out_of_quota || !(code == 429 || status.is_server_error()) {
                return Err(LlmError::Status {
                    url: self.chat_url.clone(),
                    status: code,
                    body: self.with_hint(code, body),
                });
            }
            failed_attempts += 1;
            if failed_attempts > self.options.retries {
                return Err(LlmError::RetriesExhausted {
                    url: self.chat_url.clone(),
                    status: code,
                    attempts: failed_attempts,
                    body,
                });
            }
            let wait = match retry_after {
                Some(asked) if asked > self.options.max_retry_wait => {
                    return Err(LlmError::RetryTooLong {
                        url: self.chat_url.clone(),
                        status: code,
                        wait_secs: asked.as_secs_f64().ceil() as u64,
                        max_secs: whole_secs(self.options.max_retry_wait),
                        body,
                    });
                }
                // A little jitter on top, so clients told the same time do not
                // all come back at once.
                Some(asked) => asked + jitter(asked.min(Duration::from_secs(10)) / 10),
                None => backoff(
                    self.options.backoff_base,
                    failed_attempts - 1,
                    self.options.max_retry_wait,
                ),
            };
            if started.elapsed() + wait > self.options.reply_deadline {
                return Err(LlmError::RetriesExhausted {
                    url: self.chat_url.clone(),
                    status: code,
                    attempts: failed_attempts,
                    body,
                });
            }
            tokio::time::sleep(wait).await;
        }
    }

    fn request_body(&self, request: &ChatRequest) -> Value {
        let quirk = |flag: &AtomicBool| flag.load(Ordering::Relaxed);
        let mut body = json!({
            "model": self.options.model,
            "messages": request.messages,
            "stream": true,
        });
        if !quirk(&self.quirks.no_stream_options) {
            // Without it OpenAI and vLLM send no usage in a stream.
            body["stream_options"] = json!({ "include_usage": true });
        }
        if let Some(t) = request.temperature.or(self.options.temperature)
            && !quirk(&self.quirks.no_temperature)
        {
            body["temperature"] = json!(t);
        }
        if let Some(n) = request.max_tokens {
            if quirk(&self.quirks.max_completion_tokens) {
                body["max_completion_tokens"] = json!(n);
            } else {
                body["max_tokens"] = json!(n);
            }
        }
        body
    }

    /// Send the request and wait for the answer's head.
    async fn send(&self, body: &Value) -> Result<reqwest::Response, LlmError> {
        let mut builder = self
            .http
            .post(&self.chat_url)
            .header(ACCEPT, "text/event-stream")
            .json(body);
        if let Some(key) = &self.options.api_key {
            builder = builder.bearer_auth(key.expose());
        }
        match tokio::time::timeout(self.options.request_timeout, builder.send()).await {
            Err(_) => Err(LlmError::Timeout {
                url: self.chat_url.clone(),
                secs: whole_secs(self.options.request_timeout),
            }),
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) if e.is_timeout() && !e.is_connect() => Err(LlmError::Timeout {
                url: self.chat_url.clone(),
                secs: whole_secs(self.options.request_timeout),
            }),
            Ok(Err(e)) => Err(LlmError::Unreachable {
                url: self.chat_url.clone(),
                message: self.scrub(&error_chain(&e)),
            }),
        }
    }

    async fn read_reply(
        &self,
        mut response: reqwest::Response,
        deltas: mpsc::Sender<String>,
        started: Instant,
    ) -> Result<ChatReply, LlmError> {
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let mut parser = SseParser::new();
        let mut reply = ReplyState::default();
        // The first bytes, to quote when the body turns out not to be SSE.
        let mut head: Vec<u8> = Vec::new();
        // The kind of body is told by its first byte that is not whitespace:
        // `{` is one JSON completion (a server that ignored `stream: true`),
        // anything else an event stream. Content types are only quoted.
        let mut undecided: Option<Vec<u8>> = Some(Vec::new());
        let mut whole_json: Option<Vec<u8>> = None;
        let mut cut: Option<String> = None;
        loop {
            let chunk = match self.next_chunk(&mut response, started).await? {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(message) => {
                    cut = Some(message);
                    break;
                }
            };
            if head.len() < 512 {
                head.extend_from_slice(&chunk[..chunk.len().min(512 - head.len())]);
            }
            let chunk = match undecided.take() {
                Some(mut pending) => {
                    pending.extend_from_slice(&chunk);
                    match pending.iter().find(|b| !b.is_ascii_whitespace()) {
                        None => {
                            undecided = Some(pending);
                            continue;
                        }
                        Some(b'{') => whole_json = Some(Vec::new()),
                        Some(_) => {}
                    }
                    pending
                }
                None => chunk,
            };
            if let Some(body) = whole_json.as_mut() {
                if body.len() + chunk.len() > MAX_REPLY_BYTES {
                    return Err(self.protocol(format!(
                        "the answer is larger than {} MiB",
                        MAX_REPLY_BYTES >> 20
                    )));
                }
                body.extend_from_slice(&chunk);
                continue;
            }
            let events = parser.push(&chunk).map_err(|m| self.protocol(m))?;
            for event in events {
                self.apply_event(event, &mut reply, &deltas).await?;
                if reply.done {
                    return Ok(reply.finish());
                }
            }
        }
        if let Some(body) = whole_json {
            if let Some(message) = cut {
                return Err(LlmError::StreamCut {
                    url: self.chat_url.clone(),
                    message,
                });
            }
            return self.whole_completion(&body, &content_type, &deltas).await;
        }
        // After a clean end, a last event missing its blank line still counts;
        // after a broken one, a half-received event is not worth reading.
        let tail = if cut.is_none() {
            parser.finish()
        } else {
            Vec::new()
        };
        for event in tail {
            match self.apply_event(event, &mut reply, &deltas).await {
                Ok(()) if reply.done => return Ok(reply.finish()),
                Ok(()) => {}
                Err(LlmError::Protocol { message, .. }) => {
                    return Err(LlmError::StreamCut {
                        url: self.chat_url.clone(),
                        message: format!("the stream ended in the middle of an event: {message}"),
                    });
                }
                Err(e) => return Err(e),
            }
        }
        if reply.finish_reason.is_some() {
            return Ok(reply.finish());
        }
        if reply.events == 0 {
            let shown = if content_type.is_empty() {
                "no content type".to_string()
            } else {
                content_type.clone()
            };
            let what = if head.iter().all(u8::is_ascii_whitespace) {
                "an empty body".to_string()
            } else {
                format!(
                    "\"{}\"",
                    self.scrub(&excerpt(&String::from_utf8_lossy(&head)))
                )
            };
            return Err(self.protocol(match cut {
                Some(message) => format!(
                    "the answer ({shown}) broke off before any event arrived ({message}); it began with {what}"
                ),
                None => format!(
                    "expected a stream of server-sent events, got {shown} holding {what}. Is the base URL the server's API (it usually ends in /v1)?"
                ),
            }));
        }
        let got = format!(
            "after {} event(s) and {} characters of reply",
            reply.events,
            reply.text.chars().count()
        );
        Err(LlmError::StreamCut {
            url: self.chat_url.clone(),
            message: match cut {
                Some(message) => format!("{message} ({got})"),
                None => format!("the stream ended without [DONE] or a finish_reason {got}"),
            },
        })
    }

    /// The next piece of the body: `Ok(None)` at its end, `Err(message)` when
    /// the transport broke (a cut-off stream), an `LlmError` on a timeout.
    async fn next_chunk(
        &self,
        response: &mut reqwest::Response,
        started: Instant,
    ) -> Result<Result<Option<Vec<u8>>, String>, LlmError> {
        let left = self
            .options
            .reply_deadline
            .saturating_sub(started.elapsed());
        let silence = self.options.request_timeout.min(left);
        match tokio::time::timeout(silence, response.chunk()).await {
            Err(_) if silence < self.options.request_timeout => Err(LlmError::Timeout {
                url: self.chat_url.clone(),
                secs: whole_secs(self.options.reply_deadline),
            }),
            Err(_) => Err(LlmError::Stalled {
                url: self.chat_url.clone(),
                secs: whole_secs(self.options.request_timeout),
            }),
            Ok(Ok(chunk)) => Ok(Ok(chunk.map(|b| b.to_vec()))),
            Ok(Err(e)) => Ok(Err(self.scrub(&error_chain(&e)))),
        }
    }

    async fn apply_event(
        &self,
        event: SseEvent,
        reply: &mut ReplyState,
        deltas: &mpsc::Sender<String>,
    ) -> Result<(), LlmError> {
        reply.events += 1;
        let data = event.data.trim();
        if data == "[DONE]" {
            reply.done = true;
            return Ok(());
        }
        if event.event == "error" {
            let message = serde_json::from_str::<Value>(data)
                .ok()
                .and_then(|v| error_message(&v))
                .unwrap_or_else(|| excerpt(data));
            return Err(self.in_stream(message));
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            self.protocol(format!(
                "an event's data is not JSON ({e}): \"{}\"",
                self.scrub(&excerpt(data))
            ))
        })?;
        if let Some(message) = error_message(&chunk) {
            return Err(self.in_stream(message));
        }
        if let Some(usage) = usage_of(&chunk) {
            reply.usage = Some(usage);
        }
        let Some(choice) = first_choice(&chunk) else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            reply.finish_reason = Some(reason.to_string());
        }
        let piece = choice
            .get("delta")
            .or_else(|| choice.get("message"))
            .and_then(|d| d.get("content"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if piece.is_empty() {
            return Ok(());
        }
        if reply.text.len() + piece.len() > MAX_REPLY_BYTES {
            return Err(self.protocol(format!(
                "the reply is longer than {} MiB",
                MAX_REPLY_BYTES >> 20
            )));
        }
        reply.text.push_str(piece);
        // A closed receiver is not an error: nobody is watching the stream.
        let _ = deltas.send(piece.to_string()).await;
        Ok(())
    }

    /// A server that ignored `stream: true` and sent the whole completion.
    async fn whole_completion(
        &self,
        body: &[u8],
        content_type: &str,
        deltas: &mpsc::Sender<String>,
    ) -> Result<ChatReply, LlmError> {
        let text = String::from_utf8_lossy(body);
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            self.protocol(format!(
                "the answer ({content_type}) is not JSON ({e}): \"{}\"",
                self.scrub(&excerpt(&text))
            ))
        })?;
        if let Some(message) = error_message(&value) {
            return Err(self.in_stream(message));
        }
        let content = first_choice(&value)
            .and_then(|c| c.get("message"))
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                self.protocol(format!(
                    "the answer has no choices[0].message.content: \"{}\"",
                    self.scrub(&excerpt(&text))
                ))
            })?;
        if !content.is_empty() {
            let _ = deltas.send(content.to_string()).await;
        }
        Ok(ChatReply {
            text: content.to_string(),
            usage: usage_of(&value),
            usage_estimated: false,
        })
    }

    fn protocol(&self, message: String) -> LlmError {
        LlmError::Protocol {
            url: self.chat_url.clone(),
            message,
        }
    }

    fn in_stream(&self, message: String) -> LlmError {
        LlmError::InStream {
            url: self.chat_url.clone(),
            message: self.scrub(&message),
        }
    }

    /// Remove the API key from text the server sent back (some echo it).
    fn scrub(&self, text: &str) -> String {
        match &self.options.api_key {
            Some(key) if key.expose().len() >= 4 => text.replace(key.expose(), "<api key>"),
            _ => text.to_string(),
        }
    }

    fn with_hint(&self, status: u16, body: String) -> String {
        let var = &self.options.api_key_env;
        let hint = match status {
            401 | 403 if self.options.api_key.is_none() => {
                format!("no API key was sent: put it in the environment variable {var}")
            }
            401 | 403 => format!("the API key from {var} was refused: check it"),
            404 if !self.options.base_url.ends_with("/v1") => format!(
                "check the base URL (OpenAI-compatible servers usually serve {}/v1) and the model name \"{}\"",
                self.options.base_url, self.options.model
            ),
            404 => format!(
                "check the base URL and that the server has a model named \"{}\"",
                self.options.model
            ),
            429 => "the account is out of quota: check its plan and billing".to_string(),
            _ => return body,
        };
        if body.is_empty() {
            hint
        } else {
            format!("{body} ({hint})")
        }
    }
}

impl ChatModel for OpenAiClient {
    fn stream_chat<'a>(
        &'a self,
        request: ChatRequest,
        deltas: mpsc::Sender<String>,
    ) -> ChatFuture<'a> {
        Box::pin(self.chat(request, deltas))
    }

    fn provider(&self) -> &str {
        "openai-compatible"
    }

    fn model_name(&self) -> &str {
        &self.options.model
    }

    fn endpoint(&self) -> &str {
        &self.options.base_url
    }
}

/// The model names the server offers (`GET {base_url}/models`), in its order.
/// Used to probe a server and to pick a model when none is named.
pub async fn list_models(
    base_url: &str,
    api_key: Option<&ApiKey>,
    timeout: Duration,
) -> Result<Vec<String>, LlmError> {
    let base = normalize_base_url(base_url)?;
    let url = format!("{base}/models");
    let http = http_client(&base, timeout)?;
    let mut builder = http.get(&url);
    if let Some(key) = api_key {
        builder = builder.bearer_auth(key.expose());
    }
    let scrub = |text: String| match api_key {
        Some(key) if key.expose().len() >= 4 => text.replace(key.expose(), "<api key>"),
        _ => text,
    };
    let response = match tokio::time::timeout(timeout, builder.send()).await {
        Err(_) => {
            return Err(LlmError::Timeout {
                url,
                secs: whole_secs(timeout),
            });
        }
        Ok(Err(e)) => {
            return Err(LlmError::Unreachable {
                url,
                message: scrub(error_chain(&e)),
            });
        }
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    let body = read_limited(response, 4 << 20, timeout)
        .await
        .map_err(|message| LlmError::StreamCut {
            url: url.clone(),
            message,
        })?;
    let text = String::from_utf8_lossy(&body);
    if !status.is_success() {
        return Err(LlmError::Status {
            url,
            status: status.as_u16(),
            body: scrub(error_excerpt(&text)),
        });
    }
    let value: Value = serde_json::from_str(&text).map_err(|e| LlmError::Protocol {
        url: url.clone(),
        message: format!("the model list is not JSON ({e}): \"{}\"", excerpt(&text)),
    })?;
    // OpenAI, vLLM, llama.cpp, LM Studio and Ollama's /v1 say {"data": [{"id"}]};
    // Ollama's native API says {"models": [{"name"}]}.
    let names = value
        .get("data")
        .and_then(Value::as_array)
        .map(|models| {
            models
                .iter()
                .filter_map(|m| m.get("id").and_then(Value::as_str))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .or_else(|| {
            value.get("models").and_then(Value::as_array).map(|models| {
                models
                    .iter()
                    .filter_map(|m| m.get("name").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
        })
        .ok_or_else(|| LlmError::Protocol {
            url: url.clone(),
            message: format!("the model list has no \"data\": \"{}\"", excerpt(&text)),
        })?;
    Ok(names)
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

fn http_client(base_url: &str, connect_timeout: Duration) -> Result<reqwest::Client, LlmError> {
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

fn is_loopback(base_url: &str) -> bool {
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

/// What one streamed reply has produced so far.
#[derive(Debug, Default)]
struct ReplyState {
    text: String,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    events: u64,
    done: bool,
}

impl ReplyState {
    fn finish(self) -> ChatReply {
        ChatReply {
            text: self.text,
            usage: self.usage,
            usage_estimated: false,
        }
    }
}

fn first_choice(chunk: &Value) -> Option<&Value> {
    let choices = chunk.get("choices")?.as_array()?;
    choices
        .iter()
        .find(|c| c.get("index").and_then(Value::as_u64) == Some(0))
        .or_else(|| choices.first())
}

fn usage_of(chunk: &Value) -> Option<Usage> {
    let usage = chunk.get("usage")?;
    let prompt = usage.get("prompt_tokens").and_then(Value::as_u64);
    let completion = usage.get("completion_tokens").and_then(Value::as_u64);
    if prompt.is_none() && completion.is_none() {
        return None;
    }
    Some(Usage {
        prompt_tokens: prompt.unwrap_or(0),
        completion_tokens: completion.unwrap_or(0),
    })
}

/// The message of an error object, in any of the shapes servers use.
fn error_message(value: &Value) -> Option<String> {
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
fn error_excerpt(raw: &str) -> String {
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
fn excerpt(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= EXCERPT_CHARS {
        return collapsed;
    }
    let mut cut: String = collapsed.chars().take(EXCERPT_CHARS).collect();
    cut.push('…');
    cut
}

/// Read at most `limit` bytes of a body, each piece within `timeout`.
async fn read_limited(
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
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut root = error;
    while let Some(cause) = root.source() {
        root = cause;
    }
    root.to_string()
}

/// How long the server asked us to wait: `retry-after-ms` (OpenAI), else
/// `Retry-After` in seconds or as an HTTP date.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = parse_http_date(value)?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs() as i64;
    Some(Duration::from_secs(at.saturating_sub(now).max(0) as u64))
}

/// Seconds since the epoch of an IMF-fixdate ("Wed, 21 Oct 2015 07:28:00 GMT").
fn parse_http_date(value: &str) -> Option<i64> {
    let parts: Vec<&str> = value.split_whitespace().collect();
    let [_, day, month, year, clock, zone] = parts.as_slice() else {
        return None;
    };
    if *zone != "GMT" && *zone != "UTC" {
        return None;
    }
    let day: i64 = day.parse().ok()?;
    let year: i64 = year.parse().ok()?;
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m.eq_ignore_ascii_case(month))? as i64
        + 1;
    let mut hms = clock.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + m * 60 + s)
}

/// Seconds for a message, rounded up so a short limit never reads "0 s".
fn whole_secs(d: Duration) -> u64 {
    d.as_secs_f64().ceil() as u64
}

/// Exponential backoff with jitter: half the delay fixed, half random.
fn backoff(base: Duration, retry: u32, max: Duration) -> Duration {
    let delay = base.saturating_mul(1u32 << retry.min(16)).min(max);
    delay / 2 + jitter(delay / 2)
}

/// A random duration in [0, max).
fn jitter(max: Duration) -> Duration {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    let fraction = (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64;
    max.mul_f64(fraction)
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; empty for the default "message".
    pub event: String,
    /// The `data:` lines joined with newlines.
    pub data: String,
}

/// An incremental parser for `text/event-stream`: feed it bytes as they
/// arrive, split anywhere (mid-line, mid-CRLF, mid-UTF-8 character).
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    /// The previous byte was a CR, so an LF right after it ends nothing.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
    seen_any: bool,
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feed bytes; returns the events they completed.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, String> {
        let mut events = Vec::new();
        for &b in bytes {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' => self.end_line(&mut events),
                b'\r' => {
                    self.end_line(&mut events);
                    self.after_cr = true;
                }
                _ => {
                    self.after_cr = false;
                    if self.line.len() >= MAX_LINE_BYTES {
                        return Err(format!(
                            "a line of the event stream is longer than {} MiB",
                            MAX_LINE_BYTES >> 20
                        ));
                    }
                    self.line.push(b);
                }
            }
        }
        Ok(events)
    }

    /// The stream ended: a last line without its newline, and an event
    /// without its blank line, still count (lenient, as curl is).
    pub fn finish(&mut self) -> Vec<SseEvent> {
        let mut events = Vec::new();
        if !self.line.is_empty() {
            self.end_line(&mut events);
        }
        self.dispatch(&mut events);
        events
    }

    fn end_line(&mut self, events: &mut Vec<SseEvent>) {
        let raw = std::mem::take(&mut self.line);
        let mut line = String::from_utf8_lossy(&raw).into_owned();
        if !self.seen_any {
            if let Some(rest) = line.strip_prefix('\u{feff}') {
                line = rest.to_string();
            }
            self.seen_any = true;
        }
        if line.is_empty() {
            self.dispatch(events);
            return;
        }
        if line.starts_with(':') {
            return; // a comment: keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_str(), ""),
        };
        match field {
            "data" => self.add_data(value),
            "event" => self.event = value.to_string(),
            // llama.cpp's server reports a failure mid-stream as `error: {...}`.
            "error" => {
                self.event = "error".into();
                self.add_data(value);
            }
            _ => {} // id, retry, and unknown fields
        }
    }

    fn add_data(&mut self, value: &str) {
        if self.has_data {
            self.data.push('\n');
        }
        self.data.push_str(value);
        self.has_data = true;
    }

    fn dispatch(&mut self, events: &mut Vec<SseEvent>) {
        if self.has_data {
            events.push(SseEvent {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data),
            });
        }
        self.event.clear();
        self.data.clear();
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        let mut start = 0;
        for &cut in cuts.iter().chain(std::iter::once(&input.len())) {
            events.extend(parser.push(&input[start..cut]).unwrap());
            start = cut;
        }
        events.extend(parser.finish());
        events
    }

    #[test]
    fn any_single_split_gives_the_same_events() {
        let input = "\u{feff}: keep-alive\r\n\r\ndata: {\"a\":\"é→😀\"}\r\n\r\nevent: error\ndata: x\ndata: y\n\n\rdata:[DONE]\r\r".as_bytes();
        let whole = parse_in_pieces(input, &[]);
        assert_eq!(
            whole,
            vec![
                SseEvent {
                    event: String::new(),
                    data: "{\"a\":\"é→😀\"}".into()
                },
                SseEvent {
                    event: "error".into(),
                    data: "x\ny".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "[DONE]".into()
                },
            ]
        );
        for cut in 0..=input.len() {
            assert_eq!(parse_in_pieces(input, &[cut]), whole, "split at byte {cut}");
        }
        let every_byte: Vec<usize> = (1..input.len()).collect();
        assert_eq!(parse_in_pieces(input, &every_byte), whole);
    }

    #[test]
    fn a_last_event_without_its_blank_line_still_counts() {
        assert_eq!(
            parse_in_pieces(b"data: [DONE]", &[]),
            vec![SseEvent {
                event: String::new(),
                data: "[DONE]".into()
            }]
        );
    }

    #[test]
    fn llama_cpp_error_lines_are_error_events() {
        let events = parse_in_pieces(b"error: {\"code\":500,\"message\":\"boom\"}\n\n", &[]);
        assert_eq!(events[0].event, "error");
        assert!(events[0].data.contains("boom"));
    }

    #[test]
    fn retry_after_in_seconds_milliseconds_and_dates() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        let mut headers = HeaderMap::new();
        headers.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        // In the past: retry now.
        assert_eq!(retry_after(&headers), Some(Duration::ZERO));
        assert_eq!(
            parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(1_445_412_480)
        );
        headers.insert(RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn backoff_doubles_within_bounds() {
        let base = Duration::from_millis(100);
        let max = Duration::from_secs(1);
        for retry in 0..20 {
            let d = backoff(base, retry, max);
            let full = base.saturating_mul(1 << retry.min(16)).min(max);
            assert!(d >= full / 2 && d <= full, "retry {retry}: {d:?}");
        }
    }

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
    }

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
    fn the_key_never_shows_in_debug() {
        let mut options = OpenAiOptions::new("http://127.0.0.1:9/v1", "m");
        options.api_key = ApiKey::new("sk-very-secret");
        let client = OpenAiClient::new(options).unwrap();
        assert!(!format!("{client:?}").contains("sk-very-secret"));
    }
}
