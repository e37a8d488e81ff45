//! Model calls: the one place a call is asked for (within the token budget,
//! and in step mode approved), streamed onto the tape (request, deltas,
//! reply or error), and asked once more when its reply has no code.
//!
//! Each call is sent with the longest reply its kind is given and, for a
//! reply read as data, its JSON schema (`schemas`). A reply whose job is
//! done (its code block, or its JSON, closed: `extract::Done`) is stopped
//! there and used, so no call runs on to its token limit; a reply that
//! falls into a loop (`codeloop_llm::repetition`) is stopped while it
//! streams and not used; a call that fails still counts its tokens; and
//! replies that come back empty or looping call after call are named for
//! what they likely are. A code or tests call may give the answer's start
//! (a function's `def` line, a test function and its first `assert`:
//! `Ask::prefill`), which servers that can go on from it do
//! (`codeloop_llm::Prefilled`). How a reply streams onto the tape, is
//! stopped and is continued is `calls/stream.rs`.

use std::time::Instant;

use super::context::{Core, Stop};
use super::extract::{self, Answer};
use super::prompts::PromptError;
use super::schemas;
use super::steering::GateAnswer;
use super::tag::Tag;
use codeloop_llm::repetition;
use codeloop_llm::{ChatReply, ChatRequest, FinishReason, LlmError, Prefill, ReplySchema};
use codeloop_protocol::{ChatMessage, Role};
use codeloop_session::{
    Event, ModelErrorEvent, ModelReplyEvent, ModelRequestEvent, NoticeLevel, Purpose, State, Step,
    TapeError,
};

mod stream;

/// How the notice that the budget is spent begins (it is given once).
const BUDGET_SPENT: &str = "the session's token budget";
/// The notice that token counts are estimated (given once).
const USAGE_ESTIMATED: &str =
    "token counts are estimated (about 4 characters a token): the model does not report its usage";
/// How the notice about hollow replies begins (it is given once).
const HOLLOW_REPLIES: &str = "the model has answered";
/// Replies in a row that are empty or loop before the model is named for it.
const HOLLOW_STREAK: usize = 2;

/// The words on the tape for a reply stopped because its job was done.
pub(crate) const STOPPED_DONE: &str = "its answer was complete";

/// A model call as the engine asks it: what for, its prompt, and how its
/// reply is read (its schema, where its job is done, the answer's start).
pub(crate) struct Ask {
    pub(crate) purpose: Purpose,
    pub(crate) tag: Tag,
    pub(crate) messages: Vec<ChatMessage>,
    pub(crate) temperature: Option<f32>,
    /// The schema of a reply read as data.
    pub(crate) schema: Option<ReplySchema>,
    /// Where the reply's job is done.
    pub(crate) answer: Answer,
    /// The start of the answer, for a server that can go on from it.
    pub(crate) prefill: Option<String>,
    /// A code reply with no code is asked for once more (`call_for_code`);
    /// not when the caller falls back to another way itself.
    pub(crate) again: bool,
    /// Why this call is asked again (its step-mode pause says it), when
    /// it is not the first of its purpose since `may_ask`.
    pub(crate) again_why: Option<String>,
}

impl Ask {
    /// A call for `purpose` read as its kind is: data under its schema, or
    /// code done at its first closed block.
    pub(crate) fn new(purpose: Purpose, tag: Tag, messages: Vec<ChatMessage>) -> Ask {
        let schema = schemas::for_purpose(&purpose);
        let answer = match schema {
            Some(_) => Answer::Data,
            None => Answer::Code { want: None },
        };
        Ask {
            purpose,
            tag,
            messages,
            temperature: None,
            schema,
            answer,
            prefill: None,
            again: true,
            again_why: None,
        }
    }

    /// Asked again, for `why` (a retry or a fallback: paused before in
    /// step mode, saying so).
    pub(crate) fn asked_again(mut self, why: String) -> Ask {
        self.again_why = Some(why);
        self
    }

    /// No second ask for code when the reply has none: the caller falls
    /// back to another way of asking.
    pub(crate) fn once(mut self) -> Ask {
        self.again = false;
        self
    }

    pub(crate) fn with_temperature(mut self, temperature: Option<f32>) -> Ask {
        self.temperature = temperature;
        self
    }

    pub(crate) fn with_prefill(mut self, prefill: Option<String>) -> Ask {
        self.prefill = prefill;
        self
    }

    /// Read as data under `schema`.
    pub(crate) fn with_schema(mut self, schema: ReplySchema) -> Ask {
        self.schema = Some(schema);
        self.answer = Answer::Data;
        self
    }
}

impl Core {
    /// The messages of a call: the system prompt and `user`.
    pub(crate) fn messages(&self, user: String) -> Result<Vec<ChatMessage>, PromptError> {
        Ok(vec![
            ChatMessage {
                role: Role::System,
                content: self.prompts.render("system.md", ())?,
            },
            ChatMessage {
                role: Role::User,
                content: user,
            },
        ])
    }

    /// Whether a model call for `purpose` may be made now: within the token
    /// budget, and (in step mode) approved. Prompts are rendered after this,
    /// so edits and hints given while paused go into the call.
    pub(crate) async fn may_ask(&self, purpose: &Purpose) -> Result<(), Stop> {
        let budget = self.opts.token_budget;
        if budget > 0 {
            let used = self.read(|s| s.usage.prompt_tokens + s.usage.completion_tokens);
            if used >= budget {
                self.notice_once(
                    NoticeLevel::Warning,
                    BUDGET_SPENT,
                    format!("{BUDGET_SPENT} ({budget} tokens) is spent ({used} used): no more model calls"),
                )
                .await?;
                return Err(Stop::Budget);
            }
        }
        match self
            .gate(Step::ModelCall {
                purpose: purpose.clone(),
                again: None,
            })
            .await
        {
            GateAnswer::Go => {
                self.steering.approve_call(purpose);
                Ok(())
            }
            GateAnswer::Skip => Err(Stop::Skipped),
            GateAnswer::Cancel => Err(Stop::Cancelled),
        }
    }

    /// Every ask but the first since `may_ask` (a reply with no code asked
    /// once more, the tests asked the other way, a fresh start asked again)
    /// is paused before in step mode, saying why it is asked again.
    async fn may_ask_again(&self, ask: &Ask) -> Result<(), Stop> {
        if self.steering.spend_approval(&ask.purpose) {
            return Ok(());
        }
        let why = ask
            .again_why
            .clone()
            .unwrap_or_else(|| again_by_tag(&ask.tag));
        match self
            .gate(Step::ModelCall {
                purpose: ask.purpose.clone(),
                again: Some(why),
            })
            .await
        {
            GateAnswer::Go => Ok(()),
            GateAnswer::Skip => Err(Stop::Skipped),
            GateAnswer::Cancel => Err(Stop::Cancelled),
        }
    }

    /// One streamed model call, recorded: request, deltas, reply or error.
    /// Its prompt is shown first when the person asked to see it
    /// (`Command::ReviewPrompt`), and sent as they edited it.
    pub(crate) async fn call(
        &self,
        purpose: Purpose,
        tag: Tag,
        messages: Vec<ChatMessage>,
        temperature: Option<f32>,
    ) -> Result<String, Stop> {
        let mut ask = Ask::new(purpose, tag, messages);
        ask.temperature = temperature;
        self.ask(ask).await
    }

    /// One streamed model call as `ask` says, recorded (see `call`).
    pub(crate) async fn ask(&self, ask: Ask) -> Result<String, Stop> {
        self.may_ask_again(&ask).await?;
        let answer = ask.answer.clone();
        let (call_id, request) = self.request(ask).await?;
        let started = Instant::now();
        let whole = self.stream_whole(call_id, &request, &answer).await?;
        match whole.reply {
            Ok(reply) => {
                self.replied(
                    call_id,
                    &request,
                    (reply, whole.stopped, whole.continued),
                    started,
                )
                .await
            }
            // The reply looped: stopped, never continued, and not used. The
            // caller takes it as a reply with nothing in it (a plan is asked
            // for again; code is asked for once more).
            Err(LlmError::Cancelled) if whole.looped.is_some() => {
                let what = whole.looped.unwrap_or_default();
                self.record(Event::ModelError(ModelErrorEvent {
                    call_id,
                    message: what.clone(),
                    usage: Some(whole.spent),
                }))
                .await?;
                self.notice(
                    NoticeLevel::Warning,
                    format!(
                        "{what}: the reply to {} was stopped and is not used",
                        request.tag
                    ),
                )
                .await?;
                self.name_hollow_replies().await?;
                Ok(String::new())
            }
            // Only the session's cancel token ends a call this way.
            Err(LlmError::Cancelled) => {
                self.record(Event::ModelError(ModelErrorEvent {
                    call_id,
                    message: "cancelled".into(),
                    usage: Some(whole.spent),
                }))
                .await?;
                Err(Stop::Cancelled)
            }
            Err(e) => {
                self.record(Event::ModelError(ModelErrorEvent {
                    call_id,
                    message: e.to_string(),
                    usage: Some(whole.spent),
                }))
                .await?;
                self.notice(NoticeLevel::Error, format!("model call failed: {e}"))
                    .await?;
                Err(Stop::Model)
            }
        }
    }

    /// The request of a call on the tape, as it goes to the model: shown
    /// first when the person asked to see its prompt, and as they edited it.
    async fn request(&self, ask: Ask) -> Result<(u64, ChatRequest), Stop> {
        let Ask {
            purpose,
            tag,
            messages,
            temperature,
            schema,
            prefill,
            ..
        } = ask;
        let tag = tag.to_string();
        if self.read(|s| s.prompt_review.as_ref() == Some(&purpose)) {
            let step = Step::Prompt {
                purpose: purpose.clone(),
                tag: tag.clone(),
                messages: messages.clone(),
            };
            match self.gate(step).await {
                GateAnswer::Go => {}
                GateAnswer::Skip => return Err(Stop::Skipped),
                GateAnswer::Cancel => return Err(Stop::Cancelled),
            }
        }
        let request_tag = tag.clone();
        let max_tokens = schemas::reply_tokens(&purpose);
        let (_, (call_id, messages)) = self
            .tape
            .append_with(move |s| {
                let call_id = s.next_call_id();
                // The person's edit, made while paused before this prompt, is what is sent.
                let messages = match &s.prompt_edit {
                    Some(edit) if edit.purpose == purpose => edit.messages.clone(),
                    _ => messages,
                };
                let event = Event::ModelRequest(ModelRequestEvent {
                    call_id,
                    purpose,
                    tag,
                    messages: messages.clone(),
                });
                (vec![event], (call_id, messages))
            })
            .await?;
        // An answer begun inside an open code block ends at its fence.
        let prefill = prefill.map(|text| Prefill {
            stop: if text.contains("```") {
                vec!["```".to_string()]
            } else {
                Vec::new()
            },
            text,
        });
        let request = ChatRequest {
            tag: request_tag,
            max_tokens: Some(max_tokens),
            schema,
            messages,
            temperature,
            prefill,
        };
        Ok((call_id, request))
    }

    /// The reply to `request` on the tape under `call_id`, and its text,
    /// unless it is still cut off (a reply held to a schema is checked as
    /// it is).
    async fn replied(
        &self,
        call_id: u64,
        request: &ChatRequest,
        (reply, stopped, continued): (ChatReply, bool, u32),
        started: Instant,
    ) -> Result<String, Stop> {
        if reply.usage_estimated {
            self.notice_once(NoticeLevel::Info, USAGE_ESTIMATED, USAGE_ESTIMATED.into())
                .await?;
        }
        let finish_reason = (reply.finish_reason != FinishReason::Stop)
            .then(|| reply.finish_reason.as_str().to_string());
        self.record(Event::ModelReply(ModelReplyEvent {
            call_id,
            text: reply.text.clone(),
            usage: reply.usage,
            duration_ms: started.elapsed().as_millis() as u64,
            reasoning: reply.reasoning.clone(),
            finish_reason,
            usage_estimated: reply.usage_estimated,
            structured: reply.structured.map(|s| s.as_str().to_string()),
            stopped: stopped.then(|| STOPPED_DONE.to_string()),
            prefilled: reply.prefilled.map(|p| p.as_str().to_string()),
        }))
        .await?;
        if reply.text.trim().is_empty() {
            self.name_hollow_replies().await?;
        }
        if reply.is_cut_off() && request.schema.is_some() {
            self.notice(
                NoticeLevel::Warning,
                format!(
                    "the reply to {} was cut off at the token limit: it is checked as it is, not continued",
                    request.tag
                ),
            )
            .await?;
        } else if reply.is_cut_off() {
            // Half a function is never compiled.
            self.notice(
                NoticeLevel::Error,
                format!(
                    "the reply to {} was still cut off after {continued} continuation{}: it is not used. Raise the reply limit (`--max-tokens`, or `max_tokens` in the model's profile)",
                    request.tag,
                    if continued == 1 { "" } else { "s" }
                ),
            )
            .await?;
            return Err(Stop::Failed);
        }
        Ok(reply.text)
    }

    /// Replies that came back empty or looping, call after call, are named
    /// for what they likely are, with what to do (once a session).
    async fn name_hollow_replies(&self) -> Result<(), TapeError> {
        let streak = self.read(hollow_streak);
        if streak < HOLLOW_STREAK {
            return Ok(());
        }
        let model = self.model.model_name().to_string();
        self.notice_once(
            NoticeLevel::Error,
            HOLLOW_REPLIES,
            format!(
                "{HOLLOW_REPLIES} {streak} calls in a row with nothing usable (empty, or the same text over and over). \
                 That is what a base model does (one not tuned to chat), a server without the model's chat template, \
                 or a wrong model: use an instruct or chat model (\"{model}\" is the one asked for), start the server with \
                 the model's chat template (llama.cpp: --jinja; llama-cpp-python: --chat_format), or check the model name"
            ),
        )
        .await
    }

    /// A call whose reply must hold code (`want`, when named): done once the
    /// block that defines it closes, and asked once more, plainly, if it has
    /// none. The reply and the code in it.
    pub(crate) async fn call_for_code(
        &self,
        ask: Ask,
        want: Option<&str>,
    ) -> Result<(String, String), Stop> {
        let Ask {
            purpose,
            tag,
            mut messages,
            temperature,
            prefill,
            again,
            ..
        } = ask;
        let code_ask = |tag: Tag, messages: Vec<ChatMessage>, prefill: Option<String>| Ask {
            answer: Answer::Code {
                want: want.map(str::to_string),
            },
            ..Ask::new(purpose.clone(), tag, messages)
                .with_temperature(temperature)
                .with_prefill(prefill)
        };
        let reply = self
            .ask(code_ask(tag.clone(), messages.clone(), prefill))
            .await?;
        if let Some(code) = extract::extract_code(&reply, want) {
            return Ok((reply, code));
        }
        if !again {
            self.notice(
                NoticeLevel::Warning,
                format!("the reply to {tag} had no code in it"),
            )
            .await?;
            return Err(Stop::Failed);
        }
        self.notice(
            NoticeLevel::Warning,
            format!("the reply to {tag} had no code in it; asking once more"),
        )
        .await?;
        messages.push(ChatMessage {
            role: Role::Assistant,
            content: reply,
        });
        messages.push(ChatMessage {
            role: Role::User,
            content: "Your reply had no code. Reply with exactly one ```python block holding the whole code.".into(),
        });
        let retry = tag.clone().retry();
        let reply = self
            .ask(
                code_ask(retry.clone(), messages, None)
                    .asked_again(format!("the reply to {tag} had no code")),
            )
            .await?;
        match extract::extract_code(&reply, want) {
            Some(code) => Ok((reply, code)),
            None => {
                self.notice(
                    NoticeLevel::Error,
                    format!("the reply to {retry} had no code either"),
                )
                .await?;
                Err(Stop::Failed)
            }
        }
    }
}

/// Why a call tagged `tag` is asked again, when its asker did not say.
fn again_by_tag(tag: &Tag) -> String {
    match tag {
        Tag::Fresh { ask, .. } if *ask > 1 => {
            "the last fresh start wrote a version already tried".into()
        }
        Tag::Retry(inner) => format!("the reply to {inner} could not be used"),
        tag => format!("{tag}, once more"),
    }
}

/// How many of the session's last calls, in a row, came back hollow: an
/// empty reply, or one stopped for looping.
fn hollow_streak(s: &State) -> usize {
    s.calls
        .values()
        .rev()
        .filter(|c| c.done)
        .take_while(|c| match &c.error {
            Some(error) => error.starts_with(repetition::LOOP_MESSAGE),
            None => c.reply.trim().is_empty() && c.reasoning.trim().is_empty(),
        })
        .count()
}
