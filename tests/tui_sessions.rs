//! The welcome screen's recent sessions (issue 11): listed under the demos,
//! and Enter, r, R, F and d on the selected one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::PathBuf;

use codeloop::session::index::{SessionResult, SessionSummary};
use codeloop::tui::app::{Action, DemoEntry, StartRequest};
use codeloop::tui::{App, Msg};
use codeloop_testkit::tui_support;
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use tui_support::*;

fn summary(id: &str, task: &str, result: SessionResult, parent: Option<&str>) -> SessionSummary {
    SessionSummary {
        id: id.into(),
        started_at: "2026-11-23T01:00:00Z".into(),
        task: task.into(),
        model: "demo:roman".into(),
        provider: "demo".into(),
        result,
        iterations: 1,
        tokens: 960,
        parent: parent.map(str::to_string),
        events: 30,
        dir: PathBuf::from(format!("/sessions/{id}")),
    }
}

fn welcome() -> App {
    let mut i = info();
    i.demos = vec![DemoEntry {
        name: "roman".into(),
        title: "roman numerals (subtractive pairs)".into(),
        ..Default::default()
    }];
    i.sessions = vec![
        summary(
            "20261123-010000-b",
            "Convert roman numerals to integers.",
            SessionResult::Passed,
            Some("20261123-005000-a@12"),
        ),
        summary(
            "20261123-005000-a",
            "Sum the values of key=value lines per key.",
            SessionResult::DidNotFinish,
            None,
        ),
    ];
    App::live(i, theme())
}

#[test]
fn welcome_lists_recent_sessions_at_80x24() {
    let mut app = welcome();
    insta::assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn welcome_lists_recent_sessions_at_160x48() {
    let mut app = welcome();
    insta::assert_snapshot!(screen(&mut app, 160, 48));
}

#[test]
fn keys_open_replay_resume_and_fork_the_selected_session() {
    let mut app = welcome();
    // The fork b is listed under the session it came from, a.
    let first = PathBuf::from("/sessions/20261123-005000-a/tape.jsonl");
    let second = PathBuf::from("/sessions/20261123-010000-b/tape.jsonl");
    assert_eq!(
        app.update(key(KeyCode::Enter)),
        vec![Action::Open {
            tape: first.clone(),
            replay: false
        }]
    );
    assert!(app.update(key(KeyCode::Down)).is_empty());
    assert_eq!(
        app.update(key(KeyCode::Char('r'))),
        vec![Action::Open {
            tape: second.clone(),
            replay: true
        }]
    );
    // b lists its lineage; a, which did not finish, resumes.
    assert_eq!(
        app.update(key(KeyCode::Char('b'))),
        vec![Action::ReadLineage(second.clone())]
    );
    assert!(app.update(key(KeyCode::Up)).is_empty());
    assert_eq!(
        app.update(key(KeyCode::Char('R'))),
        vec![Action::Start(StartRequest::Resume {
            tape: first.clone()
        })]
    );
    assert!(!app.welcome(), "a resumed session is the live session");
    let mut app = welcome();
    assert_eq!(
        app.update(key(KeyCode::Char('F'))),
        vec![Action::Start(StartRequest::Fork { tape: first })]
    );
}

#[test]
fn d_deletes_only_after_a_yes() {
    let mut app = welcome();
    assert!(app.update(key(KeyCode::Char('d'))).is_empty());
    assert!(app.confirm().is_some());
    assert!(
        app.update(key(KeyCode::Char('n'))).is_empty(),
        "no: nothing is deleted"
    );
    assert!(app.confirm().is_none());
    app.update(key(KeyCode::Char('d')));
    assert_eq!(
        app.update(key(KeyCode::Char('y'))),
        vec![Action::DeleteSession(PathBuf::from(
            "/sessions/20261123-005000-a"
        ))]
    );
    app.forget_session(&PathBuf::from("/sessions/20261123-005000-a"));
    assert_eq!(app.info().sessions.len(), 1);
}

#[test]
fn e_in_the_task_pane_of_a_live_session_edits_the_task() {
    use codeloop::session::Command;
    use codeloop::tui::app::Focus;
    let mut app = welcome();
    app.update(key(KeyCode::Char('1')));
    for r in records().into_iter().take(4) {
        app.update(Msg::Record(r));
    }
    app.set_focus(Focus::Task);
    app.update(key(KeyCode::Char('e')));
    let editor = app.editor().expect("the task editor opens");
    assert_eq!(editor.target(), &codeloop::tui::app::EditTarget::Task);
    app.update(key(KeyCode::End));
    app.update(key(KeyCode::Char('!')));
    let sent = app.update(Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Char('s'),
        KeyModifiers::CONTROL,
    ))));
    assert_eq!(
        sent,
        vec![Action::Steer(Command::EditTask {
            task: "Sum the values of key=value lines per key; skip blank lines.!".into()
        })]
    );
}

#[test]
fn at_80x24_the_welcome_scrolls_to_show_the_selected_session_below_the_demos() {
    let mut i = info();
    // The bundled demos' titles: at 80x24 they fill the pane.
    i.demos = codeloop::demos::all()
        .iter()
        .map(|d| DemoEntry {
            name: d.name.into(),
            title: d.title.into(),
            ..Default::default()
        })
        .collect();
    let tasks = ["First task.", "Second task.", "Third task."];
    i.sessions = tasks
        .iter()
        .enumerate()
        .map(|(n, task)| summary(&format!("s{n}"), task, SessionResult::Passed, None))
        .collect();
    let mut app = App::live(i, theme());
    for (n, task) in tasks.iter().enumerate() {
        if n > 0 {
            app.update(key(KeyCode::Down));
        }
        let s = screen(&mut app, 80, 24);
        assert!(
            s.contains(task),
            "the selected session, {task:?}, shows:\n{s}"
        );
        assert!(
            s.contains("┃Model: demo model"),
            "the model stays at the top:\n{s}"
        );
    }
    // Where everything fits, nothing scrolls.
    let s = screen(&mut app, 160, 48);
    assert!(s.contains("Model: ") && s.contains("Third task."), "{s}");
}
