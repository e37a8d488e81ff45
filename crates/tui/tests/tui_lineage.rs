//! `b`: a session's lineage where the person is (issue 31): the tree of its
//! branches over the panes, this one marked, Enter opening another.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::PathBuf;

use codeloop_session::lineage::{Branch, Lineage};
use codeloop_session::*;
use codeloop_testkit::tui_support;
use codeloop_tui::{Action, App, Msg};
use crossterm::event::KeyCode;
use tui_support::*;

/// The tape of `tui_support` as the first session, two forks of it, and a
/// fork of the first fork whose tape could not be read.
fn lineage(current: &str) -> Lineage {
    let state = State::from_records(&records());
    let branch = |id: &str, parent: Option<(&str, u64)>, read: bool| Branch {
        id: id.into(),
        parent: parent.map(|(p, at)| (p.to_string(), at)),
        fork_point: parent.map(|(_, at)| {
            format!("record {at} (parse_line #1: its failure localized; 1 code version by then)")
        }),
        state: read.then(|| State {
            session_id: id.into(),
            ..state.clone()
        }),
        tape: Some(PathBuf::from(format!("/sessions/{id}/tape.jsonl"))),
        unread: (!read).then(|| "cannot read its tape".to_string()),
    };
    Lineage {
        branches: vec![
            (0, branch(current, None, true)),
            (1, branch("20261123-010000-b", Some((current, 15)), true)),
            (
                2,
                branch("20261123-011500-d", Some(("20261123-010000-b", 9)), false),
            ),
            (1, branch("20261123-012000-c", Some((current, 22)), true)),
        ],
        left_out: 0,
    }
}

fn opened_with_lineage() -> App {
    let mut i = info();
    i.session_dir = Some(PathBuf::from("/sessions/s"));
    let mut app = App::review(tape(), i, theme());
    let id = app.state().session_id.clone();
    app.update(ch('b'));
    app.update(Msg::LineageRead {
        tape: PathBuf::from("/sessions/s/tape.jsonl"),
        result: Ok(Some(Box::new(lineage(&id)))),
    });
    app
}

#[test]
fn the_lineage_at_80x24_and_160x48() {
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = opened_with_lineage();
        insta::assert_snapshot!(format!("lineage_{w}x{h}"), screen(&mut app, w, h));
    }
}

#[test]
fn enter_opens_another_branch_and_not_one_that_cannot_be_read() {
    let mut app = opened_with_lineage();
    assert!(app.lineage().is_some());
    // Down to the unread fork: Enter does nothing there.
    app.update(key(KeyCode::Down));
    app.update(key(KeyCode::Down));
    assert!(app.update(key(KeyCode::Enter)).is_empty());
    assert!(app.lineage().is_some());
    app.update(key(KeyCode::Down));
    assert_eq!(
        app.update(key(KeyCode::Enter)),
        vec![Action::Open {
            tape: PathBuf::from("/sessions/20261123-012000-c/tape.jsonl"),
            replay: false
        }]
    );
    assert!(app.lineage().is_none(), "closed");
    // Esc closes; a session with no lineage says so.
    let mut app = opened_with_lineage();
    app.update(key(KeyCode::Esc));
    assert!(app.lineage().is_none());
    app.update(Msg::LineageRead {
        tape: PathBuf::from("/sessions/s/tape.jsonl"),
        result: Ok(None),
    });
    assert!(app.flash().unwrap().1.contains("is no fork and has none"));
}

/// From the welcome's list nothing is on screen: Enter on the branch the
/// list chose opens it too (it did nothing, as for the one on screen).
#[test]
fn from_the_welcome_enter_opens_the_branch_the_list_chose() {
    let id = "20261123-010000-b";
    let mut i = info();
    i.sessions = vec![codeloop_session::index::SessionSummary {
        id: id.into(),
        started_at: "2026-11-23T01:00:00Z".into(),
        task: "sum key=value lines".into(),
        model: "demo:roman".into(),
        provider: "demo".into(),
        result: codeloop_session::index::SessionResult::Passed,
        iterations: 1,
        tokens: 960,
        parent: Some("s@15".into()),
        events: 30,
        dir: PathBuf::from(format!("/sessions/{id}")),
    }];
    let mut app = App::live(i, theme());
    assert!(app.welcome());
    let root = State::from_records(&records()).session_id;
    app.update(Msg::LineageRead {
        tape: PathBuf::from(format!("/sessions/{id}/tape.jsonl")),
        result: Ok(Some(Box::new(lineage(&root)))),
    });
    let s = screen(&mut app, 80, 24);
    assert!(s.contains(&format!("{id} (chosen)")), "{s}");
    assert_eq!(
        app.update(key(KeyCode::Enter)),
        vec![Action::Open {
            tape: PathBuf::from(format!("/sessions/{id}/tape.jsonl")),
            replay: false
        }]
    );
}
