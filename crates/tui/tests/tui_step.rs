//! Step mode in real use (issue 21): one `e` before a model call opens its
//! prompt in the editor and Ctrl-S sends it; `x` on what the rest depends
//! on asks first; F forks a live session from its past.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::PathBuf;

use codeloop_protocol::{ChatMessage, Role};
use codeloop_session::*;
use codeloop_testkit::tui_support;
use codeloop_tui::app::{Confirm, Focus, StartRequest};
use codeloop_tui::{Action, App, Msg};
use crossterm::event::KeyCode;
use tui_support::*;

/// A live app, started on a task, fed `events` after the scripted
/// session's first (its start).
fn live_with(events: Vec<Event>) -> App {
    let mut app = App::live(info(), theme());
    app.task_mut().insert_str("sum key=value lines");
    app.update(ctrl('s'));
    app.set_session_dir(PathBuf::from("/sessions/s-step"));
    let first = records().into_iter().next().unwrap();
    app.update(Msg::Record(first));
    push(&mut app, events);
    app
}

fn push(app: &mut App, events: Vec<Event>) -> Vec<Action> {
    let mut actions = Vec::new();
    for event in events {
        let seq = app.records().len() as u64;
        actions.extend(app.update(Msg::Record(Record {
            seq,
            t_ms: seq * 10,
            event,
        })));
    }
    actions
}

fn paused_before_plan() -> Event {
    Event::Paused(PausedEvent {
        step: Step::ModelCall {
            purpose: Purpose::Plan,
            again: None,
        },
    })
}

fn status_hint(app: &mut App) -> String {
    let s = screen(app, 160, 48);
    s.lines().last().unwrap().to_string()
}

#[test]
fn one_e_before_a_model_call_opens_its_prompt_and_ctrl_s_sends_it() {
    let mut app = live_with(vec![
        Event::Steer(SteerEvent {
            command: Command::SetStepMode { on: true },
        }),
        paused_before_plan(),
    ]);
    assert!(
        status_hint(&mut app).contains("e edit the prompt"),
        "{}",
        status_hint(&mut app)
    );
    let actions = app.update(ch('e'));
    assert_eq!(steers(&actions), vec![Command::ReviewPrompt]);
    assert!(app.editor().is_none(), "the prompt is not written yet");
    // The engine writes it and pauses again: the editor opens on it.
    let messages = vec![ChatMessage {
        role: Role::User,
        content: "Plan the task.".into(),
    }];
    push(
        &mut app,
        vec![
            Event::Steer(SteerEvent {
                command: Command::ReviewPrompt,
            }),
            Event::Paused(PausedEvent {
                step: Step::Prompt {
                    purpose: Purpose::Plan,
                    tag: "plan".into(),
                    messages: messages.clone(),
                },
            }),
        ],
    );
    let editor = app.editor().expect("one e opened the prompt in the editor");
    let text = editor.textarea().lines().join("\n");
    assert!(text.contains("Plan the task."), "{text}");
    // What the person types is text, not keys: `a` does not approve.
    assert!(steers(&app.update(ch('a'))).is_empty());
    app.update(key(KeyCode::Backspace));
    let actions = app.update(ctrl('s'));
    let sent = steers(&actions);
    assert!(
        matches!(&sent[..], [Command::EditPrompt { messages }, Command::Approve]
            if messages[0].content.contains("Plan the task.")),
        "{sent:?}"
    );
}

/// A live app with one planned function, in step mode, paused at `step`
/// after `before`.
fn paused_at(before: Vec<Event>, step: Step) -> App {
    let mut events = vec![
        Event::Plan(PlanEvent {
            specs: vec![spec("parse_line", "split one line", &[])],
        }),
        Event::Steer(SteerEvent {
            command: Command::SetStepMode { on: true },
        }),
    ];
    events.extend(before);
    events.push(Event::Paused(PausedEvent { step }));
    live_with(events)
}

fn call_for(purpose: fn(String) -> Purpose) -> Step {
    Step::ModelCall {
        purpose: purpose("parse_line".into()),
        again: None,
    }
}

#[test]
fn x_asks_first_wherever_a_skip_ends_something_and_nowhere_else() {
    let mut app = live_with(vec![
        Event::Steer(SteerEvent {
            command: Command::SetStepMode { on: true },
        }),
        paused_before_plan(),
    ]);
    assert!(app.update(ch('x')).is_empty(), "asked first");
    assert_eq!(app.confirm(), Some(Confirm::SkipPlan));
    assert!(app.update(ch('n')).is_empty(), "no: nothing sent");
    app.update(ch('x'));
    assert_eq!(steers(&app.update(ch('y'))), vec![Command::Skip]);

    // A function's run, its tests, its first code and its repair: each
    // skip gives the function up (or leaves it unable to pass).
    for (step, question) in [
        (
            Step::Run {
                node: Some("parse_line".into()),
                iteration: 1,
            },
            Confirm::SkipRun,
        ),
        (call_for(|node| Purpose::Tests { node }), Confirm::SkipTests),
        (call_for(|node| Purpose::Code { node }), Confirm::SkipCode),
        (
            call_for(|node| Purpose::Repair { node }),
            Confirm::SkipRepair,
        ),
        (
            Step::Prompt {
                purpose: Purpose::Code {
                    node: "parse_line".into(),
                },
                tag: "code/parse_line/1".into(),
                messages: Vec::new(),
            },
            Confirm::SkipCode,
        ),
    ] {
        let mut app = paused_at(Vec::new(), step.clone());
        assert!(app.update(ch('x')).is_empty(), "{step:?}: asked first");
        assert_eq!(app.confirm(), Some(question), "{step:?}");
        let s = screen(&mut app, 80, 24);
        assert!(s.contains("Skip"), "{s}");
        assert!(app.update(ch('n')).is_empty(), "{step:?}: no sends nothing");
        app.update(ch('x'));
        assert_eq!(
            steers(&app.update(ch('y'))),
            vec![Command::Skip],
            "{step:?}"
        );
    }

    // What a skip only leaves out goes at once: a review, one more
    // candidate for the vote (a code call for the function was made).
    let first_code = vec![
        Event::ModelRequest(ModelRequestEvent {
            call_id: 1,
            purpose: Purpose::Code {
                node: "parse_line".into(),
            },
            tag: "code/parse_line/1".into(),
            messages: Vec::new(),
        }),
        Event::ModelReply(ModelReplyEvent {
            call_id: 1,
            text: "def parse_line(s):\n    return s\n".into(),
            usage: None,
            duration_ms: 5,
            reasoning: String::new(),
            finish_reason: None,
            usage_estimated: false,
            structured: None,
            stopped: None,
            prefilled: None,
        }),
    ];
    for (before, step) in [
        (Vec::new(), call_for(|node| Purpose::Review { node })),
        (first_code.clone(), call_for(|node| Purpose::Code { node })),
        (
            Vec::new(),
            Step::Prompt {
                purpose: Purpose::Code {
                    node: "parse_line".into(),
                },
                tag: "code/parse_line/1/c2".into(),
                messages: Vec::new(),
            },
        ),
    ] {
        let mut app = paused_at(before, step.clone());
        assert_eq!(
            steers(&app.update(ch('x'))),
            vec![Command::Skip],
            "{step:?}"
        );
        assert_eq!(app.confirm(), None, "{step:?}");
    }
}

#[test]
fn f_in_the_past_of_a_live_session_forks_there() {
    let mut app = App::live(info(), theme());
    app.task_mut().insert_str("sum key=value lines");
    app.update(ctrl('s'));
    app.set_session_dir(PathBuf::from("/sessions/s-step"));
    let all = records();
    // Still at work: every record but the last few.
    for r in all.iter().take(all.len() - 3).cloned() {
        app.update(Msg::Record(r));
    }
    app.set_focus(Focus::Graph);
    app.update(key(KeyCode::Left));
    let at = app.records()[app.cursor() - 1].seq;
    assert!(app.update(ch('F')).is_empty(), "asked first");
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("Fork session"), "{s}");
    let actions = app.update(ch('y'));
    assert_eq!(
        actions,
        vec![
            Action::Steer(Command::Cancel),
            Action::Start(StartRequest::ForkAt {
                tape: PathBuf::from("/sessions/s-step/tape.jsonl"),
                at,
            })
        ],
        "the running session is left for the fork: it stops"
    );
}

/// Paused before a function's code, the person opens the Code pane (Enter),
/// its tests tab (t) and presses e: the editor opens on the tests, not the
/// code call's prompt (issue 42); in the graph, e still edits the prompt.
#[test]
fn paused_before_code_e_in_the_code_pane_edits_what_its_tab_shows() {
    let tests = "def test_parse_line():\n    assert parse_line('a=1') == ('a', 1)\n";
    let mut app = paused_at(
        vec![Event::Tests(TestsEvent {
            node: "parse_line".into(),
            code: tests.into(),
            source: CodeSource::Model,
        })],
        call_for(|node| Purpose::Code { node }),
    );
    app.set_focus(Focus::Graph);
    assert!(
        status_hint(&mut app).contains("e edit the prompt"),
        "{}",
        status_hint(&mut app)
    );
    press(&mut app, [key(KeyCode::Enter), ch('t')]);
    assert!(
        status_hint(&mut app).contains("e edit the tests"),
        "{}",
        status_hint(&mut app)
    );
    let actions = app.update(ch('e'));
    assert!(steers(&actions).is_empty(), "{:?}", steers(&actions));
    let editor = app.editor().expect("e opened the editor");
    assert_eq!(
        editor.target(),
        &codeloop_tui::app::EditTarget::Tests {
            node: "parse_line".into()
        }
    );
    assert_eq!(editor.textarea().lines().join("\n") + "\n", tests);
    // Esc, back to the workflow: e is the prompt's again.
    app.update(key(KeyCode::Esc));
    app.set_focus(Focus::Graph);
    assert_eq!(steers(&app.update(ch('e'))), vec![Command::ReviewPrompt]);
}

/// A node whose step the engine waits before reads `paused` in the
/// workflow, not the `generating` it was set to (issue 42); once the step
/// begins it reads what it is doing again.
#[test]
fn a_node_paused_before_reads_paused_in_the_workflow() {
    let mut app = paused_at(
        vec![Event::NodeStatus(NodeStatusEvent {
            node: "parse_line".into(),
            status: NodeStatus::Generating,
        })],
        call_for(|node| Purpose::Code { node }),
    );
    for (w, h) in [(200, 50), (80, 24)] {
        let s = screen(&mut app, w, h);
        let row = s
            .lines()
            .find(|l| l.contains("› "))
            .unwrap_or_else(|| panic!("{s}"));
        assert!(row.contains("⏸ parse_line"), "{w}x{h}: {row}\n{s}");
        assert!(!row.contains("generating"), "{w}x{h}: {row}");
        if w >= 120 {
            assert!(row.contains("paused"), "{row}");
        }
    }
    push(
        &mut app,
        vec![Event::Steer(SteerEvent {
            command: Command::Approve,
        })],
    );
    let s = screen(&mut app, 200, 50);
    let row = s
        .lines()
        .find(|l| l.contains("› "))
        .unwrap_or_else(|| panic!("{s}"));
    assert!(row.contains("generating"), "{row}");
}

/// Tests the model is writing stream under the tests tab; the code tab
/// says there is no code yet, not the tests as if they were code (issue 42).
#[test]
fn tests_streaming_in_show_under_the_tests_tab() {
    let mut app = live_with(vec![
        Event::Plan(PlanEvent {
            specs: vec![spec("parse_line", "split one line", &[])],
        }),
        Event::ModelRequest(ModelRequestEvent {
            call_id: 1,
            purpose: Purpose::Tests {
                node: "parse_line".into(),
            },
            tag: "tests/parse_line".into(),
            messages: vec![],
        }),
        Event::ModelDelta(ModelDeltaEvent {
            call_id: 1,
            text: "def test_parse_line():\n    assert parse_line('a=1')".into(),
        }),
    ]);
    app.set_focus(Focus::Code);
    for (w, h) in [(200, 50), (80, 24)] {
        let s = screen(&mut app, w, h);
        assert!(
            !s.contains("def test_parse_line"),
            "not on the code tab:\n{s}"
        );
        assert!(s.contains("no code for parse_line yet"), "{s}");
    }
    app.update(ch('t'));
    for (w, h) in [(200, 50), (80, 24)] {
        let s = screen(&mut app, w, h);
        assert!(s.contains("def test_parse_line():"), "{s}");
        assert!(!s.contains("no tests for parse_line yet"), "{s}");
    }
}

/// Paused at a test that may be wrong, the status line says so and offers
/// its edit: e opens the node's tests, and Ctrl-S sends them (issue 42).
#[test]
fn paused_at_a_doubted_test_e_edits_the_tests() {
    let tests = "def test_parse_line():\n    assert parse_line('a=1') == ('a', 2)\n";
    let mut app = paused_at(
        vec![Event::Tests(TestsEvent {
            node: "parse_line".into(),
            code: tests.into(),
            source: CodeSource::Model,
        })],
        Step::SuspectTest {
            node: "parse_line".into(),
            iteration: 1,
            why: "its reflection says \"Therefore, the test was wrong.\"".into(),
            set_aside: None,
        },
    );
    app.set_focus(Focus::Graph);
    let hint = status_hint(&mut app);
    assert!(
        hint.contains("running parse_line's repair: the test may be wrong")
            && hint.contains("e edit the tests"),
        "{hint}"
    );
    app.update(ch('e'));
    let editor = app.editor().expect("e opened the tests");
    assert_eq!(
        editor.target(),
        &codeloop_tui::app::EditTarget::Tests {
            node: "parse_line".into()
        }
    );
    app.update(ctrl('l'));
    app.update(Msg::Term(crossterm::event::Event::Paste(
        "def test_parse_line():\n    assert parse_line('a=1') == ('a', 1)".into(),
    )));
    let sent = steers(&app.update(ctrl('s')));
    assert!(
        matches!(&sent[..], [Command::EditTests { node, code }] if node == "parse_line" && code.contains("('a', 1)") && !code.contains("('a', 2)")),
        "{sent:?}"
    );
}
