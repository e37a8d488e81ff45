//! Time travel in the workbench (issue 11): F forks the reviewed session at
//! the tape cursor, u rewinds the live session's node to its previous
//! iteration, R on a finished session says why nothing resumes, and the
//! welcome list is read again when it shows. App tests over the scripted
//! session, and rendered frames of the questions asked first.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::PathBuf;

use codeloop::session::Command;
use codeloop::session::index::{SessionResult, SessionSummary};
use codeloop::tui::app::{Action, StartRequest};
use codeloop::tui::{App, Msg};
use codeloop_testkit::tui_support;
use crossterm::event::KeyCode;
use tui_support::*;

/// The workbench's info with one demo (the welcome screen's list has focus).
fn with_demo() -> codeloop::tui::Info {
    let mut i = info();
    i.demos = vec![codeloop::tui::app::DemoEntry {
        name: "roman".into(),
        title: "roman numerals (subtractive pairs)".into(),
        ..Default::default()
    }];
    i
}

const DIR: &str = "/sessions/20261123-010000-b";

/// The scripted session reviewed from its folder.
fn review() -> App {
    let mut i = info();
    i.source = format!("{DIR}/tape.jsonl");
    i.session_dir = Some(PathBuf::from(DIR));
    App::review(tape(), i, theme())
}

/// The scripted session as a live one, all its records in.
fn live() -> App {
    let mut app = App::live(with_demo(), theme());
    app.update(ch('1'));
    app.set_session_dir(PathBuf::from(DIR));
    for r in records() {
        app.update(Msg::Record(r));
    }
    app
}

#[test]
fn f_in_review_forks_at_the_cursor_after_a_yes_and_the_workbench_goes_live() {
    let mut app = review();
    let last = records().last().unwrap().seq;
    // Back two iterations: an earlier moment than the end.
    app.update(ch('['));
    app.update(ch('['));
    let cursor = app.cursor();
    assert!(cursor < records().len(), "the cursor moved back");
    let at = records()[cursor - 1].seq;
    assert!(at < last);

    // A no changes nothing.
    assert!(app.update(ch('F')).is_empty());
    assert!(app.update(ch('n')).is_empty());
    assert!(app.read_only(), "still the review");

    assert!(app.update(ch('F')).is_empty(), "asked first");
    let actions = app.update(ch('y'));
    assert_eq!(
        actions,
        vec![Action::Start(StartRequest::ForkAt {
            tape: PathBuf::from(DIR).join("tape.jsonl"),
            at
        })]
    );
    assert!(!app.read_only(), "the fork is the live session");
    assert!(!app.welcome());
    assert!(
        app.records().is_empty(),
        "its records stream in from the engine"
    );

    // A fork that cannot start goes back to the review, at the same moment.
    app.update(Msg::StartFailed(
        "cannot start the session: still choosing the model".into(),
    ));
    assert!(app.read_only(), "back in the review");
    assert_eq!(app.cursor(), cursor);
    let said = app.message().expect("why, in a message");
    assert_eq!(said.title, "The fork did not start");
    assert!(said.text.contains("still choosing"), "{}", said.text);
}

#[test]
fn the_fork_question_at_80x24() {
    let mut app = review();
    app.update(ch('['));
    app.update(ch('F'));
    insta::assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn u_rewinds_the_selected_node_to_its_previous_iteration_after_a_yes() {
    let mut app = live();
    app.select_node("parse_line".into());
    let at = codeloop::engine::rewind_point(&records(), "parse_line").unwrap();
    assert!(app.update(ch('u')).is_empty(), "asked first");
    assert!(app.update(ch('x')).is_empty(), "any other key is no");
    assert_eq!(app.records().len(), records().len());

    app.update(ch('u'));
    let fork = Action::Start(StartRequest::ForkAt {
        tape: PathBuf::from(DIR).join("tape.jsonl"),
        at,
    });
    // The session had finished: it keeps its result, nothing is cancelled.
    assert_eq!(app.update(key(KeyCode::Enter)), vec![fork.clone()]);
    assert!(app.records().is_empty(), "the new branch streams in");
    assert!(!app.welcome());

    // Mid-run, the branch left behind ends, cancelled, on its own tape.
    let mut app = App::live(with_demo(), theme());
    app.update(ch('1'));
    app.set_session_dir(PathBuf::from(DIR));
    let all = records();
    for r in all[..all.len() - 1].iter().cloned() {
        app.update(Msg::Record(r));
    }
    assert!(app.session_running());
    app.select_node("parse_line".into());
    app.update(ch('u'));
    assert_eq!(
        app.update(ch('y')),
        vec![Action::Steer(Command::Cancel), fork]
    );

    // Before a session starts there is nothing to rewind: nothing asked.
    let mut app = App::live(with_demo(), theme());
    assert!(app.update(ch('u')).is_empty());
    assert!(app.records().is_empty() && app.welcome());
}

#[test]
fn the_rewind_question_at_80x24_and_160x48() {
    let mut app = live();
    app.select_node("parse_line".into());
    app.update(ch('u'));
    insta::assert_snapshot!("rewind_80x24", screen(&mut app, 80, 24));
    insta::assert_snapshot!("rewind_160x48", screen(&mut app, 160, 48));
}

fn summary(id: &str, result: SessionResult) -> SessionSummary {
    SessionSummary {
        id: id.into(),
        started_at: "2026-11-23T01:00:00Z".into(),
        task: "Convert roman numerals to integers.".into(),
        model: "demo:roman".into(),
        provider: "demo".into(),
        result,
        iterations: 2,
        tokens: 960,
        parent: None,
        events: 30,
        dir: PathBuf::from(format!("/sessions/{id}")),
    }
}

#[test]
fn r_on_a_passed_session_says_why_nothing_resumes_and_what_to_do() {
    let mut i = with_demo();
    i.sessions = vec![summary("20261123-010000-b", SessionResult::Passed)];
    let mut app = App::live(i, theme());
    assert!(app.update(ch('R')).is_empty(), "nothing starts");
    assert!(app.welcome());
    let message = app.message().expect("a message says why");
    assert_eq!(message.title, "Nothing to resume");
    assert!(
        message.text.contains("finished and passed"),
        "{}",
        message.text
    );
    assert!(message.text.contains("F here forks it"), "{}", message.text);
    assert!(
        message
            .text
            .contains("codeloop resume 20261123-010000-b --at SEQ"),
        "{}",
        message.text
    );
    insta::assert_snapshot!(screen(&mut app, 80, 24));

    // A refusal from the engine (a failed session at its limit) is a message too.
    let mut app = App::live(info(), theme());
    app.update(Msg::StartFailed(
        "cannot start the session: nothing to resume: session s finished and failed".into(),
    ));
    assert!(
        app.message()
            .unwrap()
            .text
            .starts_with("Session s finished and failed")
    );
    app.update(Msg::StartFailed(
        "cannot start the session: nothing to resume: session s finished and failed".into(),
    ));
    assert_eq!(app.message().unwrap().title, "Nothing to resume");
}

#[test]
fn a_new_session_reads_the_list_again_and_shows_the_one_just_ended() {
    let mut app = live();
    app.update(Msg::EngineDone(Ok(())));
    // Leaving the session asks first (guard.rs); yes goes to the welcome.
    assert!(app.update(ch('n')).is_empty());
    let actions = app.update(ch('y'));
    assert_eq!(actions, vec![Action::ListSessions]);
    assert!(app.welcome());
    // What the event loop does with it: the index's list, newest first.
    app.set_sessions(vec![summary("20261123-020000-c", SessionResult::Passed)]);
    let shown = screen(&mut app, 160, 48);
    assert!(shown.contains("Recent sessions"), "{shown}");
    assert!(shown.contains("Convert roman numerals"), "{shown}");
}

/// The records of a fork of the scripted session at `at`, as its engine
/// streams them: the parent's records up to there, `Forked`, the notice
/// saying which model it goes on with.
fn fork_records(at: u64) -> Vec<codeloop::session::Record> {
    use codeloop::session::{Event, ForkedEvent, NoticeEvent, NoticeLevel, Record};
    let mut out: Vec<Record> = records().into_iter().filter(|r| r.seq <= at).collect();
    let t_ms = out.last().map_or(0, |r| r.t_ms);
    for event in [
        Event::Forked(ForkedEvent {
            parent_id: "s-test".into(),
            parent_tape: format!("{DIR}/tape.jsonl"),
            at_seq: at,
        }),
        Event::Notice(NoticeEvent {
            level: NoticeLevel::Info,
            message: "going on with the demo's own replies (demo:roman)".into(),
        }),
    ] {
        out.push(Record {
            seq: out.len() as u64,
            t_ms,
            event,
        });
    }
    out
}

#[test]
fn a_fork_shows_its_lineage_live() {
    let mut app = review();
    app.update(ch('['));
    app.update(ch('F'));
    app.update(ch('y'));
    app.set_session_dir(PathBuf::from("/sessions/20261123-020000-c"));
    for r in fork_records(15) {
        app.update(Msg::Record(r));
    }
    let state = app.state();
    assert_eq!(state.parent.as_ref().map(|p| p.at_seq), Some(15));
    insta::assert_snapshot!("lineage_80x24", screen(&mut app, 80, 24));
    insta::assert_snapshot!("lineage_160x48", screen(&mut app, 160, 48));
}

/// `codeloop open` of a session, a fork of it, then `n`: the welcome
/// screen names the model a new session would start on (the workbench's,
/// here the bundled demo model, as `codeloop` alone names it), chosen in
/// the background while the tape was reviewed. The real starter forks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_fork_under_open_the_welcome_screen_names_the_model_a_new_session_would_use() {
    let dir = tempfile::tempdir().unwrap();
    let tape = write_tape(dir.path());
    let mut config = codeloop::config::Config::default();
    config.paths.data_dir = dir.path().join("data");
    config.paths.config_dir = dir.path().join("config");
    config.paths.cache_dir = dir.path().join("cache");
    config.model.provider = "demo".into();
    let asked = codeloop::commands::model::ModelArgs::default();
    let expected = codeloop::commands::model::select_model(&config, &asked)
        .await
        .unwrap()
        .description;
    assert!(expected.starts_with("demo model"), "{expected}");

    let demos = with_demo().demos;
    let (mut app, mut hooks) =
        codeloop::commands::ui::open_view(&tape, &config, theme(), demos).unwrap();
    assert_eq!(
        app.info().model_label,
        "",
        "not chosen before the screen opens"
    );
    let chosen = hooks.messages.as_mut().unwrap().recv().await.unwrap();
    app.update(chosen);

    app.update(ch('['));
    app.update(ch('F'));
    let actions = app.update(ch('y'));
    let [Action::Start(request)] = &actions[..] else {
        panic!("a start: {actions:?}");
    };
    let start = hooks.starter.as_mut().unwrap();
    // The fork's own model may still be being chosen: F again, as the
    // person is told to.
    let mut tries = 0;
    let mut handle = loop {
        tries += 1;
        match start(request.clone()) {
            Ok(handle) => break handle,
            Err(e) if tries < 1200 && format!("{e:#}").contains("press F again") => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Err(e) => panic!("the fork did not start: {e:#}"),
        }
    };
    app.set_session_dir(handle.session_dir.clone());
    let first = handle.events.recv().await.unwrap();
    app.update(Msg::Record(first));
    assert!(!app.read_only() && !app.welcome(), "the fork, live");
    // Cancelled, and its records in until the end: `n` leaves an ended session.
    let mut cancel = app.update(ch('c'));
    if app.confirm().is_some() {
        cancel.extend(app.update(ch('y')));
    }
    for action in cancel {
        if let Action::Steer(command) = action {
            handle.commands.send(command).await.unwrap();
        }
    }
    while app.session_running() {
        let wait = std::time::Duration::from_secs(60);
        match tokio::time::timeout(wait, handle.events.recv()).await {
            Ok(Some(r)) => {
                app.update(Msg::Record(r));
            }
            other => panic!("the fork did not end: {other:?}"),
        }
    }

    app.update(ch('n'));
    if app.confirm().is_some() {
        app.update(ch('y'));
    }
    assert!(app.welcome());
    // The demo model, with no demo named before one is chosen (issue 21).
    assert!(
        app.info()
            .model_label
            .starts_with("demo model: authored replies, offline ("),
        "{}",
        app.info().model_label
    );
    assert!(!app.info().model_label.contains("wordfreq"));
    // And the sandbox it would run in, probed meanwhile, as at a start.
    let probed = codeloop_sandbox::Sandbox::probe(&codeloop_sandbox::SandboxOptions::from_env());
    assert_eq!(app.info().sandbox_layers, probed.active_layers());
    assert!(!app.info().sandbox_layers.is_empty());
    let s = screen(&mut app, 160, 48);
    // The label wraps; its first words on the model's line.
    assert!(s.contains(&format!("Model: {}", &expected[..30])), "{s}");
}
