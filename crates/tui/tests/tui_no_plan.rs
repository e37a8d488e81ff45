//! When the model cannot plan (issue 21): what the person is told while
//! the plan is asked for again and once there is none, the tokens counted
//! as a reply streams, a new session that starts from the failed one's
//! task, and a plan the person writes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop_protocol::{ChatMessage, Role, Usage};
use codeloop_session::*;
use codeloop_tui::app::{Focus, Mode, StartRequest};
use codeloop_tui::{Action, App, Msg};
use tui_support::*;

const PROSE: &str = "I think the task is to count words. First, split the text on whitespace, then count each word with a dictionary.";
const TOLD: &str =
    "the reply holds no JSON plan: reply with one ```json block holding {\"functions\": [...]}";

fn request(call_id: u64, tag: &str) -> Event {
    Event::ModelRequest(ModelRequestEvent {
        call_id,
        purpose: Purpose::Plan,
        tag: tag.into(),
        messages: vec![ChatMessage {
            role: Role::User,
            content: "x".repeat(400),
        }],
    })
}

fn reply(call_id: u64) -> Event {
    Event::ModelReply(ModelReplyEvent {
        call_id,
        text: PROSE.into(),
        usage: Some(Usage::new(100, 30)),
        duration_ms: 900,
        reasoning: String::new(),
        finish_reason: None,
        usage_estimated: false,
        structured: None,
        prefilled: None,
        stopped: None,
    })
}

/// A session whose model never gives a plan: three prose replies, each
/// rejected, then the end. `upto` events of it.
fn no_plan_events(input: &std::path::Path) -> Vec<Event> {
    let mut events = vec![Event::SessionStarted(SessionStartedEvent {
        version: TAPE_VERSION,
        session_id: "s-noplan".into(),
        started_at: "2026-11-25T01:00:00Z".into(),
        task: "Count the words of a text.".into(),
        inputs: vec![InputFile {
            name: "words.txt".into(),
            source_path: input.display().to_string(),
            size_bytes: 16,
            preview: "the cat".into(),
            description: None,
        }],
        config: ConfigSummary {
            provider: "openai-compatible".into(),
            model: "tiny".into(),
            endpoint: "http://127.0.0.1:8080/v1".into(),
            max_iterations: 4,
            workers: 2,
            timeout_secs: 10,
            sandbox_layers: vec!["hygiene".into(), "rlimits".into()],
            step_mode: false,
            ..Default::default()
        },
    })];
    for (id, tag) in [(1, "plan"), (2, "plan/2"), (3, "plan/3")] {
        events.push(request(id, tag));
        events.push(Event::ModelDelta(ModelDeltaEvent {
            call_id: id,
            text: PROSE.into(),
        }));
        events.push(reply(id));
        events.push(Event::PlanError(PlanErrorEvent {
            message: TOLD.into(),
        }));
    }
    events.push(Event::Finished(FinishedEvent {
        result: FinalResult {
            passed: false,
            nodes_passed: 0,
            nodes_total: 0,
            iterations: 0,
            usage: Usage::new(300, 90),
            summary: "no usable plan: the model was asked 3 times and no reply held a plan codeloop can use".into(),
            output_dir: None,
        },
    }));
    events
}

/// A live workbench that started a task and was fed `events`.
fn live_with(events: Vec<Event>) -> App {
    let mut app = App::live(info(), theme());
    app.task_mut().insert_str("Count the words of a text.");
    app.update(ctrl('s'));
    for (i, event) in events.into_iter().enumerate() {
        app.update(Msg::Record(Record {
            seq: i as u64,
            t_ms: i as u64 * 100,
            event,
        }));
    }
    app
}

/// Replace the open editor's text.
fn set_text(app: &mut App, text: &str) {
    let area = app.editor_mut().unwrap().textarea_mut();
    area.select_all();
    area.cut();
    area.insert_str(text);
}

fn input_file(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("words.txt");
    std::fs::write(&path, "the cat the dog\n").unwrap();
    path
}

#[test]
fn while_the_plan_is_asked_again_the_attempt_and_the_live_reply_show() {
    let dir = tempfile::tempdir().unwrap();
    let mut events = no_plan_events(&input_file(dir.path()));
    // Up to the second attempt's reply streaming: request, delta, no reply yet.
    events.truncate(1 + 4 + 2);
    let mut app = live_with(events);
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("asking again (2 of 2)"), "{s}");
    assert!(s.contains("I think the task is to count words."), "{s}");
    assert!(!s.contains("0 tokens"), "{s}");
    // Call 1 reported 130; call 2 counts as it streams: its prompt (400
    // characters) and the reply so far (114), about 4 characters a token (rounded down).
    assert!(s.contains("│ 258 tokens"), "{s}");
    insta::assert_snapshot!(s);
}

#[test]
fn with_no_usable_plan_the_person_is_told_what_happened_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = live_with(no_plan_events(&input_file(dir.path())));
    app.update(Msg::EngineDone(Ok(())));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("asked 3 times"), "{s}");
    assert!(s.contains("What you can do"), "{s}");
    for offer in [
        "m  read the model's replies",
        "P  write the plan",
        "n  a new session",
    ] {
        assert!(s.contains(offer), "{offer}:\n{s}");
    }
    insta::assert_snapshot!(s);
}

#[test]
fn n_after_a_failed_session_starts_from_its_task_and_files() {
    let dir = tempfile::tempdir().unwrap();
    let input = input_file(dir.path());
    let mut app = live_with(no_plan_events(&input));
    app.update(Msg::EngineDone(Ok(())));
    app.set_focus(Focus::Graph);
    app.update(ch('n'));
    let asked = app.update(ch('y'));
    assert!(matches!(app.mode(), Mode::Live(l) if !l.started));
    assert_eq!(app.panes().task.text(), "Count the words of a text.");
    // Its file described again, off the UI thread, then attached.
    assert_eq!(app.panes().task.pending(), std::slice::from_ref(&input));
    assert_eq!(describe_asked(&mut app, asked), 1);
    assert_eq!(app.panes().task.attached(), std::slice::from_ref(&input));
    assert_eq!(app.focus(), Focus::Task, "ready to edit");
    // Sent again as it is.
    let actions = app.update(ctrl('s'));
    assert!(
        matches!(&actions[..], [Action::Start(StartRequest::Task { task, inputs, plan: None, .. })]
            if task == "Count the words of a text." && inputs.as_slice() == std::slice::from_ref(&input)),
        "{actions:?}"
    );
    // After a passed session the editor starts empty.
    let mut passed = App::live(info(), theme());
    passed.task_mut().insert_str("sum key=value lines");
    passed.update(ctrl('s'));
    for r in records() {
        passed.update(Msg::Record(r));
    }
    passed.set_focus(Focus::Graph);
    passed.update(ch('n'));
    passed.update(ch('y'));
    assert_eq!(passed.panes().task.text(), "");
}

#[test]
fn a_plan_the_person_writes_starts_a_session_that_goes_on_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let input = input_file(dir.path());
    let mut app = live_with(no_plan_events(&input));
    app.update(Msg::EngineDone(Ok(())));
    app.update(ch('P'));
    let editor = app.editor().expect("P opens the plan in the editor");
    let text = editor.textarea().lines().join("\n");
    assert!(text.contains("# name: parse_line"), "a template:\n{text}");
    // A plan with a dependency on a function it does not name is refused,
    // and the text stays for the person to fix.
    set_text(
        &mut app,
        "name: count\npurpose: count the words\ndepends_on: split\n",
    );
    let actions = app.update(ctrl('s'));
    assert!(actions.is_empty(), "{actions:?}");
    let editor = app.editor().expect("still open");
    assert!(
        editor.note().unwrap().contains("split"),
        "{:?}",
        editor.note()
    );
    set_text(
        &mut app,
        "name: split\npurpose: the words of a text\ninputs: text: str\noutput: list[str]\n\nname: count\npurpose: count the words\ndepends_on: split\n",
    );
    let actions = app.update(ctrl('s'));
    let [
        Action::Start(StartRequest::Task {
            task,
            inputs,
            plan: Some(plan),
            ..
        }),
    ] = &actions[..]
    else {
        panic!("{actions:?}")
    };
    assert_eq!(task, "Count the words of a text.");
    assert_eq!(inputs, &[input]);
    let names: Vec<&str> = plan.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["split", "count"]);
    assert_eq!(plan[1].depends_on, ["split"]);
}

#[test]
fn a_plan_written_after_a_demos_plan_was_skipped_starts_from_the_demos_and_its_replies_answer() {
    let dir = tempfile::tempdir().unwrap();
    let input = input_file(dir.path());
    let mut events = no_plan_events(&input);
    let Event::SessionStarted(SessionStartedEvent { config, .. }) = &mut events[0] else {
        panic!()
    };
    config.provider = "demo".into();
    config.model = "demo:roman".into();
    let roman = vec![spec("int_to_roman", "to Roman", &[])];
    let mut i = info();
    i.demos = vec![
        codeloop_tui::app::DemoEntry {
            name: "wordfreq".into(),
            title: "t".into(),
            plan: vec![spec("top_words", "the words", &[])],
        },
        codeloop_tui::app::DemoEntry {
            name: "roman".into(),
            title: "t".into(),
            plan: roman.clone(),
        },
    ];
    let mut app = App::live(i, theme());
    app.set_focus(Focus::Task);
    app.task_mut().insert_str("Count the words of a text.");
    app.update(ctrl('s'));
    for (i, event) in events.into_iter().enumerate() {
        app.update(Msg::Record(Record {
            seq: i as u64,
            t_ms: i as u64 * 100,
            event,
        }));
    }
    app.update(Msg::EngineDone(Ok(())));
    app.update(ch('P'));
    let text = app.editor().unwrap().textarea().lines().join("\n");
    assert!(text.contains("name: int_to_roman"), "{text}");
    let actions = app.update(ctrl('s'));
    let [
        Action::Start(StartRequest::Task {
            plan: Some(plan),
            demo,
            ..
        }),
    ] = &actions[..]
    else {
        panic!("{actions:?}")
    };
    assert_eq!(plan, &roman);
    assert_eq!(demo.as_deref(), Some("roman"));
}
