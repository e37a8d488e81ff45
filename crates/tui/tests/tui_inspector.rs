//! The model-call inspector (`m`): every call's prompt by role, its raw
//! reply, its reasoning apart, tokens (estimated or not), finish reason,
//! time, restarts and continuations; `[` / `]` between calls; live, the
//! call being streamed grows, and in step mode the prompt the engine is
//! paused before is edited and sent as edited.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop_protocol::{ChatMessage, Usage};
use codeloop_session::*;
use codeloop_tui::app::{EditTarget, StartRequest};
use codeloop_tui::panes::inspector_lines::{Target, prompt_text};
use codeloop_tui::{Action, App, Msg};
use crossterm::event::KeyCode;
use tui_support::{ch, ctrl, info, key, press, screen, spec, steers, theme};

fn records(events: Vec<Event>) -> Vec<Record> {
    events
        .into_iter()
        .enumerate()
        .map(|(i, event)| Record {
            seq: i as u64 + 1,
            t_ms: i as u64 * 150,
            event,
        })
        .collect()
}

fn plan_prompt() -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("You are a careful Python engineer."),
        ChatMessage::user("Task: double a number.\nPlan it as functions."),
    ]
}

const RAW_REPLY: &str = "Here is the plan, with a remark the extraction drops.\n```json\n{\"functions\": [{\"name\": \"double\"}]}\n```\nThat is all.";

/// A session: a plan call (reasoning, a restart, a continuation, estimated
/// tokens, cut at the limit once), then a code call of `double` still
/// streaming.
fn session() -> Vec<Event> {
    vec![
        Event::SessionStarted(SessionStartedEvent {
            version: TAPE_VERSION,
            session_id: "s-inspect".into(),
            started_at: "2026-11-23T01:00:00Z".into(),
            task: "double a number".into(),
            inputs: vec![],
            config: ConfigSummary {
                provider: "demo".into(),
                model: "demo".into(),
                endpoint: "bundled".into(),
                max_iterations: 4,
                workers: 2,
                timeout_secs: 10,
                sandbox_layers: vec!["hygiene".into()],
                step_mode: false,
                ..Default::default()
            },
        }),
        Event::ModelRequest(ModelRequestEvent {
            call_id: 1,
            purpose: Purpose::Plan,
            tag: "plan".into(),
            messages: plan_prompt(),
        }),
        Event::ModelDelta(ModelDeltaEvent {
            call_id: 1,
            text: "broken start".into(),
        }),
        Event::ModelRestart(ModelRestartEvent {
            call_id: 1,
            reason: "the stream broke".into(),
        }),
        Event::ModelReasoning(ModelReasoningEvent {
            call_id: 1,
            text: "One function is enough.".into(),
        }),
        Event::ModelContinued(ModelContinuedEvent { call_id: 1 }),
        Event::ModelReply(ModelReplyEvent {
            call_id: 1,
            text: RAW_REPLY.into(),
            usage: Some(Usage::new(40, 30)),
            duration_ms: 2500,
            reasoning: "One function is enough.".into(),
            finish_reason: Some("length".into()),
            usage_estimated: true,
            structured: None,
            prefilled: None,
            stopped: None,
        }),
        Event::Plan(PlanEvent {
            specs: vec![spec("double", "twice x", &[])],
        }),
        Event::ModelRequest(ModelRequestEvent {
            call_id: 2,
            purpose: Purpose::Code {
                node: "double".into(),
            },
            tag: "code/double/1".into(),
            messages: vec![
                ChatMessage::system("You are a careful Python engineer."),
                ChatMessage::user("Write double(x)."),
            ],
        }),
        Event::ModelDelta(ModelDeltaEvent {
            call_id: 2,
            text: "```python\ndef double(x):\n".into(),
        }),
    ]
}

fn review() -> App {
    let tape = parse_tape(
        records(session())
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect::<String>()
            .as_bytes(),
        std::path::Path::new("test"),
    )
    .unwrap();
    App::review(tape, info(), theme())
}

/// A live app that started a task and received `events`.
fn live(events: Vec<Event>) -> App {
    let mut app = App::live(info(), theme());
    app.task_mut().insert_str("double a number");
    let actions = app.update(ctrl('s'));
    assert!(matches!(
        &actions[..],
        [Action::Start(StartRequest::Task { .. })]
    ));
    for r in records(events) {
        app.update(Msg::Record(r));
    }
    app
}

#[test]
fn m_opens_the_selected_nodes_call_and_brackets_move_between_calls() {
    let mut app = review();
    app.select_node("double".into());
    press(&mut app, [ch('m')]);
    assert_eq!(app.inspector().map(|i| i.target()), Some(Target::Call(2)));
    let s = screen(&mut app, 160, 48);
    assert!(s.contains("call 2 of 2 · code/double/1"), "{s}");
    assert!(s.contains("streaming…"), "{s}");
    assert!(s.contains("def double(x):"), "{s}");

    // The plan call: everything the tape knows of it.
    press(&mut app, [ch('[')]);
    assert_eq!(app.inspector().map(|i| i.target()), Some(Target::Call(1)));
    let s = screen(&mut app, 160, 48);
    for shown in [
        "call 1 of 2 · plan",
        "done in 2.5 s",
        "40 in + 30 out (estimated",
        "finish length",
        "the reply started again 1× (the stream broke)",
        "cut off at the token limit and continued 1×",
        "[system]",
        "[user]",
        "Task: double a number.",
        "One function is enough.",
        // The raw reply, the prose extraction drops included.
        "Here is the plan, with a remark the extraction drops.",
        "That is all.",
    ] {
        assert!(s.contains(shown), "{shown:?} not on the screen:\n{s}");
    }
    // What the restart voided is gone.
    assert!(!s.contains("broken start"), "{s}");

    // No call before the first: it stays; Esc closes.
    press(&mut app, [ch('[')]);
    assert_eq!(app.inspector().map(|i| i.target()), Some(Target::Call(1)));
    press(&mut app, [key(KeyCode::Esc)]);
    assert!(app.inspector().is_none());
}

#[test]
fn the_inspector_scrolls_and_its_end_is_reachable() {
    let mut app = review();
    press(&mut app, [ch('m'), ch('['), ch('G')]);
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("That is all."), "{s}");
    press(&mut app, [ch('g')]);
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("for plan"), "{s}");
    assert!(!s.contains("That is all."), "{s}");
}

#[test]
fn a_call_being_streamed_grows_in_the_open_inspector() {
    let mut app = live(session());
    press(&mut app, [ch('m')]);
    let s = screen(&mut app, 160, 48);
    assert!(s.contains("the model is writing"), "{s}");
    app.update(Msg::Record(Record {
        seq: 100,
        t_ms: 5000,
        event: Event::ModelDelta(ModelDeltaEvent {
            call_id: 2,
            text: "    return x * 2  # streamed later\n".into(),
        }),
    }));
    let s = screen(&mut app, 160, 48);
    assert!(s.contains("return x * 2  # streamed later"), "{s}");
}

#[test]
fn in_step_mode_the_prompt_is_shown_edited_and_sent_as_edited() {
    let mut events = session()[..1].to_vec();
    events.push(Event::Steer(SteerEvent {
        command: Command::SetStepMode { on: true },
    }));
    events.push(Event::Paused(PausedEvent {
        step: Step::ModelCall {
            purpose: Purpose::Plan,
            again: None,
        },
    }));
    let mut app = live(events);
    // The footer offers the prompt while the engine waits before a call.
    let s = screen(&mut app, 160, 48);
    assert!(
        s.contains("paused before the planning call: m its prompt"),
        "{s}"
    );

    // Paused before the call: m shows it waits; e has its prompt written first.
    press(&mut app, [ch('m')]);
    assert_eq!(app.inspector().map(|i| i.target()), Some(Target::Current));
    let s = screen(&mut app, 160, 48);
    assert!(s.contains("its prompt is written once it goes on"), "{s}");
    let actions = press(&mut app, [ch('e')]);
    assert_eq!(steers(&actions), vec![Command::ReviewPrompt]);

    // The engine paused again with the prompt written: it shows, e edits it.
    for (seq, event) in [
        (
            50,
            Event::Steer(SteerEvent {
                command: Command::ReviewPrompt,
            }),
        ),
        (
            51,
            Event::Paused(PausedEvent {
                step: Step::Prompt {
                    purpose: Purpose::Plan,
                    tag: "plan".into(),
                    messages: plan_prompt(),
                },
            }),
        ),
    ] {
        app.update(Msg::Record(Record {
            seq,
            t_ms: 900,
            event,
        }));
    }
    // One e was enough: the editor opened on the prompt once written.
    let editor = app.editor().expect("the prompt is in the editor");
    assert_eq!(editor.target(), &EditTarget::Prompt { tag: "plan".into() });
    assert_eq!(
        editor.textarea().lines().join("\n"),
        prompt_text(&plan_prompt())
    );
    let area = app.editor_mut().unwrap().textarea_mut();
    area.move_cursor(ratatui_textarea::CursorMove::Bottom);
    area.move_cursor(ratatui_textarea::CursorMove::End);
    area.insert_str(" Use one function only.");
    // Ctrl-S sends it to the model: the edit, then the go-ahead.
    let actions = press(&mut app, [ctrl('s')]);
    let sent = steers(&actions);
    assert_eq!(sent.get(1), Some(&Command::Approve), "{sent:?}");
    let Some(Command::EditPrompt { messages }) = sent.first() else {
        panic!("no prompt edit sent: {sent:?}");
    };
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0], plan_prompt()[0]);
    assert!(
        messages[1]
            .content
            .ends_with("Plan it as functions. Use one function only."),
        "{messages:?}"
    );
    assert!(app.inspector().is_some(), "back in the inspector");
}

#[test]
fn a_broken_prompt_edit_is_not_sent_and_the_text_is_kept() {
    let mut events = session()[..1].to_vec();
    events.push(Event::Steer(SteerEvent {
        command: Command::SetStepMode { on: true },
    }));
    events.push(Event::Paused(PausedEvent {
        step: Step::Prompt {
            purpose: Purpose::Plan,
            tag: "plan".into(),
            messages: plan_prompt(),
        },
    }));
    let mut app = live(events);
    press(&mut app, [ch('m'), ch('e')]);
    let area = app.editor_mut().unwrap().textarea_mut();
    area.select_all();
    area.cut();
    area.insert_str("no roles here");
    let actions = press(&mut app, [ctrl('s')]);
    assert!(steers(&actions).is_empty(), "{actions:?}");
    let editor = app.editor().expect("the editor is open again");
    assert_eq!(editor.textarea().lines().join("\n"), "no roles here");
    assert!(app.flash().is_some_and(|(_, t)| t.contains("line 1")));
}

#[test]
fn in_review_a_prompt_cannot_be_edited() {
    let mut app = review();
    let actions = press(&mut app, [ch('m'), ch('e')]);
    assert!(steers(&actions).is_empty());
    assert!(app.editor().is_none());
    assert!(
        app.flash()
            .is_some_and(|(_, t)| t.contains("only a prompt not yet sent")),
        "{:?}",
        app.flash()
    );
}

#[test]
fn inspector_snapshot_80x24() {
    let mut app = review();
    press(&mut app, [ch('m'), ch('[')]);
    insta::assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn inspector_snapshot_160x48() {
    let mut app = review();
    press(&mut app, [ch('m'), ch('[')]);
    insta::assert_snapshot!(screen(&mut app, 160, 48));
}

#[test]
fn while_the_inspector_is_open_the_status_bar_names_it_and_its_keys() {
    let mut app = review();
    let hints = |s: &str| {
        s.lines()
            .last()
            .unwrap()
            .trim_matches('"')
            .trim_end()
            .to_string()
    };
    press(&mut app, [ch('m')]);
    for (w, h) in [(80, 24), (160, 48)] {
        let s = screen(&mut app, w, h);
        assert_eq!(
            hints(&s),
            " Model call [ / ] call · e edit prompt · Esc / m / q close",
            "at {w}x{h}:\n{s}"
        );
    }
    press(&mut app, [key(KeyCode::Esc)]);
    assert!(hints(&screen(&mut app, 80, 24)).starts_with(" Workflow "));
}
