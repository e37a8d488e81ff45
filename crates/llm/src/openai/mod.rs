//! The OpenAI-compatible streaming client (`/v1/chat/completions`, SSE).
//!
//! The servers that speak this protocol differ in small ways, and the client
//! accepts all of them:
//! - Usage: OpenAI, vLLM and Ollama send it in a last chunk with empty
//!   `choices` when asked with `stream_options.include_usage`; llama.cpp puts
//!   it in the chunk with `finish_reason`; some send none (llama-cpp-python
//!   when streaming): then it is estimated, and marked so.
//! - Reasoning: in `reasoning_content` or `reasoning` beside `content`, or in
//!   `<think>` blocks inside it; kept apart from the answer (`decode`).
//! - End of stream: `data: [DONE]` (all of the above). Some llama.cpp forks end
//!   the stream after the `finish_reason` chunk without it; a stream that saw a
//!   `finish_reason` is complete, one that saw neither was cut off.
//! - Errors mid-stream: `data: {"error": {...}}` (OpenAI, Ollama), a vLLM
//!   `{"object": "error", ...}`, `event: error` (proxies) or an `error:` line
//!   (llama.cpp).
//! - A server that ignores `stream: true` answers with one JSON completion:
//!   accepted as a single delta.
//! - A server that rejects `stream_options`, `temperature` or `max_tokens`
//!   (HTTP 400/422 naming it) is asked again without it (`request`).
//! - A prompt too long for the context: each server's error body, and
//!   llama.cpp's empty 200 stream, become `LlmError::ContextOverflow`; Ollama,
//!   which cuts a long prompt silently, gets no prompt that would not fit.
//!
//! Transient failures are asked again with backoff (`retry`): 429 and 5xx, a
//! connection refused or reset once the server had answered before, an answer
//! that broke off before its head or before any of the reply; one that broke
//! after part of the reply is asked again once, with a `Delta::Restart`. A
//! connection refused at the first call is reported at once: the server is
//! not running, and waiting does not start it.
//!
//! The API key is held in [`ApiKey`], whose `Debug` hides it; it is sent only
//! in the Authorization header (marked sensitive) and scrubbed from every error
//! message built from what the server sent back.

mod decode;
mod errors;
mod local;
mod numbers;
mod owner;
mod prefill;
mod report;
mod request;
mod retry;
mod server;
mod sse;
mod turn;
mod window;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reqwest::header::ACCEPT;
use serde_json::Value;
use tokio::sync::{OnceCell, Semaphore, mpsc};

use super::{
    ChatFuture, ChatModel, ChatReply, ChatRequest, ContextFuture, Delta, LlmError, ReportFuture,
};
use decode::ReadError;
pub(crate) use errors::ServerKind;
use errors::{error_chain, error_excerpt, overflow_in, read_limited};
pub use local::{
    LocalServer, PROBE_ANSWER, PROBE_WHOLE, Probe, WELL_KNOWN, WellKnown, probe_local,
    well_known_urls,
};
pub use owner::Stranger;
pub use request::normalize_base_url;
use request::{BodyFacts, Quirks, http_client};
use retry::{Next, Retries, retry_after, whole_secs};
pub use server::{OLLAMA_DEFAULT_NUM_CTX, list_models};
pub(crate) use server::{ServerFacts, discover};

/// Most of an error body read to quote from it.
const MAX_ERROR_BODY_BYTES: usize = 16 << 10;
/// How long each question about the server (its context window) may take.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(3);
/// The fewest tokens a reply is given room for; a prompt that leaves less
/// in a known window is an overflow, refused before it is sent.
const MIN_REPLY_TOKENS: u64 = 64;

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

    /// `text` with the key replaced (some servers echo it back).
    fn scrub(&self, text: &str) -> String {
        if self.0.len() >= 4 {
            text.replace(&self.0, "<api key>")
        } else {
            text.to_string()
        }
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
    pub(crate) base_url: String,
    pub(crate) model: String,
    pub api_key: Option<ApiKey>,
    /// The environment variable the key is read from, named in error hints.
    pub api_key_env: String,
    /// The longest the server may stay silent: before its answer starts, and
    /// between two pieces of a streamed reply.
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    /// The longest one whole reply may take, retries included.
    pub(crate) reply_deadline: Duration,
    /// Retries on transient failures (so at most `retries + 1` attempts).
    pub retries: u32,
    /// First backoff delay; doubled at each retry, with jitter.
    pub backoff_base: Duration,
    /// Longest wait between two attempts; a Retry-After beyond it ends the call.
    pub(crate) max_retry_wait: Duration,
    /// Used when the request sets no temperature.
    pub temperature: Option<f32>,
    /// Used when the request sets no max_tokens.
    pub max_tokens: Option<u32>,
    /// The model's context window in tokens, when the person knows it better
    /// than the server says (or the server does not say).
    pub context_window: Option<u64>,
    /// Ask the server about itself (its software, the context window) before
    /// the first call, so a prompt Ollama would cut silently is refused
    /// instead. Off by default: it costs a few requests. It also tells how
    /// many requests the server serves at once (see `max_parallel`).
    pub learn_context: bool,
    /// The most requests this client has in flight at once, whatever the
    /// callers ask: set (a profile's `parallel`), else what the server told
    /// (`learn_context`: llama.cpp's slots; one for llama-cpp-python and an
    /// unknown local server), else no limit.
    pub max_parallel: Option<usize>,
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
            max_tokens: None,
            context_window: None,
            learn_context: false,
            max_parallel: None,
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
    /// `{base_url}/completions`, where a prefilled answer goes on (`prefill`).
    completions_url: String,
    /// What this server turned down, learned from its 400 answers.
    quirks: Quirks,
    /// The server has answered this client at least once: a refused
    /// connection from now on is a restart worth waiting for.
    reached: AtomicBool,
    /// What the server told about itself, asked once.
    facts: OnceCell<ServerFacts>,
    /// The window learned from an overflow, when the server tells it no
    /// other way (llama-cpp-python); 0 while unknown.
    learned_window: AtomicU64,
    /// The server has ended a reply with a `finish_reason`: from now on a
    /// stream that ends without one was cut, not finished.
    sends_finish_reason: AtomicBool,
    /// The requests in flight, bounded as `max_parallel` says (set at the
    /// first call, once the server is known).
    slots: OnceCell<Option<Arc<Semaphore>>>,
}

impl OpenAiClient {
    pub fn new(mut options: OpenAiOptions) -> Result<OpenAiClient, LlmError> {
        options.base_url = normalize_base_url(&options.base_url)?;
        let http = http_client(&options.base_url, options.connect_timeout)?;
        let chat_url = format!("{}/chat/completions", options.base_url);
        let completions_url = format!("{}/completions", options.base_url);
        Ok(OpenAiClient {
            http,
            options,
            chat_url,
            completions_url,
            quirks: Quirks::default(),
            reached: AtomicBool::new(false),
            facts: OnceCell::new(),
            learned_window: AtomicU64::new(0),
            sends_finish_reason: AtomicBool::new(false),
            slots: OnceCell::new(),
        })
    }

    /// What the server told about itself (asked at the first use, then kept).
    pub(crate) async fn server_facts(&self) -> &ServerFacts {
        self.facts
            .get_or_init(|| {
                discover(
                    &self.http,
                    &self.options.base_url,
                    &self.options.model,
                    self.options.api_key.as_ref(),
                    DISCOVERY_TIMEOUT.min(self.options.request_timeout),
                )
            })
            .await
    }

    fn known_server(&self) -> ServerKind {
        self.facts.get().map_or(ServerKind::Unknown, |f| f.server)
    }

    async fn chat(
        &self,
        request: ChatRequest,
        deltas: mpsc::Sender<Delta>,
    ) -> Result<ChatReply, LlmError> {
        let started = Instant::now();
        if self.options.learn_context {
            self.server_facts().await;
            self.check_fit(&request)?;
        }
        let slots = self.slots().await;
        let way = self.way_for(&request).await;
        let prefilled = way.prefilled(&request);
        let mut retries = Retries::new(&self.options, started);
        loop {
            let facts = BodyFacts {
                server: self.known_server(),
                max_tokens: self.fitted_max_tokens(&request)?,
            };
            let (mut sent, structured) = self.quirks.body(&self.options, &request, &facts);
            way.fill(&mut sent, &request);
            // One permit per attempt: the server serves this many at once,
            // and a request beyond them would cut another's stream.
            let _permit = match &slots {
                Some(slots) => Some(slots.acquire().await.map_err(|_| LlmError::Cancelled)?),
                None => None,
            };
            // A server of one slot has one turn for every process on this
            // machine (see `turn`).
            let _turn = match &slots {
                Some(_) if self.one_slot() => turn::take(&self.options.base_url, &deltas).await,
                _ => None,
            };
            let response = match self.send(self.url_of(&way), &sent).await {
                Ok(response) => response,
                Err(Sent::Final(e)) => return Err(e),
                Err(Sent::Transient(message)) => {
                    match retries.after_failure(None) {
                        Next::Wait(wait) => tokio::time::sleep(wait).await,
                        Next::GiveUp { .. } | Next::TooLong { .. } => {
                            return Err(LlmError::Unreachable {
                                url: self.chat_url.clone(),
                                message: format!("{message} ({} attempts)", retries.failed()),
                            });
                        }
                    }
                    continue;
                }
            };
            self.reached.store(true, Ordering::Relaxed);
            let attempt = if response.status().is_success() {
                // A closed receiver is not an error: nobody is watching.
                let _ = deltas
                    .send(Delta::Began {
                        structured,
                        prefilled,
                    })
                    .await;
                match self
                    .on_reply(
                        response,
                        (&request, way.continues(&request)),
                        &deltas,
                        started,
                        &sent,
                        &mut retries,
                    )
                    .await
                {
                    Attempt::Done(Ok(reply)) => Attempt::Done(Ok(ChatReply {
                        structured,
                        prefilled,
                        ..reply
                    })),
                    other => other,
                }
            } else {
                self.on_status(response, &sent, &mut retries).await
            };
            match attempt {
                Attempt::Done(result) => return result,
                Attempt::Again => continue,
            }
        }
    }

    /// A reply the server began (a success status): read whole, or what
    /// its cut or empty stream means: the call again (the tape told why),
    /// an overflow found by probing, or the error once the retries are
    /// spent.
    async fn on_reply(
        &self,
        response: reqwest::Response,
        (request, prefill): (&ChatRequest, Option<&str>),
        deltas: &mpsc::Sender<Delta>,
        started: Instant,
        sent: &Value,
        retries: &mut Retries,
    ) -> Attempt {
        let restart = |why: String| async move {
            let _ = deltas.send(Delta::Restart(why)).await;
        };
        let error = match self
            .read_reply(response, (&request.messages, prefill), deltas, started)
            .await
        {
            Ok(reply) => return Attempt::Done(Ok(reply)),
            Err(ReadError::Final(e)) => return Attempt::Done(Err(e)),
            Err(ReadError::Empty) => match self.probe_overflow(sent).await {
                Some(overflow) => return Attempt::Done(Err(overflow)),
                None => match retries.after_failure(None) {
                    Next::Wait(wait) => {
                        restart("the server sent an empty stream; asking again".into()).await;
                        tokio::time::sleep(wait).await;
                        return Attempt::Again;
                    }
                    Next::GiveUp { .. } | Next::TooLong { .. } => {
                        self.stream_cut("the server sent an empty stream on each attempt".into())
                    }
                },
            },
            Err(ReadError::CutEarly(e)) => match retries.after_failure(None) {
                Next::Wait(wait) => {
                    // Nothing of the reply came, but the tape says why the
                    // call is made again.
                    restart(format!("{e}; asking the model again")).await;
                    tokio::time::sleep(wait).await;
                    return Attempt::Again;
                }
                Next::GiveUp { .. } | Next::TooLong { .. } => e,
            },
            Err(ReadError::CutLate(e)) => match retries.after_cut_reply() {
                Next::Wait(_) => {
                    restart(format!("{e}; asking the model again")).await;
                    return Attempt::Again;
                }
                Next::GiveUp { .. } | Next::TooLong { .. } => e,
            },
        };
        Attempt::Done(Err(match error {
            LlmError::StreamCut { url, message } if retries.failed() > 1 => LlmError::StreamCut {
                url,
                message: format!(
                    "{message}; it broke on each of {} attempts",
                    retries.failed()
                ),
            },
            other => other,
        }))
    }

    /// An error status: an overflow said in words, a quirk learnt (the call
    /// again, changed), a refusal, or a wait before the next attempt
    /// (429, 5xx) until the retries are spent.
    async fn on_status(
        &self,
        response: reqwest::Response,
        sent: &Value,
        retries: &mut Retries,
    ) -> Attempt {
        let status = response.status();
        let asked = retry_after(response.headers());
        let raw = read_limited(response, MAX_ERROR_BODY_BYTES, self.options.request_timeout)
            .await
            .unwrap_or_default();
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let code = status.as_u16();
        if let Some(overflow) = overflow_in(&raw) {
            return Attempt::Done(Err(self.overflow(overflow)));
        }
        if self.quirks.learn(sent, code, &raw) {
            return Attempt::Again;
        }
        let body = self.scrub(&error_excerpt(&raw));
        // OpenAI answers 429 for an exhausted quota too: waiting does not help.
        let out_of_quota = code == 429 && raw.contains("insufficient_quota");
        if out_of_quota || !(code == 429 || status.is_server_error()) {
            return Attempt::Done(Err(LlmError::Status {
                url: self.chat_url.clone(),
                status: code,
                body: self.with_hint(code, body),
            }));
        }
        Attempt::Done(Err(match retries.after_failure(asked) {
            Next::Wait(wait) => {
                tokio::time::sleep(wait).await;
                return Attempt::Again;
            }
            Next::GiveUp { attempts } => LlmError::RetriesExhausted {
                url: self.chat_url.clone(),
                status: code,
                attempts,
                body,
            },
            Next::TooLong { asked } => LlmError::RetryTooLong {
                url: self.chat_url.clone(),
                status: code,
                wait_secs: asked.as_secs_f64().ceil() as u64,
                max_secs: whole_secs(self.options.max_retry_wait),
                body,
            },
        }))
    }

    /// Send the request to `url` and wait for the answer's head.
    async fn send(&self, url: &str, body: &Value) -> Result<reqwest::Response, Sent> {
        let mut builder = self
            .http
            .post(url)
            .header(ACCEPT, "text/event-stream")
            .json(body);
        if let Some(key) = &self.options.api_key {
            builder = builder.bearer_auth(key.expose());
        }
        match tokio::time::timeout(self.options.request_timeout, builder.send()).await {
            Err(_) => Err(Sent::Final(LlmError::Timeout {
                url: self.chat_url.clone(),
                secs: whole_secs(self.options.request_timeout),
            })),
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) if e.is_timeout() => Err(Sent::Final(LlmError::Timeout {
                url: self.chat_url.clone(),
                secs: whole_secs(self.options.connect_timeout),
            })),
            // Never answered: the server is not running here.
            Ok(Err(e)) if e.is_connect() && !self.reached.load(Ordering::Relaxed) => {
                Err(Sent::Final(LlmError::Unreachable {
                    url: self.chat_url.clone(),
                    message: self.scrub(&error_chain(&e)),
                }))
            }
            // Refused after it had answered (a restart), reset, or closed
            // before its answer's head.
            Ok(Err(e)) => Err(Sent::Transient(self.scrub(&error_chain(&e)))),
        }
    }

    /// Remove the API key from text the server sent back (some echo it).
    fn scrub(&self, text: &str) -> String {
        match &self.options.api_key {
            Some(key) => key.scrub(text),
            None => text.to_string(),
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

/// What one attempt at a call came to: its end, or another attempt.
enum Attempt {
    Done(Result<ChatReply, LlmError>),
    Again,
}

/// Why a request got no answer head.
enum Sent {
    /// Worth asking again (the cause, for the message if retries run out).
    Transient(String),
    Final(LlmError),
}

impl ChatModel for OpenAiClient {
    fn server_report<'a>(&'a self) -> ReportFuture<'a> {
        Box::pin(async move { Some(self.report().await) })
    }

    fn stream<'a>(&'a self, request: ChatRequest, deltas: mpsc::Sender<Delta>) -> ChatFuture<'a> {
        Box::pin(self.chat(request, deltas))
    }

    /// The configured window, else what the server tells (asked once).
    fn context_window<'a>(&'a self) -> ContextFuture<'a> {
        Box::pin(async move {
            if self.options.context_window.is_none() {
                self.server_facts().await;
            }
            self.known_window()
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_never_shows_in_debug() {
        let mut options = OpenAiOptions::new("http://127.0.0.1:9/v1", "m");
        options.api_key = ApiKey::new("sk-very-secret");
        let client = OpenAiClient::new(options).unwrap();
        assert!(!format!("{client:?}").contains("sk-very-secret"));
    }
}
