//! Reading a reply: the event stream (or one whole JSON completion from a
//! server that ignored `stream: true`) turned into deltas and a `ChatReply`.
//!
//! Reasoning comes two ways and both end up in `ChatReply::reasoning`: in a
//! field beside `content` (`reasoning_content` from vLLM, DeepSeek and
//! llama.cpp; `reasoning` from Ollama's OpenAI API and OpenRouter), and
//! inline in the content (`<think>` blocks, see `llm::reasoning`).
//!
//! How a stream ends decides what the caller does next (`Ended`): whole, or
//! broken before any of the reply (asked again like a 5xx), or broken after
//! part of it (asked again once).

use std::sync::atomic::Ordering;
use std::time::Instant;

use reqwest::header::CONTENT_TYPE;
use serde_json::Value;
use tokio::sync::mpsc;

use super::errors::{ServerKind, error_message, excerpt, overflow_in};
use super::retry::whole_secs;
use super::sse::{SseEvent, SseParser};
use super::{LlmError, OpenAiClient};
use crate::reasoning::ReasoningSplitter;
use crate::{ChatMessage, ChatReply, Delta, FinishReason, Usage, tokens};

/// Largest reply text accepted, and largest non-streamed body read.
const MAX_REPLY_BYTES: usize = 32 << 20;
/// How long a stream may stay open after its `finish_reason` before the
/// reply is taken as whole: some servers send the finishing chunk and then
/// hold the connection without `[DONE]`. Usage, when it comes, comes at once.
const FINISH_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Why reading a reply did not give one.
#[derive(Debug)]
pub(super) enum ReadError {
    /// The answer broke off before any of the reply: worth asking again.
    CutEarly(LlmError),
    /// The answer broke off after part of the reply had been streamed.
    CutLate(LlmError),
    /// A 200 whose event stream held nothing at all: an overflow on
    /// llama-cpp-python, or a stream lost before its first event.
    Empty,
    /// Anything else: final.
    Final(LlmError),
}

impl From<LlmError> for ReadError {
    fn from(e: LlmError) -> ReadError {
        ReadError::Final(e)
    }
}

/// What one streamed reply has produced so far.
#[derive(Debug, Default)]
struct ReplyState {
    text: String,
    reasoning: String,
    splitter: ReasoningSplitter,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    /// A chunk with a choice arrived (a stream of usage and [DONE] alone has none).
    saw_choice: bool,
    /// The length of the answer's start the request gave (its prefill, gone
    /// on from): in `text`, but not the model's.
    given: usize,
    events: u64,
    done: bool,
}

impl ReplyState {
    fn has_reply(&self) -> bool {
        self.text.len() > self.given || !self.reasoning.is_empty()
    }

    /// Take pieces in: keep them, and pass them on.
    async fn take(&mut self, pieces: Vec<Delta>, deltas: &mpsc::Sender<Delta>) {
        for piece in pieces {
            match &piece {
                Delta::Content(t) => self.text.push_str(t),
                Delta::Reasoning(t) => self.reasoning.push_str(t),
                Delta::Restart(_) => {
                    self.text.clear();
                    self.reasoning.clear();
                }
                Delta::Status(_) | Delta::Began { .. } => {}
            }
            // A closed receiver is not an error: nobody is watching the stream.
            let _ = deltas.send(piece).await;
        }
    }
}

/// The start of an answer's body, until its kind is told by its first
/// byte that is not whitespace: `{` is one JSON completion (a server that
/// ignored `stream: true`), anything else an event stream (content types
/// are only quoted).
#[derive(Default)]
struct Body {
    /// The first bytes, to quote when the body turns out not to be SSE.
    head: Vec<u8>,
    /// What came while the kind is not told yet.
    undecided: Option<Vec<u8>>,
    decided: bool,
    /// The whole body, where it is one JSON completion.
    whole_json: Option<Vec<u8>>,
}

impl Body {
    /// Take a chunk: the bytes to read now (what waited with it, once the
    /// kind is told), or None while the body is still only whitespace.
    fn take(&mut self, chunk: Vec<u8>) -> Option<Vec<u8>> {
        if self.head.len() < 512 {
            let room = 512 - self.head.len();
            self.head.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
        if self.decided {
            return Some(chunk);
        }
        let mut pending = self.undecided.take().unwrap_or_default();
        pending.extend_from_slice(&chunk);
        match pending.iter().find(|b| !b.is_ascii_whitespace()) {
            None => {
                self.undecided = Some(pending);
                return None;
            }
            Some(b'{') => self.whole_json = Some(Vec::new()),
            Some(_) => {}
        }
        self.decided = true;
        Some(pending)
    }

    /// More of a body that is one JSON completion, up to `MAX_REPLY_BYTES`.
    fn push_json(&mut self, chunk: &[u8]) -> Result<(), String> {
        let json = self.whole_json.get_or_insert_with(Vec::new);
        if json.len() + chunk.len() > MAX_REPLY_BYTES {
            return Err(format!(
                "the answer is larger than {} MiB",
                MAX_REPLY_BYTES >> 20
            ));
        }
        json.extend_from_slice(chunk);
        Ok(())
    }
}

impl OpenAiClient {
    /// The reply of `response`; with a `prefill` the server goes on from,
    /// the reply begins with it (sent first, as the answer's first piece).
    pub(super) async fn read_reply(
        &self,
        mut response: reqwest::Response,
        (messages, prefill): (&[ChatMessage], Option<&str>),
        deltas: &mpsc::Sender<Delta>,
        started: Instant,
    ) -> Result<ChatReply, ReadError> {
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let mut body = Body::default();
        let mut parser = SseParser::new();
        let mut reply = ReplyState::default();
        if let Some(given) = prefill {
            reply.given = given.len();
            reply
                .take(vec![Delta::Content(given.to_string())], deltas)
                .await;
        }
        let mut cut: Option<String> = None;
        // Only data counts as the server being at work: comments, blank
        // lines and fields of no event (keep-alives) do not hold a call.
        let mut last_data = Instant::now();
        loop {
            let grace = reply.finish_reason.is_some().then_some(FINISH_GRACE);
            let chunk = match self
                .next_chunk(&mut response, started, last_data, grace)
                .await?
            {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(message) => {
                    cut = Some(message);
                    break;
                }
            };
            let Some(chunk) = body.take(chunk) else {
                continue;
            };
            if body.whole_json.is_some() {
                body.push_json(&chunk).map_err(|m| self.protocol(m))?;
                last_data = Instant::now();
                continue;
            }
            let events = parser.push(&chunk).map_err(|m| self.protocol(m))?;
            if !events.is_empty() {
                last_data = Instant::now();
            }
            for event in events {
                self.apply_event(event, &mut reply, deltas).await?;
                if reply.done {
                    return self.done(reply, messages, deltas).await;
                }
            }
        }
        if let Some(json) = body.whole_json {
            if let Some(message) = cut {
                return Err(ReadError::CutEarly(self.stream_cut(message)));
            }
            return self
                .whole_completion(&json, &content_type, messages, deltas)
                .await;
        }
        // After a clean end, a last event missing its blank line still counts;
        // after a broken one, a half-received event is not worth reading.
        let tail = if cut.is_none() {
            parser.finish()
        } else {
            Vec::new()
        };
        for event in tail {
            match self.apply_event(event, &mut reply, deltas).await {
                Ok(()) if reply.done => return self.done(reply, messages, deltas).await,
                Ok(()) => {}
                Err(ReadError::CutEarly(LlmError::StreamCut { message, .. }))
                | Err(ReadError::CutLate(LlmError::StreamCut { message, .. })) => {
                    return Err(self.cut_at(
                        &reply,
                        format!("the stream ended in the middle of an event: {message}"),
                    ));
                }
                Err(e) => return Err(e),
            }
        }
        if reply.finish_reason.is_some() {
            return self.finish(reply, messages, deltas).await;
        }
        Err(self.unfinished(&reply, cut, &body.head, &content_type))
    }

    /// A stream that ended with no `[DONE]` and no finish_reason: empty,
    /// not an event stream at all, or cut (early or late, with what came).
    fn unfinished(
        &self,
        reply: &ReplyState,
        cut: Option<String>,
        head: &[u8],
        content_type: &str,
    ) -> ReadError {
        let blank = head.iter().all(u8::is_ascii_whitespace);
        if reply.events == 0 && cut.is_none() && blank {
            return ReadError::Empty;
        }
        if reply.events == 0 {
            let shown = if content_type.is_empty() {
                "no content type".to_string()
            } else {
                content_type.to_string()
            };
            let what = if blank {
                "an empty body".to_string()
            } else {
                format!(
                    "\"{}\"",
                    self.scrub(&excerpt(&String::from_utf8_lossy(head)))
                )
            };
            return match cut {
                Some(message) => ReadError::CutEarly(self.protocol(format!(
                    "the answer ({shown}) broke off before any event arrived ({message}); it began with {what}"
                ))),
                None => ReadError::Final(self.protocol(format!(
                    "expected a stream of server-sent events, got {shown} holding {what}. Is the base URL the server's API (it usually ends in /v1)?"
                ))),
            };
        }
        let got = format!(
            "after {} event(s) and {} characters of reply",
            reply.events,
            reply.text.chars().count() + reply.reasoning.chars().count()
        );
        let message = match cut {
            Some(message) => format!("{message} ({got})"),
            None => format!("the stream ended without [DONE] or a finish_reason {got}"),
        };
        self.cut_at(reply, message)
    }

    /// The stream said `[DONE]`. Without a `finish_reason` (where a choice
    /// came) it was cut, not finished: llama-cpp-python ends a stream so when
    /// another request arrives. A first reply that says nothing either way
    /// is taken as whole, unless it is empty: some servers never send one.
    async fn done(
        &self,
        reply: ReplyState,
        messages: &[ChatMessage],
        deltas: &mpsc::Sender<Delta>,
    ) -> Result<ChatReply, ReadError> {
        if reply.finish_reason.is_none()
            && reply.saw_choice
            && (self.sends_finish_reason.load(Ordering::Relaxed) || !reply.has_reply())
        {
            return Err(self.cut_at(
                &reply,
                format!(
                    "the stream ended with [DONE] but no finish_reason after {} characters: the server cut the reply (llama-cpp-python does when a second request arrives)",
                    reply.text.chars().count() + reply.reasoning.chars().count()
                ),
            ));
        }
        self.finish(reply, messages, deltas).await
    }

    /// A stream cut: early or late by whether any of the reply had come.
    fn cut_at(&self, reply: &ReplyState, message: String) -> ReadError {
        let error = self.stream_cut(message);
        if reply.has_reply() {
            ReadError::CutLate(error)
        } else {
            ReadError::CutEarly(error)
        }
    }

    pub(super) fn stream_cut(&self, message: String) -> LlmError {
        LlmError::StreamCut {
            url: self.chat_url.clone(),
            message,
        }
    }

    /// The next piece of the body: `Ok(None)` at its end, `Err(message)` when
    /// the transport broke (a cut-off stream), an `LlmError` on a timeout:
    /// the reply's deadline, or `request_timeout` since the last data.
    /// With a `grace`, the reply is already whole: a silence that long ends it.
    async fn next_chunk(
        &self,
        response: &mut reqwest::Response,
        started: Instant,
        last_data: Instant,
        grace: Option<std::time::Duration>,
    ) -> Result<Result<Option<Vec<u8>>, String>, LlmError> {
        let left = self
            .options
            .reply_deadline
            .saturating_sub(started.elapsed());
        let quiet_left = self
            .options
            .request_timeout
            .saturating_sub(last_data.elapsed());
        let silence = quiet_left.min(left);
        if let Some(grace) = grace {
            return match tokio::time::timeout(grace.min(silence), response.chunk()).await {
                Err(_) => Ok(Ok(None)),
                Ok(Ok(chunk)) => Ok(Ok(chunk.map(|b| b.to_vec()))),
                // Broken after its finish: the reply is whole all the same.
                Ok(Err(_)) => Ok(Ok(None)),
            };
        }
        match tokio::time::timeout(silence, response.chunk()).await {
            Err(_) if left < quiet_left => Err(LlmError::Timeout {
                url: self.chat_url.clone(),
                secs: whole_secs(self.options.reply_deadline),
            }),
            Err(_) => Err(LlmError::Stalled {
                url: self.chat_url.clone(),
                secs: whole_secs(self.options.request_timeout),
            }),
            Ok(Ok(chunk)) => Ok(Ok(chunk.map(|b| b.to_vec()))),
            Ok(Err(e)) => Ok(Err(self.scrub(&super::errors::error_chain(&e)))),
        }
    }

    async fn apply_event(
        &self,
        event: SseEvent,
        reply: &mut ReplyState,
        deltas: &mpsc::Sender<Delta>,
    ) -> Result<(), ReadError> {
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
            return Err(self.in_stream(data, message).into());
        }
        if data.is_empty() {
            return Ok(());
        }
        // A malformed chunk is a stream damaged on its way: asked again like
        // a cut one.
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            self.cut_at(
                reply,
                format!(
                    "an event's data is not JSON ({e}): \"{}\"",
                    self.scrub(&excerpt(data))
                ),
            )
        })?;
        if let Some(message) = error_message(&chunk) {
            return Err(self.in_stream(data, message).into());
        }
        if let Some(usage) = usage_of(&chunk) {
            reply.usage = Some(usage);
        }
        let Some(choice) = first_choice(&chunk) else {
            return Ok(());
        };
        reply.saw_choice = true;
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            reply.finish_reason = Some(reason.to_string());
        }
        let delta = choice.get("delta").or_else(|| choice.get("message"));
        let field = |name: &str| {
            delta
                .and_then(|d| d.get(name))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let thought = match field("reasoning_content") {
            "" => field("reasoning"),
            some => some,
        };
        // `/completions` streams `text` where a chat streams `delta.content`.
        let piece = match field("content") {
            "" => choice.get("text").and_then(Value::as_str).unwrap_or(""),
            some => some,
        };
        if reply.text.len() + reply.reasoning.len() + piece.len() + thought.len() > MAX_REPLY_BYTES
        {
            return Err(self
                .protocol(format!(
                    "the reply is longer than {} MiB",
                    MAX_REPLY_BYTES >> 20
                ))
                .into());
        }
        if !thought.is_empty() {
            reply
                .take(vec![Delta::Reasoning(thought.to_string())], deltas)
                .await;
        }
        if !piece.is_empty() {
            let pieces = reply.splitter.push(piece);
            reply.take(pieces, deltas).await;
        }
        Ok(())
    }

    /// The stream ended as it should: the held-back end of the content, the
    /// usage (estimated when the server sent none), and the empty reply that
    /// means the prompt filled the context.
    async fn finish(
        &self,
        mut reply: ReplyState,
        messages: &[ChatMessage],
        deltas: &mpsc::Sender<Delta>,
    ) -> Result<ChatReply, ReadError> {
        let rest = reply.splitter.finish();
        reply.take(rest, deltas).await;
        let finish_reason = reply
            .finish_reason
            .as_deref()
            .map(FinishReason::from_wire)
            .unwrap_or_default();
        // llama.cpp answers a prompt that fills its context with a 200 and a
        // stream holding nothing: no choice at all, or one cut at the length
        // limit before a single token.
        if !reply.has_reply() && (!reply.saw_choice || finish_reason == FinishReason::Length) {
            let prompt = reply
                .usage
                .map(|u| u.prompt_tokens)
                .filter(|&n| n > 0)
                .unwrap_or_else(|| tokens::estimate_prompt_tokens(messages));
            let window = self.known_window().map(|w| w.tokens);
            let detail = match window {
                Some(w) => format!(
                    "the server sent an empty reply, as llama.cpp does when the prompt fills its context (the prompt is about {prompt} tokens, the window {w})"
                ),
                None => format!(
                    "the server sent an empty reply, as llama.cpp does when the prompt fills its context (the prompt is about {prompt} tokens)"
                ),
            };
            let server = match self.known_server() {
                ServerKind::Unknown => ServerKind::LlamaCpp,
                known => known,
            };
            return Err(LlmError::ContextOverflow {
                url: self.chat_url.clone(),
                window,
                prompt_tokens: Some(prompt),
                detail,
                advice: server.overflow_advice(&self.options.model),
            }
            .into());
        }
        if reply.finish_reason.is_some() {
            self.sends_finish_reason.store(true, Ordering::Relaxed);
        }
        let (usage, usage_estimated) = match reply.usage {
            Some(usage) => (usage, false),
            None => (
                tokens::estimate_usage(messages, &reply.text, &reply.reasoning),
                true,
            ),
        };
        Ok(ChatReply {
            text: reply.text,
            reasoning: reply.reasoning,
            finish_reason,
            usage: Some(usage),
            usage_estimated,
            structured: None,
            prefilled: None,
        })
    }

    /// A server that ignored `stream: true` and sent the whole completion.
    async fn whole_completion(
        &self,
        body: &[u8],
        content_type: &str,
        messages: &[ChatMessage],
        deltas: &mpsc::Sender<Delta>,
    ) -> Result<ChatReply, ReadError> {
        let text = String::from_utf8_lossy(body);
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            self.protocol(format!(
                "the answer ({content_type}) is not JSON ({e}): \"{}\"",
                self.scrub(&excerpt(&text))
            ))
        })?;
        if let Some(message) = error_message(&value) {
            return Err(self.in_stream(&text, message).into());
        }
        let choice = first_choice(&value);
        let message = choice.and_then(|c| c.get("message"));
        let content = message
            .and_then(|m| m.get("content"))
            .or_else(|| choice.and_then(|c| c.get("text")))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                self.protocol(format!(
                    "the answer has no choices[0].message.content: \"{}\"",
                    self.scrub(&excerpt(&text))
                ))
            })?;
        let mut reply = ReplyState {
            usage: usage_of(&value),
            finish_reason: choice
                .and_then(|c| c.get("finish_reason"))
                .and_then(Value::as_str)
                .map(str::to_string),
            saw_choice: true,
            ..ReplyState::default()
        };
        let thought = ["reasoning_content", "reasoning"]
            .iter()
            .find_map(|f| message.and_then(|m| m.get(*f)).and_then(Value::as_str))
            .unwrap_or("");
        if !thought.is_empty() {
            reply
                .take(vec![Delta::Reasoning(thought.to_string())], deltas)
                .await;
        }
        let pieces = reply.splitter.push(content);
        reply.take(pieces, deltas).await;
        self.finish(reply, messages, deltas).await
    }

    pub(super) fn protocol(&self, message: String) -> LlmError {
        LlmError::Protocol {
            url: self.chat_url.clone(),
            message,
        }
    }

    /// An error the server reported inside a 200 answer: a context overflow
    /// when it says so, else `InStream`.
    fn in_stream(&self, raw: &str, message: String) -> LlmError {
        match overflow_in(raw) {
            Some(overflow) => self.overflow(overflow),
            None => LlmError::InStream {
                url: self.chat_url.clone(),
                message: self.scrub(&message),
            },
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

/// The tokens a chunk (or a whole answer) reports: `usage`, with the prompt
/// tokens the server took from its cache where it says
/// (`usage.prompt_tokens_details.cached_tokens`, as OpenAI and llama.cpp's
/// server write it, or llama.cpp's `timings.cache_n`); a llama.cpp chunk with
/// `timings` and no `usage` (a server that ignores `stream_options`) counts
/// from its timings.
fn usage_of(chunk: &Value) -> Option<Usage> {
    let count = |v: Option<&Value>, path: &[&str]| {
        super::numbers::tokens(path.iter().try_fold(v?, |v, key| v.get(key)))
    };
    let timings = chunk.get("timings");
    let cache_n = count(timings, &["cache_n"]);
    let cached = count(
        chunk.get("usage"),
        &["prompt_tokens_details", "cached_tokens"],
    )
    .or(cache_n);
    if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
        let prompt = count(Some(usage), &["prompt_tokens"]);
        let completion = count(Some(usage), &["completion_tokens"]);
        if prompt.is_some() || completion.is_some() {
            return Some(Usage {
                prompt_tokens: prompt.unwrap_or(0),
                completion_tokens: completion.unwrap_or(0),
                cached_tokens: cached,
            });
        }
    }
    let prompt_n = count(timings, &["prompt_n"])?;
    Some(Usage {
        prompt_tokens: prompt_n.saturating_add(cache_n.unwrap_or(0)),
        completion_tokens: count(timings, &["predicted_n"]).unwrap_or(0),
        cached_tokens: cache_n,
    })
}
