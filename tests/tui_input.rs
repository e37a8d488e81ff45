//! What the person types is never lost to one keystroke, and what a run
//! printed can be read whole (issue 13: items 2, 7 and 11).

mod tui_support;

use codeloop::tui::app::{Confirm, DemoEntry, Focus, Mode, StartRequest};
use codeloop::tui::{Action, App, Msg};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use tui_support::*;

fn key(c: KeyCode) -> Msg {
    Msg::Term(TermEvent::Key(KeyEvent::new(c, KeyModifiers::NONE)))
}
fn ch(c: char) -> Msg {
    key(KeyCode::Char(c))
}
fn press(app: &mut App, msgs: impl IntoIterator<Item = Msg>) -> Vec<Action> {
    msgs.into_iter().flat_map(|m| app.update(m)).collect()
}

fn welcome_with_demos() -> App {
    let mut i = info();
    i.demos = (1..=4)
        .map(|n| DemoEntry {
            name: format!("demo-{n}"),
            title: format!("demo {n}"),
        })
        .collect();
    App::live(i, theme())
}

#[test]
fn a_demo_key_after_typing_a_task_asks_before_the_draft_is_dropped() {
    let mut app = welcome_with_demos();
    app.update(ch('i'));
    assert_eq!(app.focus(), Focus::Task);
    press(&mut app, "count words".chars().map(ch));
    app.update(key(KeyCode::Esc));
    assert_eq!(app.focus(), Focus::Graph);
    // `2` would start a demo: it asks, and no keeps the draft.
    assert!(app.update(ch('2')).is_empty());
    assert_eq!(app.confirm(), Some(Confirm::DiscardDraft));
    assert!(app.update(ch('n')).is_empty());
    assert_eq!(app.confirm(), None);
    assert_eq!(app.task().text(), "count words");
    assert!(matches!(app.mode(), Mode::Live(l) if !l.started));
    // Yes starts the demo.
    app.update(ch('2'));
    let actions = app.update(ch('y'));
    assert_eq!(
        actions,
        vec![Action::Start(StartRequest::Demo {
            name: "demo-2".into(),
            step_mode: false,
        })]
    );
}

#[test]
fn without_a_draft_a_demo_starts_at_once() {
    let mut app = welcome_with_demos();
    let actions = app.update(ch('3'));
    assert!(
        matches!(&actions[..], [Action::Start(StartRequest::Demo { name, .. })] if name == "demo-3")
    );
    assert_eq!(app.confirm(), None);
}

#[test]
fn opening_resuming_or_forking_a_listed_session_asks_before_the_draft_is_dropped() {
    use codeloop::session::index::{SessionResult, SessionSummary};
    let mut i = info();
    i.sessions = vec![SessionSummary {
        id: "20261123-010000-a".into(),
        started_at: "2026-11-23T01:00:00Z".into(),
        task: "sum lines".into(),
        model: "demo:roman".into(),
        provider: "demo".into(),
        result: SessionResult::Passed,
        iterations: 1,
        tokens: 960,
        parent: None,
        events: 30,
        dir: "/sessions/20261123-010000-a".into(),
    }];
    for (k, what) in [
        (KeyCode::Enter, "open"),
        (KeyCode::Char('r'), "replay"),
        (KeyCode::Char('R'), "resume"),
        (KeyCode::Char('F'), "fork"),
    ] {
        let mut app = App::live(i.clone(), theme());
        app.task_mut().insert_str("my own task");
        app.set_focus(Focus::Graph);
        assert!(app.update(key(k)).is_empty(), "{what} asks first");
        assert_eq!(app.confirm(), Some(Confirm::DiscardDraft), "{what}");
        app.update(ch('n'));
        assert_eq!(app.task().text(), "my own task", "{what}");
        app.update(key(k));
        let actions = app.update(ch('y'));
        assert_eq!(actions.len(), 1, "{what}: {actions:?}");
        let expected = match what {
            "open" | "replay" => {
                matches!(&actions[0], Action::Open { replay, .. } if *replay == (what == "replay"))
            }
            "resume" => matches!(&actions[0], Action::Start(StartRequest::Resume { .. })),
            _ => matches!(&actions[0], Action::Start(StartRequest::Fork { .. })),
        };
        assert!(expected, "{what}: {actions:?}");
    }
}
