//! A model that answers from recorded replies: the offline demos and tests.
//!
//! Two input formats, one reply per line (JSON Lines):
//! - a replies file: `{"tag": "plan", "text": "...", "usage": {"prompt_tokens": 12,
//!   "completion_tokens": 34}}` (`usage` optional);
//! - a codeloop tape: its `model_request` records (`call_id`, `tag`) paired
//!   with their `model_reply` records (`call_id`, `text`, `usage`). Requests
//!   that got no reply (an error, a tape cut off) are skipped, so a recorded
//!   session replays as a script. Read as plain JSON: `llm` knows no session types.
//!
//! Both may also hold the reply's `reasoning` (text) and `finish_reason`
//! (`"length"` replays a reply cut off at the token limit); inline `<think>`
//! blocks in a reply's text are split off as reasoning, as from a server.
//!
//! A tape records each request's prompt (its messages), and a tape used as
//! a script answers by the prompt: the first unused reply recorded for the
//! same messages (the same tag first), whatever the order asked. A prompt
//! with no recorded answer is an error naming the call and showing how it
//! differs from the nearest recorded prompt (`prompt.rs`). A replies file
//! (no prompts) answers by tag: the next unused reply with exactly that tag.

mod prompt;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use super::reasoning::split_reasoning;
use super::{
    ChatFuture, ChatModel, ChatReply, ChatRequest, Delta, FinishReason, LlmError, Usage, tokens,
};
use codeloop_protocol::ChatMessage;

/// How fast a scripted reply streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    /// Characters in one delta (at least 1).
    pub chars_per_chunk: usize,
    /// Pause between two deltas; zero streams as fast as the receiver takes them.
    pub delay: Duration,
}

impl Pacing {
    /// No pauses (tests, headless runs that want speed). Still several deltas.
    pub fn instant() -> Pacing {
        Pacing {
            chars_per_chunk: 32,
            delay: Duration::ZERO,
        }
    }

    /// A pace a person can follow on screen: about 400 characters a second.
    pub fn demo() -> Pacing {
        Pacing::chars_per_second(400)
    }

    /// About `rate` characters a second, in small deltas; 0 is `instant()`.
    pub fn chars_per_second(rate: u32) -> Pacing {
        if rate == 0 {
            return Pacing::instant();
        }
        // Small chunks (a timer tick is ~1 ms), so the text flows rather than jumps.
        let chars_per_chunk = (rate as usize / 100).max(1);
        Pacing {
            chars_per_chunk,
            delay: Duration::from_secs_f64(chars_per_chunk as f64 / rate as f64),
        }
    }
}

/// One recorded reply.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedReply {
    pub tag: String,
    pub text: String,
    pub usage: Option<Usage>,
}

/// A reply with what only some scripts record beside it.
#[derive(Debug, Clone, PartialEq)]
struct Recorded {
    reply: ScriptedReply,
    /// Reasoning recorded apart from the text (a tape's `reasoning`).
    reasoning: String,
    finish_reason: FinishReason,
    /// The messages it answered (a tape's `model_request`); None in a replies file.
    prompt: Option<Vec<ChatMessage>>,
}

impl Recorded {
    fn new(tag: &str, text: &str) -> Recorded {
        Recorded::from(ScriptedReply {
            tag: tag.to_string(),
            text: text.to_string(),
            usage: None,
        })
    }
}

impl From<ScriptedReply> for Recorded {
    fn from(reply: ScriptedReply) -> Recorded {
        Recorded {
            reply,
            reasoning: String::new(),
            finish_reason: FinishReason::Stop,
            prompt: None,
        }
    }
}

#[derive(Debug, Default)]
struct Script {
    /// Every reply in script order; a used one is None.
    replies: Vec<Option<Recorded>>,
    /// Every tag, in order of first appearance, with its number of replies.
    tags: Vec<(String, usize)>,
    /// Every recorded prompt, used or not, with its tag (for a miss's diff).
    prompts: Vec<(String, Vec<ChatMessage>)>,
}

/// Answers requests from a script of recorded replies.
#[derive(Debug)]
pub struct ScriptedModel {
    provider: &'static str,
    name: String,
    endpoint: String,
    pacing: Pacing,
    script: Mutex<Script>,
}

impl ScriptedModel {
    /// A replies file or a tape (provider "scripted").
    pub fn from_file(path: &Path, pacing: Pacing) -> Result<ScriptedModel, LlmError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| LlmError::Script {
            path: shown.clone(),
            message: e.to_string(),
        })?;
        let replies = parse_recorded(&text, &shown)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| shown.clone());
        Ok(ScriptedModel::new("scripted", name, shown, replies, pacing))
    }

    /// A bundled demo's authored replies (provider "demo").
    pub fn demo(name: &str, replies: &str, pacing: Pacing) -> Result<ScriptedModel, LlmError> {
        let source = format!("demo {name}");
        let replies = parse_recorded(replies, &source)?;
        Ok(ScriptedModel::new(
            "demo",
            format!("demo:{name}"),
            format!("bundled demo \"{name}\" (authored replies, offline)"),
            replies,
            pacing,
        ))
    }

    /// Replies given directly (provider "scripted").
    pub fn from_replies(
        name: impl Into<String>,
        replies: Vec<ScriptedReply>,
        pacing: Pacing,
    ) -> ScriptedModel {
        let name = name.into();
        let replies = replies.into_iter().map(Recorded::from).collect();
        ScriptedModel::new("scripted", name.clone(), name, replies, pacing)
    }

    fn new(
        provider: &'static str,
        name: String,
        endpoint: String,
        replies: Vec<Recorded>,
        pacing: Pacing,
    ) -> ScriptedModel {
        let mut script = Script::default();
        for reply in replies {
            let tag = &reply.reply.tag;
            match script.tags.iter_mut().find(|(t, _)| t == tag) {
                Some((_, count)) => *count += 1,
                None => script.tags.push((tag.clone(), 1)),
            }
            if let Some(prompt) = &reply.prompt {
                script.prompts.push((tag.clone(), prompt.clone()));
            }
            script.replies.push(Some(reply));
        }
        ScriptedModel {
            provider,
            name,
            endpoint,
            pacing: Pacing {
                chars_per_chunk: pacing.chars_per_chunk.max(1),
                delay: pacing.delay,
            },
            script: Mutex::new(script),
        }
    }

    /// Replies not used yet.
    pub fn remaining(&self) -> usize {
        self.lock().replies.iter().flatten().count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        // The script holds plain data; a panic elsewhere cannot leave it half-changed.
        self.script.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The answer to `request`: a reply recorded for the same prompt (the
    /// same tag first), else one recorded under the same tag for a prompt
    /// that differs only in its runtime values (see
    /// `prompt::same_but_values`), else a reply without a prompt with the
    /// same tag.
    fn take(&self, request: &ChatRequest) -> Result<Recorded, LlmError> {
        let tag = request.tag.as_str();
        let mut script = self.lock();
        let same_prompt = |r: &Recorded| r.prompt.as_deref() == Some(request.messages.as_slice());
        let same_but_values = |r: &Recorded| {
            r.reply.tag == tag
                && r.prompt
                    .as_deref()
                    .is_some_and(|p| prompt::same_but_values(p, &request.messages))
        };
        let picks: [&dyn Fn(&Recorded) -> bool; 4] = [
            &|r| same_prompt(r) && r.reply.tag == tag,
            &|r| same_prompt(r),
            &same_but_values,
            &|r| r.prompt.is_none() && r.reply.tag == tag,
        ];
        for pick in picks {
            let found = script
                .replies
                .iter()
                .position(|r| r.as_ref().is_some_and(pick));
            if let Some(reply) = found.and_then(|i| script.replies[i].take()) {
                return Ok(reply);
            }
        }
        let recorded_prompt = script
            .prompts
            .iter()
            .any(|(_, p)| p.as_slice() == request.messages.as_slice());
        if recorded_prompt {
            return Err(LlmError::ScriptExhausted(format!(
                "tag \"{tag}\" in {}: every answer recorded for its prompt is used",
                self.endpoint
            )));
        }
        if !script.prompts.is_empty() {
            return Err(LlmError::ScriptMiss(format!(
                "in {}, {}",
                self.endpoint,
                prompt::miss(tag, &request.messages, &script.prompts)
            )));
        }
        let detail = match script.tags.iter().find(|(t, _)| t == tag) {
            Some((_, count)) => format!("all {count} replies tagged so are used"),
            None if script.tags.is_empty() => "the script holds no replies".to_string(),
            None => {
                const SHOWN: usize = 20;
                let mut list: Vec<String> = script
                    .tags
                    .iter()
                    .take(SHOWN)
                    .map(|(t, n)| format!("\"{t}\" ({n})"))
                    .collect();
                if script.tags.len() > SHOWN {
                    list.push(format!("and {} more", script.tags.len() - SHOWN));
                }
                format!(
                    "no reply is tagged so; the script's tags are {}",
                    list.join(", ")
                )
            }
        };
        Err(LlmError::ScriptExhausted(format!(
            "tag \"{tag}\" in {}: {detail}",
            self.endpoint
        )))
    }

    async fn chat(
        &self,
        request: ChatRequest,
        deltas: mpsc::Sender<Delta>,
    ) -> Result<ChatReply, LlmError> {
        let recorded = self.take(&request)?;
        let (text, inline) = split_reasoning(&recorded.reply.text);
        let reasoning = recorded.reasoning + &inline;
        let mut first = true;
        for (part, is_reasoning) in [(&reasoning, true), (&text, false)] {
            let chars: Vec<char> = part.chars().collect();
            for piece in chars.chunks(self.pacing.chars_per_chunk) {
                if !first {
                    if self.pacing.delay.is_zero() {
                        tokio::task::yield_now().await;
                    } else {
                        tokio::time::sleep(self.pacing.delay).await;
                    }
                }
                first = false;
                // A closed receiver is not an error: nobody is watching the stream.
                let piece: String = piece.iter().collect();
                let delta = if is_reasoning {
                    Delta::Reasoning(piece)
                } else {
                    Delta::Content(piece)
                };
                let _ = deltas.send(delta).await;
            }
        }
        let (usage, usage_estimated) = match recorded.reply.usage {
            Some(usage) => (usage, false),
            None => (
                tokens::estimate_usage(&request.messages, &text, &reasoning),
                true,
            ),
        };
        Ok(ChatReply {
            text,
            reasoning,
            finish_reason: recorded.finish_reason,
            usage: Some(usage),
            usage_estimated,
            structured: None,
            prefilled: None,
        })
    }
}

impl ChatModel for ScriptedModel {
    fn stream<'a>(&'a self, request: ChatRequest, deltas: mpsc::Sender<Delta>) -> ChatFuture<'a> {
        Box::pin(self.chat(request, deltas))
    }

    fn can_answer(&self, tag: &str) -> bool {
        self.lock()
            .replies
            .iter()
            .flatten()
            .any(|r| r.reply.tag == tag)
    }

    fn provider(&self) -> &str {
        self.provider
    }

    fn model_name(&self) -> &str {
        &self.name
    }

    fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

/// Parse a replies file or a tape (see the module comment). `source` names
/// the input in error messages.
pub fn parse_script(text: &str, source: &str) -> Result<Vec<ScriptedReply>, LlmError> {
    Ok(parse_recorded(text, source)?
        .into_iter()
        .map(|r| r.reply)
        .collect())
}

fn parse_recorded(text: &str, source: &str) -> Result<Vec<Recorded>, LlmError> {
    let lines: Vec<&str> = text.lines().collect();
    let complete = text.ends_with('\n');
    let mut read = Reading::default();
    for (index, line) in lines.iter().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let at = |message: String| LlmError::Script {
            path: source.to_string(),
            message: format!("line {}: {message}", index + 1),
        };
        let value: Value = match serde_json::from_str(line) {
            Ok(value) => value,
            // A tape's last line may have been cut off mid-write: what came
            // before it still stands.
            Err(_) if read.is_tape && index + 1 == lines.len() && !complete => break,
            Err(e) => return Err(at(format!("not JSON ({e})"))),
        };
        match value.get("type").and_then(Value::as_str) {
            Some(kind) => read.tape_event(index, kind, &value),
            None => read.reply_line(index, &value),
        }
        .map_err(at)?;
    }
    read.into_replies(source)
}

/// What a replies file or a tape holds, as it is read line by line: the
/// replies (a replies file's lines, a tape's requests) by where they stand.
#[derive(Default)]
struct Reading {
    is_tape: bool,
    ordered: Vec<(usize, Recorded)>,
    /// A tape's requests: (line index, call id, tag, messages).
    requests: Vec<(usize, u64, String, Option<Vec<ChatMessage>>)>,
    /// A tape's replies by call id.
    tape_replies: HashMap<u64, Recorded>,
}

impl Reading {
    /// One tape event: a model request or reply (others are not replies).
    fn tape_event(&mut self, index: usize, kind: &str, value: &Value) -> Result<(), String> {
        self.is_tape = true;
        match kind {
            "model_request" => {
                let call_id =
                    call_id(value).ok_or("a model_request without a call_id".to_string())?;
                let tag = value
                    .get("tag")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let messages =
                    match value.get("messages") {
                        None | Some(Value::Null) => None,
                        Some(m) => Some(serde_json::from_value(m.clone()).map_err(|e| {
                            format!("a model_request's messages are unreadable ({e})")
                        })?),
                    };
                self.requests.push((index, call_id, tag, messages));
            }
            "model_reply" => {
                let call_id =
                    call_id(value).ok_or("a model_reply without a call_id".to_string())?;
                let text = value
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or("a model_reply without its text".to_string())?;
                let mut reply = Recorded::new("", text);
                recorded_fields(value, &mut reply)?;
                self.tape_replies.insert(call_id, reply);
            }
            _ => {}
        }
        Ok(())
    }

    /// One line of a replies file: a tag and its text.
    fn reply_line(&mut self, index: usize, value: &Value) -> Result<(), String> {
        let tag = value.get("tag").and_then(Value::as_str).ok_or(
            "a reply needs a \"tag\" (string), e.g. {\"tag\": \"plan\", \"text\": \"...\"}"
                .to_string(),
        )?;
        let text = value
            .get("text")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("the reply tagged \"{tag}\" has no \"text\" (string)"))?;
        let mut reply = Recorded::new(tag, text);
        recorded_fields(value, &mut reply)?;
        self.ordered.push((index, reply));
        Ok(())
    }

    /// The replies in the order they stand (a tape's at its requests, with
    /// their tags and prompts); none is an error.
    fn into_replies(mut self, source: &str) -> Result<Vec<Recorded>, LlmError> {
        for (index, call_id, tag, messages) in self.requests {
            if let Some(mut recorded) = self.tape_replies.remove(&call_id) {
                recorded.reply.tag = tag;
                recorded.prompt = messages;
                self.ordered.push((index, recorded));
            }
        }
        if self.ordered.is_empty() {
            return Err(LlmError::Script {
                path: source.to_string(),
                message: if self.is_tape {
                    "the tape holds no model replies".into()
                } else {
                    "it holds no replies (one JSON object a line: {\"tag\": ..., \"text\": ...})"
                        .into()
                },
            });
        }
        self.ordered.sort_by_key(|(index, _)| *index);
        Ok(self.ordered.into_iter().map(|(_, reply)| reply).collect())
    }
}

fn call_id(value: &Value) -> Option<u64> {
    value.get("call_id").and_then(Value::as_u64)
}

/// The optional fields of a recorded reply: `usage`, `reasoning`, `finish_reason`.
fn recorded_fields(value: &Value, reply: &mut Recorded) -> Result<(), String> {
    reply.reply.usage = usage_field(value)?;
    if let Some(reasoning) = value.get("reasoning").and_then(Value::as_str) {
        reply.reasoning = reasoning.to_string();
    }
    if let Some(reason) = value.get("finish_reason").and_then(Value::as_str) {
        reply.finish_reason = FinishReason::from_wire(reason);
    }
    Ok(())
}

/// An optional `usage` object; a malformed one is an error, not ignored.
fn usage_field(value: &Value) -> Result<Option<Usage>, String> {
    match value.get("usage") {
        None | Some(Value::Null) => Ok(None),
        Some(usage) => {
            let field = |name: &str| {
                usage.get(name).and_then(Value::as_u64).ok_or_else(|| {
                    format!(
                        "\"usage\" needs whole numbers \"prompt_tokens\" and \"completion_tokens\", got {usage}"
                    )
                })
            };
            Ok(Some(Usage::new(
                field("prompt_tokens")?,
                field("completion_tokens")?,
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacing_from_a_rate() {
        let p = Pacing::chars_per_second(400);
        assert_eq!(p.chars_per_chunk, 4);
        assert_eq!(p.delay, Duration::from_millis(10));
        assert_eq!(Pacing::chars_per_second(0), Pacing::instant());
        assert_eq!(Pacing::chars_per_second(30).chars_per_chunk, 1);
    }

    #[test]
    fn bad_lines_are_named() {
        let err = parse_script(
            "{\"tag\":\"plan\",\"text\":\"x\"}\n{\"text\":\"y\"}\n",
            "r.jsonl",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("r.jsonl") && err.contains("line 2") && err.contains("tag"),
            "{err}"
        );
        let err = parse_script(
            "{\"tag\":\"plan\",\"text\":\"x\",\"usage\":{\"prompt_tokens\":1}}\n",
            "r",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("completion_tokens"), "{err}");
        // A replies file's bad last line is an error even without a newline.
        assert!(parse_script("{\"tag\":\"plan\",\"text\":\"x\"}\n{\"tag\":", "r").is_err());
        assert!(
            parse_script("\n\n", "r")
                .unwrap_err()
                .to_string()
                .contains("no replies")
        );
    }
}
