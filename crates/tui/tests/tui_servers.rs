//! Several model servers answer on this machine and none is configured:
//! the workbench asks which one the next session uses as it opens, again
//! from the palette, and when a task is sent before a choice (which then
//! starts); the choice goes to the starter and names the model on the
//! welcome screen.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop_tui::app::{DemoModel, FoundServer, SessionChoices, StartRequest};
use codeloop_tui::{Action, App, Info};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tui_support::*;

fn found() -> Vec<FoundServer> {
    vec![
        FoundServer {
            base_url: "http://localhost:8080/v1".into(),
            server: "llama.cpp's llama-server".into(),
            model: "smollm2".into(),
        },
        FoundServer {
            base_url: "http://localhost:8000/v1".into(),
            server: "llama-cpp-python's server".into(),
            model: "qwen2.5-coder".into(),
        },
    ]
}

/// What `codeloop` knows as it opens when two servers answer: the demo
/// model stands in (its demos play).
fn several() -> Info {
    Info {
        model_label: "demo model: authored replies, offline (1-5 play the bundled demos); 2 model servers answer on this machine: choose one first".into(),
        demo_model: Some(DemoModel {
            task: "sum key=value lines".into(),
            refusal: "no model is available for your task".into(),
        }),
        servers: found(),
        ..info()
    }
}

/// The live workbench as it opens, the question asked.
fn opened_with(info: Info) -> App {
    let mut app = App::live(info, theme());
    app.ask_which_server();
    app
}

fn opened() -> App {
    opened_with(several())
}

fn configured(actions: &[Action]) -> Vec<SessionChoices> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Configure(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

fn ctrl_s() -> codeloop_tui::Msg {
    codeloop_tui::Msg::Term(crossterm::event::Event::Key(KeyEvent::new(
        KeyCode::Char('s'),
        KeyModifiers::CONTROL,
    )))
}

#[test]
fn the_question_as_the_workbench_opens() {
    let mut app = opened();
    insta::assert_snapshot!("servers_question_80x24", screen(&mut app, 80, 24));
    insta::assert_snapshot!("servers_question_160x48", screen(&mut app, 160, 48));
}

#[test]
fn the_server_picked_goes_to_the_starter_and_names_the_model() {
    let mut app = opened();
    let actions = press(&mut app, [key(KeyCode::Down), key(KeyCode::Enter)]);
    let chosen = configured(&actions);
    assert_eq!(chosen.len(), 1, "{actions:?}");
    assert_eq!(chosen[0].server.as_ref(), Some(&found()[1]));
    assert_eq!(app.session_choices().server.as_ref(), Some(&found()[1]));
    let s = screen(&mut app, 160, 48);
    assert!(!s.contains("Which model server?"), "closed\n{s}");
    assert!(
        s.contains("qwen2.5-coder at http://localhost:8000/v1 (llama-cpp-python's server, chosen of 2 found"),
        "{s}"
    );
    // A task of one's own now goes to it.
    app.task_mut().insert_str("count the words of a file");
    let actions = app.update(ctrl_s());
    assert!(
        actions.iter().any(|a| matches!(
            a,
            Action::Start(StartRequest::Task { task, .. }) if task == "count the words of a file"
        )),
        "{actions:?}"
    );
    // A number uses that one at once; a profile chosen later replaces it
    // (a profile names its own server).
    let mut app = opened_with(Info {
        profiles: vec!["local".into()],
        ..several()
    });
    press(&mut app, [ch('1')]);
    assert_eq!(app.session_choices().server.as_ref(), Some(&found()[0]));
    press(&mut app, [key(KeyCode::Esc), ch(':')]);
    for c in "model profile".chars() {
        press(&mut app, [ch(c)]);
    }
    press(&mut app, [key(KeyCode::Enter)]);
    let actions = press(&mut app, [key(KeyCode::Enter)]);
    let chosen = configured(&actions);
    assert_eq!(chosen.len(), 1, "{actions:?}");
    assert_eq!(chosen[0].profile.as_deref(), Some("local"));
    assert!(chosen[0].server.is_none());
}

#[test]
fn a_task_sent_before_a_choice_waits_for_it_then_starts() {
    let mut app = opened();
    // Later: the demos play, nothing is chosen.
    let actions = press(&mut app, [key(KeyCode::Esc)]);
    assert!(configured(&actions).is_empty());
    assert!(app.session_choices().server.is_none());
    assert!(!screen(&mut app, 160, 48).contains("Which model server?"));
    app.task_mut().insert_str("count the words of a file");
    let actions = app.update(ctrl_s());
    assert!(actions.is_empty(), "nothing starts yet: {actions:?}");
    let s = screen(&mut app, 160, 48);
    assert!(s.contains("Which model server?"), "asked again\n{s}");
    let actions = press(&mut app, [ch('2')]);
    assert_eq!(configured(&actions)[0].server.as_ref(), Some(&found()[1]));
    assert!(
        actions.iter().any(|a| matches!(
            a,
            Action::Start(StartRequest::Task { task, .. }) if task == "count the words of a file"
        )),
        "the task starts once the server is chosen: {actions:?}"
    );
}

#[test]
fn the_palette_asks_again_and_only_when_several_answer() {
    let mut app = opened();
    press(&mut app, [key(KeyCode::Esc)]);
    // Out of the task editor, where `:` is text.
    press(&mut app, [key(KeyCode::Esc)]);
    press(&mut app, [ch(':')]);
    for c in "model server".chars() {
        press(&mut app, [ch(c)]);
    }
    let offered: Vec<String> = app
        .palette()
        .unwrap()
        .matches()
        .iter()
        .map(|e| e.does.clone())
        .collect();
    assert_eq!(
        offered.first().map(String::as_str),
        Some("model server for the next session (several answer here)…"),
        "{offered:?}"
    );
    press(&mut app, [key(KeyCode::Enter)]);
    let s = screen(&mut app, 160, 48);
    assert!(s.contains("Which model server?"), "{s}");

    // One server, or none: nothing to ask.
    let mut alone = App::live(info(), theme());
    alone.ask_which_server();
    press(&mut alone, [key(KeyCode::Esc), ch(':')]);
    for c in "model server".chars() {
        press(&mut alone, [ch(c)]);
    }
    assert!(
        alone
            .palette()
            .unwrap()
            .matches()
            .iter()
            .all(|e| !e.does.starts_with("model server")),
    );
}
