//! Time travel in the workbench (issue 11): F forks the reviewed session at
//! the tape cursor, U rewinds the live session's node to its previous
//! iteration, R on a finished session says why nothing resumes, and the
//! welcome list is read again when it shows. App tests over the scripted
//! session, and rendered frames of the questions asked first.

mod tui_support;

use std::path::PathBuf;

use codeloop::session::Command;
use codeloop::session::index::{SessionResult, SessionSummary};
use codeloop::tui::app::{Action, StartRequest};
use codeloop::tui::{App, Msg};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use tui_support::*;

/// The workbench's info with one demo (the welcome screen's list has focus).
fn with_demo() -> codeloop::tui::Info {
    let mut i = info();
    i.demos = vec![codeloop::tui::app::DemoEntry {
        name: "roman".into(),
        title: "roman numerals (subtractive pairs)".into(),
    }];
    i
}

fn key(c: KeyCode) -> Msg {
    Msg::Term(TermEvent::Key(KeyEvent::new(c, KeyModifiers::NONE)))
}

fn ch(c: char) -> Msg {
    key(KeyCode::Char(c))
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
    assert!(app.update(ch('U')).is_empty(), "asked first");
    assert!(app.update(ch('x')).is_empty(), "any other key is no");
    assert_eq!(app.records().len(), records().len());

    app.update(ch('U'));
    let actions = app.update(key(KeyCode::Enter));
    assert_eq!(
        actions,
        vec![
            // The branch left behind ends, cancelled, on its own tape.
            Action::Steer(Command::Cancel),
            Action::Start(StartRequest::ForkAt {
                tape: PathBuf::from(DIR).join("tape.jsonl"),
                at
            })
        ]
    );
    assert!(app.records().is_empty(), "the new branch streams in");
    assert!(!app.welcome());

    // Before a session starts there is nothing to rewind: nothing asked.
    let mut app = App::live(with_demo(), theme());
    assert!(app.update(ch('U')).is_empty());
    assert!(app.records().is_empty() && app.welcome());
}

#[test]
fn the_rewind_question_at_80x24_and_160x48() {
    let mut app = live();
    app.select_node("parse_line".into());
    app.update(ch('U'));
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
    assert_eq!(app.message().unwrap().title, "Nothing to resume");
}

#[test]
fn a_new_session_reads_the_list_again_and_shows_the_one_just_ended() {
    let mut app = live();
    app.update(Msg::EngineDone(Ok(())));
    let actions = app.update(ch('n'));
    assert_eq!(actions, vec![Action::ListSessions]);
    assert!(app.welcome());
    // What the event loop does with it: the index's list, newest first.
    app.set_sessions(vec![summary("20261123-020000-c", SessionResult::Passed)]);
    let shown = screen(&mut app, 160, 48);
    assert!(shown.contains("Recent sessions"), "{shown}");
    assert!(shown.contains("Convert roman numerals"), "{shown}");
}
