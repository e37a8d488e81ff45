//! A call's reply streamed onto the tape: answer pieces as deltas (in
//! pieces of `DELTA_BYTES` or `DELTA_AGE`), reasoning apart, restarts as
//! they happen; stopped once its job is done or when it falls into a
//! loop; and a reply cut off at the token limit continued into one.

use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::context::{Core, Stop};
use crate::extract::{Answer, Done};
use codeloop_llm::repetition::Repetition;
use codeloop_llm::{ChatReply, ChatRequest, Delta, LlmError, tokens};
use codeloop_protocol::{ChatMessage, Usage};
use codeloop_session::{
    Event, ModelContinuedEvent, ModelDeltaEvent, ModelReasoningEvent, ModelRestartEvent,
    NoticeLevel, TapeError,
};

/// Streamed reply text is recorded in pieces of about this size or age.
const DELTA_BYTES: usize = 256;
const DELTA_AGE: Duration = Duration::from_millis(50);
/// A reply cut off at the token limit is continued at most this many times.
pub(super) const CONTINUATIONS: u32 = 2;
/// How long a reply whose job is done may go on before it is stopped: a
/// server that ends it by itself (a schema's grammar, a stop string) says
/// its usage.
const DONE_GRACE: Duration = Duration::from_millis(300);

/// How one streamed request ended.
struct Streamed {
    reply: Result<ChatReply, LlmError>,
    /// What came before the end: the answer and the reasoning (for the
    /// count of a call that failed after streaming).
    answer: String,
    reasoning: String,
    /// The reply fell into a loop and was stopped: what repeats.
    looped: Option<String>,
    /// The reply's job was done and it was stopped there.
    stopped: bool,
}

/// A reply streamed and continued until it was whole (or could not be).
pub(super) struct Whole {
    pub(super) reply: Result<ChatReply, LlmError>,
    /// The tokens every request of it spent.
    pub(super) spent: Usage,
    /// The reply fell into a loop and was stopped: what repeats.
    pub(super) looped: Option<String>,
    /// The reply's job was done and it was stopped there.
    pub(super) stopped: bool,
    /// How many times it was continued (at most `CONTINUATIONS`).
    pub(super) continued: u32,
}

impl Core {
    /// `request` streamed under `call_id`, and a reply cut off at the token
    /// limit continued (at most `CONTINUATIONS` times) into one. A reply
    /// held to a schema is not continued: the server would hold the
    /// continuation to the schema too and start a new object. Its cut text
    /// goes back to the caller, whose check says what is wrong.
    pub(super) async fn stream_whole(
        &self,
        call_id: u64,
        request: &ChatRequest,
        answer: &Answer,
    ) -> Result<Whole, Stop> {
        let streamed = self.stream(call_id, request.clone(), answer).await?;
        let mut spent = streamed.spent(&request.messages);
        let mut looped = streamed.looped;
        let mut stopped = streamed.stopped;
        let mut reply = streamed.reply;
        let mut continued = 0;
        let data = request.schema.is_some();
        while let Ok(cut) = &reply
            && cut.is_cut_off()
            && continued < CONTINUATIONS
            && looped.is_none()
            && !data
        {
            continued += 1;
            self.record(Event::ModelContinued(ModelContinuedEvent { call_id }))
                .await?;
            self.notice(
                NoticeLevel::Warning,
                format!(
                    "the reply to {} was cut off at the model's token limit: asking it to continue where it stopped ({continued} of {CONTINUATIONS})",
                    request.tag
                ),
            )
            .await?;
            let next = request.continuation(cut);
            let streamed = self.stream(call_id, next.clone(), answer).await?;
            spent = spent + streamed.spent(&next.messages);
            looped = streamed.looped;
            stopped = streamed.stopped;
            let more = streamed.reply;
            reply = match (reply, more) {
                (Ok(mut whole), Ok(more)) => {
                    whole.extend(more);
                    Ok(whole)
                }
                // The continuation failed (its prompt, the reply so far
                // in it, may no longer fit the context window): the reply
                // is what came, cut, and said so; the call did not fail.
                (Ok(whole), Err(e)) => {
                    self.notice(
                        NoticeLevel::Warning,
                        format!(
                            "the continuation of the reply to {} failed ({e}): the reply is kept as it was cut",
                            request.tag
                        ),
                    )
                    .await?;
                    reply = Ok(whole);
                    break;
                }
                (Err(e), _) => Err(e),
            };
        }
        Ok(Whole {
            reply,
            spent,
            looped,
            stopped,
            continued,
        })
    }

    /// Stream one request onto the tape under `call_id`: answer pieces as
    /// deltas, reasoning apart, restarts as they happen. Ends early when the
    /// session is cancelled, and when the reply falls into a loop.
    async fn stream(
        &self,
        call_id: u64,
        request: ChatRequest,
        job: &Answer,
    ) -> Result<Streamed, TapeError> {
        let (tx, mut rx) = mpsc::channel::<Delta>(256);
        let looping = CancellationToken::new();
        let finished = CancellationToken::new();
        let messages = request.messages.clone();
        let forward = async {
            let mut answer = String::new();
            let mut reasoning = String::new();
            let mut all_answer = String::new();
            let mut all_reasoning = String::new();
            let mut watch = Repetition::new();
            let mut done = Done::new(job.clone());
            let mut looped: Option<String> = None;
            let mut complete = false;
            let mut began = (None, None);
            let mut since = Instant::now();
            while let Some(delta) = rx.recv().await {
                match delta {
                    Delta::Content(piece) => {
                        if complete || looped.is_some() {
                            continue; // stopped: what still comes is not used
                        }
                        all_answer.push_str(&piece);
                        answer.push_str(&piece);
                        if done.push(&piece) {
                            complete = true;
                            finished.cancel();
                        } else if let Some(found) = watch.push(&piece) {
                            looped = Some(found.describe());
                            looping.cancel();
                        }
                    }
                    Delta::Reasoning(piece) => {
                        all_reasoning.push_str(&piece);
                        reasoning.push_str(&piece);
                    }
                    Delta::Restart(reason) => {
                        answer.clear();
                        reasoning.clear();
                        all_answer.clear();
                        all_reasoning.clear();
                        watch.reset();
                        done.reset();
                        self.record(Event::ModelRestart(ModelRestartEvent { call_id, reason }))
                            .await?;
                        continue;
                    }
                    // The call waits for the server's turn (or keeps it
                    // within this process): said as a notice.
                    Delta::Status(words) => {
                        self.notice(NoticeLevel::Info, words).await?;
                        continue;
                    }
                    Delta::Began {
                        structured,
                        prefilled,
                    } => {
                        began = (structured, prefilled);
                        continue;
                    }
                }
                if answer.len() + reasoning.len() >= DELTA_BYTES || since.elapsed() >= DELTA_AGE {
                    self.flush_deltas(call_id, &mut answer, &mut reasoning)
                        .await?;
                    since = Instant::now();
                }
            }
            self.flush_deltas(call_id, &mut answer, &mut reasoning)
                .await?;
            // A reply whose job is done ends where it did.
            if let Some(end) = done.end().filter(|_| complete) {
                all_answer.truncate(end);
            }
            Ok::<_, TapeError>((all_answer, all_reasoning, looped, complete, began))
        };
        let model = self.model.clone();
        let stop_looping = looping.clone();
        let stop_finished = finished.clone();
        let ask = async move {
            tokio::select! {
                r = model.stream(request, tx) => r,
                _ = self.cancel.cancelled() => Err(LlmError::Cancelled),
                _ = stop_looping.cancelled() => Err(LlmError::Cancelled),
                // A reply whose job is done: the server may end it on its
                // own at once (a schema's grammar does), with its usage.
                _ = async {
                    stop_finished.cancelled().await;
                    tokio::time::sleep(DONE_GRACE).await;
                } => Err(LlmError::Cancelled),
            }
        };
        let (reply, forwarded) = tokio::join!(ask, forward);
        let (answer, reasoning, looped, complete, (structured, prefilled)) = forwarded?;
        // Stopped once its job was done: the reply is what came, whole. The
        // server said nothing of its usage: estimated.
        // A reply that ran on within the grace keeps only what came before.
        let (reply, stopped) = match reply {
            Err(LlmError::Cancelled) if complete && !self.cancel.is_cancelled() => (
                Ok(ChatReply {
                    usage: Some(tokens::estimate_usage(&messages, &answer, &reasoning)),
                    usage_estimated: true,
                    text: answer.clone(),
                    reasoning: reasoning.clone(),
                    structured,
                    prefilled,
                    ..ChatReply::default()
                }),
                true,
            ),
            Ok(mut whole) if complete && whole.text != answer => {
                whole.text = answer.clone();
                (Ok(whole), true)
            }
            other => (other, false),
        };
        Ok(Streamed {
            reply,
            answer,
            reasoning,
            looped,
            stopped,
        })
    }

    async fn flush_deltas(
        &self,
        call_id: u64,
        answer: &mut String,
        reasoning: &mut String,
    ) -> Result<(), TapeError> {
        if !reasoning.is_empty() {
            let text = std::mem::take(reasoning);
            self.record(Event::ModelReasoning(ModelReasoningEvent { call_id, text }))
                .await?;
        }
        if !answer.is_empty() {
            let text = std::mem::take(answer);
            self.record(Event::ModelDelta(ModelDeltaEvent { call_id, text }))
                .await?;
        }
        Ok(())
    }
}

impl Streamed {
    /// The tokens the request spent: the reply's usage, else an estimate of
    /// the prompt and what streamed.
    fn spent(&self, messages: &[ChatMessage]) -> Usage {
        match &self.reply {
            Ok(ChatReply {
                usage: Some(usage), ..
            }) => *usage,
            _ => tokens::estimate_usage(messages, &self.answer, &self.reasoning),
        }
    }
}
