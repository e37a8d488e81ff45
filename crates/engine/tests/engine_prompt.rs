//! The person sees a model call's prompt before it is sent, and edits it:
//! in step mode, `ReviewPrompt` while paused before a call makes the engine
//! pause again once the prompt is written (`Step::Prompt`); `EditPrompt`
//! then replaces it, and the edited prompt is what reaches the model (a real
//! OpenAI-style server on loopback), what the tape keeps, and what the
//! state marks as edited.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-engine-child");

use std::sync::Arc;
use std::time::Duration;

use codeloop_engine::{self as engine, EngineOptions};
use codeloop_llm::openai::{OpenAiClient, OpenAiOptions};
use codeloop_protocol::{ChatMessage, Role};
use codeloop_session::*;
use codeloop_testkit::engine as engine_kit;
use codeloop_testkit::fault_server;
use fault_server::*;

const PLAN: &str = "```json\n{\"functions\": [{\"name\": \"double\", \"purpose\": \"twice x\", \"inputs\": \"x: int\", \"output\": \"int\", \"depends_on\": []}]}\n```";
const MARKER: &str = "EDITED BY THE PERSON: plan one function called double.";

struct Run {
    records: Vec<Record>,
    server: FaultServer,
    /// The prompt the engine paused before, as written.
    shown: Vec<ChatMessage>,
}

/// A step-mode session on a loopback server; at the plan call the person
/// asks to see the prompt, then answers the `Step::Prompt` pause with
/// `at_prompt`; the session is cancelled once the plan call ended.
async fn session(at_prompt: impl Fn(&[ChatMessage]) -> Vec<Command>) -> Run {
    run_with(
        vec![Answer::Sse(good_conversation(PLAN))],
        0,
        true,
        at_prompt,
    )
    .await
}

/// A session whose plan call is answered by `answers` in turn.
async fn run_with(
    answers: Vec<Answer>,
    retries: u32,
    step_mode: bool,
    at_prompt: impl Fn(&[ChatMessage]) -> Vec<Command>,
) -> Run {
    let server = FaultServer::start(PLAN).await;
    server.queue(answers);
    let mut o = OpenAiOptions::new(&server.base_url, "qwen2.5-coder:7b");
    o.request_timeout = Duration::from_secs(10);
    o.connect_timeout = Duration::from_secs(2);
    o.backoff_base = Duration::from_millis(10);
    o.retries = retries;
    let dir = tempfile::tempdir().unwrap();
    let options = EngineOptions {
        step_mode,
        ..EngineOptions::default()
    };
    let model = Arc::new(OpenAiClient::new(o).unwrap());
    let setup = engine_kit::setup(
        "double a number",
        model,
        options,
        dir.path().join("session"),
        HELPER,
    );
    let mut handle = engine::start(setup).unwrap();
    let mut records = Vec::new();
    let mut shown = Vec::new();
    while let Some(r) = handle.events.recv().await {
        // Only the plan call is looked at; any pause after it cancels the
        // session (which may have ended by then: sends may find it gone).
        let command = match &r.event {
            Event::Paused(PausedEvent {
                step:
                    Step::ModelCall {
                        purpose: Purpose::Plan,
                        again: None,
                    },
            }) => vec![Command::ReviewPrompt],
            Event::Paused(PausedEvent {
                step: Step::Prompt { messages, .. },
            }) if shown.is_empty() => {
                shown = messages.clone();
                at_prompt(messages)
            }
            Event::Paused(_) | Event::ModelReply(_) | Event::ModelError(_) => {
                vec![Command::Cancel]
            }
            _ => Vec::new(),
        };
        for c in command {
            let _ = handle.commands.send(c).await;
        }
        records.push(r);
    }
    let _ = handle.done.await;
    Run {
        records,
        server,
        shown,
    }
}

fn edited(messages: &[ChatMessage]) -> Vec<ChatMessage> {
    let mut m = messages.to_vec();
    if let Some(user) = m.iter_mut().find(|m| m.role == Role::User) {
        user.content = format!("{MARKER}\n{}", user.content);
    }
    m
}

#[tokio::test]
async fn an_edited_prompt_is_what_the_model_receives_and_the_tape_keeps() {
    let run = session(|messages| {
        vec![
            Command::EditPrompt {
                messages: edited(messages),
            },
            Command::Approve,
        ]
    })
    .await;
    // The pause showed the prompt as written: the task is in it, the edit not yet.
    assert!(
        run.shown
            .iter()
            .any(|m| m.content.contains("double a number")),
        "{:?}",
        run.shown
    );
    assert!(!run.shown.iter().any(|m| m.content.contains(MARKER)));

    // The server received the edited prompt, once.
    let chats: Vec<_> = run
        .server
        .seen()
        .into_iter()
        .filter(|s| s.path == "/v1/chat/completions")
        .collect();
    assert_eq!(chats.len(), 1);
    let sent = chats[0].json();
    let user = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(user.starts_with(MARKER), "{user}");
    assert!(user.contains("double a number"), "{user}");

    // The tape: the person's edit (with its text), then the request as sent.
    let edit_at = run
        .records
        .iter()
        .position(|r| matches!(&r.event, Event::Steer(SteerEvent { command: Command::EditPrompt { messages } }) if messages[1].content.starts_with(MARKER)))
        .expect("the edit is on the tape");
    let request_at = run
        .records
        .iter()
        .position(|r| matches!(&r.event, Event::ModelRequest(ModelRequestEvent { messages, .. }) if messages[1].content.starts_with(MARKER)))
        .expect("the request holds the edited prompt");
    assert!(edit_at < request_at);

    // The state (what review and replay show) marks the call as edited.
    let state = State::from_records(&run.records);
    let call = state.calls.values().next().unwrap();
    assert!(call.edited);
    assert_eq!(call.tag, "plan");
    assert!(call.duration_ms.is_some());
    assert_eq!(state.prompt_edit, None);
}

#[tokio::test]
async fn a_prompt_approved_unedited_is_sent_as_written_and_a_skipped_one_not_at_all() {
    let run = session(|_| vec![Command::Approve]).await;
    let state = State::from_records(&run.records);
    let call = state.calls.values().next().unwrap();
    assert!(!call.edited);
    assert_eq!(call.messages, run.shown);
    assert_eq!(run.server.chat_requests(), 1);

    let run = session(|_| vec![Command::Skip]).await;
    assert!(!run.shown.is_empty());
    assert_eq!(run.server.chat_requests(), 0);
    assert!(State::from_records(&run.records).calls.is_empty());
}

/// The plan in two pieces: the first ends at the token limit.
fn in_two_pieces() -> Vec<Answer> {
    let (first, second) = PLAN.split_at(40);
    let role = event(
        serde_json::json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
    );
    vec![
        Answer::Sse(vec![
            role.clone(),
            content(first),
            finish("length"),
            usage(30, 10),
            done(),
        ]),
        Answer::Sse(vec![
            role,
            content(second),
            finish("stop"),
            usage(40, 30),
            done(),
        ]),
    ]
}

#[tokio::test]
async fn a_plan_cut_at_the_token_limit_is_checked_as_it_is_not_continued() {
    // A plan is held to its schema: a continuation would be held to it too
    // and start a new object, so a cut plan is checked as it is, and the
    // plan check asks again with what is wrong (code cut so is continued:
    // run_messy_replies.rs). The session is cancelled after the first reply.
    let run = run_with(in_two_pieces(), 0, false, |_| Vec::new()).await;
    let state = State::from_records(&run.records);
    assert!(
        run.records
            .iter()
            .all(|r| r.event.kind() != "model_continued"),
        "a plan was continued"
    );
    assert_eq!(state.calls[&1].continuations, 0);
    // Every request the server saw was a call of its own (the plan asked
    // again after its check may be one, if it went out before the cancel).
    assert!(
        run.server.chat_requests() <= state.calls.len(),
        "{} requests for {} calls",
        run.server.chat_requests(),
        state.calls.len()
    );
    assert_eq!(state.calls[&1].finish_reason.as_deref(), Some("length"));
    let notices: Vec<&str> = run
        .records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Notice(NoticeEvent { message, .. }) => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        notices
            .iter()
            .any(|m| m.contains("cut off at the token limit: it is checked as it is")),
        "{notices:?}"
    );
}

#[tokio::test]
async fn a_stream_broken_mid_reply_is_a_restart_with_its_reason() {
    let role = event(
        serde_json::json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
    );
    let answers = vec![
        Answer::SseCut {
            events: vec![role, content("```json\n{\"functions\": [")],
            reset: false,
        },
        Answer::Sse(good_conversation(PLAN)),
    ];
    let run = run_with(answers, 2, false, |_| Vec::new()).await;
    let state = State::from_records(&run.records);
    let call = &state.calls[&1];
    assert_eq!(call.restarts.len(), 1, "{:?}", call.restarts);
    assert!(
        call.restarts[0].contains("asking the model again"),
        "{:?}",
        call.restarts
    );
    // The reply, whole once its JSON closed (the fence after it is not kept).
    assert_eq!(call.reply, PLAN[..=PLAN.rfind('}').unwrap()]);
    assert_eq!(call.stopped.as_deref(), Some("its answer was complete"));
    assert_eq!(call.continuations, 0);
}

#[test]
fn a_prompt_edit_left_by_a_stopped_segment_is_not_sent_by_the_next() {
    let plan = Purpose::Plan;
    let events = vec![
        Event::Paused(PausedEvent {
            step: Step::ModelCall {
                purpose: plan.clone(),
                again: None,
            },
        }),
        Event::Steer(SteerEvent {
            command: Command::ReviewPrompt,
        }),
        Event::Paused(PausedEvent {
            step: Step::Prompt {
                purpose: plan,
                tag: "plan".into(),
                messages: vec![ChatMessage::user("written")],
            },
        }),
        Event::Steer(SteerEvent {
            command: Command::EditPrompt {
                messages: vec![ChatMessage::user("edited")],
            },
        }),
    ];
    let mut state = State::default();
    for (i, event) in events.into_iter().enumerate() {
        state.apply(&Record {
            seq: i as u64 + 1,
            t_ms: 0,
            event,
        });
    }
    assert!(state.prompt_review.is_some());
    assert!(state.prompt_edit.is_some());
    state.apply(&Record {
        seq: 10,
        t_ms: 0,
        event: Event::Resumed(ResumedEvent {
            from_seq: 4,
            after: "killed".into(),
            config: ConfigSummary::default(),
            token_budget: 0,
            started_at: String::new(),
        }),
    });
    assert_eq!(state.prompt_review, None);
    assert_eq!(state.prompt_edit, None);
}

#[test]
fn an_edit_when_no_prompt_waits_changes_nothing() {
    let mut state = State::default();
    let edit = Record {
        seq: 1,
        t_ms: 0,
        event: Event::Steer(SteerEvent {
            command: Command::EditPrompt {
                messages: vec![ChatMessage::user("stray")],
            },
        }),
    };
    state.apply(&edit);
    assert_eq!(state.prompt_edit, None);
}

/// An edit holds for the call it was made for and for its retries (issue
/// 21): the plan asked again after an unusable reply goes out as edited.
#[tokio::test]
async fn an_edited_plan_prompt_holds_for_the_plan_asked_again() {
    let server = FaultServer::start(PLAN).await;
    server.queue(vec![
        Answer::Sse(good_conversation("I would write a function that doubles.")),
        Answer::Sse(good_conversation(PLAN)),
    ]);
    let mut o = OpenAiOptions::new(&server.base_url, "qwen2.5-coder:7b");
    o.request_timeout = Duration::from_secs(10);
    o.retries = 0;
    let dir = tempfile::tempdir().unwrap();
    let options = EngineOptions {
        step_mode: true,
        ..EngineOptions::default()
    };
    let model = Arc::new(OpenAiClient::new(o).unwrap());
    let setup = engine_kit::setup(
        "double a number",
        model,
        options,
        dir.path().join("session"),
        HELPER,
    );
    let mut handle = engine::start(setup).unwrap();
    let mut records = Vec::new();
    let mut reviewed = false;
    while let Some(r) = handle.events.recv().await {
        let command = match &r.event {
            Event::Paused(PausedEvent {
                step:
                    Step::ModelCall {
                        purpose: Purpose::Plan,
                        again: None,
                    },
            }) if !reviewed => {
                reviewed = true;
                vec![Command::ReviewPrompt]
            }
            Event::Paused(PausedEvent {
                step: Step::Prompt { messages, .. },
            }) => vec![
                Command::EditPrompt {
                    messages: edited(messages),
                },
                Command::Approve,
            ],
            Event::Paused(PausedEvent {
                step:
                    Step::ModelCall {
                        purpose: Purpose::Plan,
                        again: None,
                    },
            }) => vec![Command::Approve],
            Event::Plan(_) | Event::Paused(_) => vec![Command::Cancel],
            _ => Vec::new(),
        };
        for c in command {
            let _ = handle.commands.send(c).await;
        }
        records.push(r);
    }
    let _ = handle.done.await;
    let requests: Vec<(&str, &Vec<ChatMessage>)> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ModelRequest(ModelRequestEvent { tag, messages, .. }) => {
                Some((tag.as_str(), messages))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        requests.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
        ["plan", "plan/2"]
    );
    for (tag, messages) in &requests {
        assert!(
            messages[1].content.starts_with(MARKER),
            "{tag} went out unedited: {}",
            messages[1].content
        );
    }
    // The inspector marks both as edited; the edit is spent once the plan came.
    let state = State::from_records(&records);
    assert!(state.calls.values().all(|c| c.edited));
    assert!(!state.specs.is_empty());
    assert_eq!(state.prompt_edit, None);
}
