//! The command palette's actions beyond the keys: the model profile, the
//! workers and the cache bypass for the next session (a second list for
//! values, the choice in the status bar, handed to the starter), the export
//! of the open session, and the focused pane's own actions by name.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop_session::Event;
use codeloop_tui::app::{CodeTab, ExportFormat, Focus, SessionChoices, StartRequest};
use codeloop_tui::panes::palette::ValueKind;
use codeloop_tui::{Action, App, Info};
use crossterm::event::KeyCode;
use tui_support::*;

/// Open the palette, type `query`, press Enter.
fn choose(app: &mut App, query: &str) -> Vec<Action> {
    let mut actions = Vec::new();
    if app.palette().is_none() {
        actions.extend(app.update(ch(':')));
    }
    for c in query.chars() {
        actions.extend(app.update(ch(c)));
    }
    actions.extend(app.update(key(KeyCode::Enter)));
    actions
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

fn welcome_with_profiles() -> App {
    let info = Info {
        profiles: vec!["hosted".into(), "local".into()],
        ..info()
    };
    welcome(info)
}

/// The welcome screen, out of the task editor (where `:` is text).
fn welcome(info: Info) -> App {
    let mut app = App::live(info, theme());
    app.update(key(KeyCode::Esc));
    assert_eq!(app.focus(), Focus::Welcome);
    app
}

#[test]
fn workers_are_chosen_from_a_second_list_and_shown_until_changed() {
    let mut app = welcome_with_profiles();
    assert!(choose(&mut app, "workers").is_empty());
    assert_eq!(
        app.palette().and_then(|p| p.choosing()),
        Some(ValueKind::Workers)
    );
    let values: Vec<String> = app
        .palette()
        .unwrap()
        .matches()
        .iter()
        .map(|e| e.does.clone())
        .collect();
    assert_eq!(
        values,
        [
            "1 worker",
            "2 workers",
            "3 workers",
            "4 workers",
            "6 workers",
            "8 workers"
        ]
    );
    let actions = choose(&mut app, "4");
    assert!(app.palette().is_none());
    assert_eq!(
        configured(&actions),
        vec![SessionChoices {
            workers: Some(4),
            ..SessionChoices::default()
        }]
    );
    let s = screen(&mut app, 160, 48);
    assert!(s.contains("next: 4 workers"), "{s}");

    // Esc in the second list goes back to the first, with its query.
    choose(&mut app, "workers");
    app.update(key(KeyCode::Esc));
    let palette = app.palette().expect("still open");
    assert_eq!(palette.choosing(), None);
    assert_eq!(palette.query(), "workers");
}

#[test]
fn a_model_profile_of_the_config_is_chosen_for_the_next_session() {
    let mut app = welcome_with_profiles();
    choose(&mut app, "model profile");
    assert_eq!(
        app.palette().and_then(|p| p.choosing()),
        Some(ValueKind::Profile)
    );
    let actions = choose(&mut app, "local");
    assert_eq!(
        configured(&actions),
        vec![SessionChoices {
            profile: Some("local".into()),
            ..SessionChoices::default()
        }]
    );
    assert!(screen(&mut app, 160, 48).contains("next: profile local"));

    // Without profiles the second list says where they would come from.
    let mut app = welcome(info());
    choose(&mut app, "model profile");
    let s = screen(&mut app, 160, 48);
    assert!(
        s.contains("the config has no [models.NAME] profiles"),
        "{s}"
    );
    // All of it at 80x24 too (issue 21: it was cut at the popup's edge).
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("has an example)"), "{s}");
}

#[test]
fn the_cache_bypass_is_for_the_next_task_only() {
    let mut app = welcome_with_profiles();
    let actions = choose(&mut app, "cache: don't");
    assert_eq!(
        configured(&actions),
        vec![SessionChoices {
            no_cache: true,
            ..SessionChoices::default()
        }]
    );
    assert!(app.session_choices().no_cache);
    assert!(screen(&mut app, 160, 48).contains("next: no cache"));
    // The palette now offers to undo it.
    app.update(ch(':'));
    let offered: Vec<String> = app
        .palette()
        .unwrap()
        .matches()
        .iter()
        .map(|e| e.does.clone())
        .filter(|d| d.starts_with("cache:"))
        .collect();
    assert_eq!(
        offered,
        ["cache: use it again for the next task (now bypassed)"]
    );
    app.update(key(KeyCode::Esc));

    // A task starts with it, and the next one uses the cache again.
    app.update(ch('i'));
    app.task_mut().insert_str("sum key=value lines");
    let actions = app.update(ctrl('s'));
    assert!(matches!(
        &actions[..],
        [Action::Start(StartRequest::Task { .. })]
    ));
    assert!(!app.session_choices().no_cache);
    assert!(!screen(&mut app, 160, 48).contains("no cache"));
}

#[test]
fn export_writes_the_session_in_the_chosen_format() {
    let mut app = App::review(tape(), info(), theme());
    choose(&mut app, "export");
    assert_eq!(
        app.palette().and_then(|p| p.choosing()),
        Some(ValueKind::Export)
    );
    let actions = choose(&mut app, "html");
    let [Action::Export { format, state, .. }] = &actions[..] else {
        panic!("no export asked for: {actions:?}");
    };
    assert_eq!(*format, ExportFormat::Html);
    // The whole session, whatever the cursor.
    assert_eq!(state.events_applied as usize, app.records().len());

    // Before a session there is nothing to export.
    let mut app = welcome(info());
    app.update(ch(':'));
    assert!(
        !app.palette()
            .unwrap()
            .matches()
            .iter()
            .any(|e| e.does.starts_with("export"))
    );
}

#[test]
fn a_recorded_session_takes_no_choice_for_a_next_session() {
    let mut app = App::review(tape(), info(), theme());
    choose(&mut app, "workers");
    let actions = choose(&mut app, "2");
    assert!(configured(&actions).is_empty());
    assert!(
        app.flash()
            .is_some_and(|(_, t)| t.contains("this is a recorded session")),
        "{:?}",
        app.flash()
    );
}

#[test]
fn the_focused_panes_actions_are_in_the_palette_by_name() {
    let mut app = App::review(tape(), info(), theme());
    app.set_cursor(
        app.records()
            .iter()
            .position(|r| matches!(r.event, Event::Localized(_)))
            .unwrap()
            + 1,
    );
    app.set_focus(Focus::Code);
    assert_eq!(app.panes().code.tab(), CodeTab::Code);
    choose(&mut app, "tests / code (Code)");
    assert!(app.palette().is_none());
    assert_eq!(
        app.panes().code.tab(),
        CodeTab::Tests,
        "the palette did what t does"
    );
}

#[test]
fn the_second_list_on_screen() {
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = App::review(tape(), info(), theme());
        choose(&mut app, "export");
        insta::assert_snapshot!(format!("export_formats_{w}x{h}"), screen(&mut app, w, h));
    }
}

#[test]
fn ctrl_u_and_ctrl_w_edit_the_palette_query_and_the_task_as_readline_does() {
    let mut app = App::review(tape(), info(), theme());
    app.update(ch(':'));
    for c in "step mode".chars() {
        app.update(ch(c));
    }
    app.update(ctrl('w'));
    assert_eq!(app.palette().unwrap().query(), "step ");
    app.update(ctrl('u'));
    assert_eq!(app.palette().unwrap().query(), "", "no letters inserted");

    let mut app = App::live(info(), theme());
    app.task_mut().insert_str("count the words");
    app.update(ctrl('w'));
    assert_eq!(app.panes().task.text(), "count the ");
    app.update(ctrl('u'));
    assert_eq!(
        app.panes().task.text(),
        "",
        "Ctrl-U deletes, it does not undo"
    );
}

#[test]
fn the_palette_offers_each_bundled_demo_by_name_and_no_more() {
    let mut i = info();
    i.demos = ["wordfreq", "roman"]
        .map(|name| codeloop_tui::app::DemoEntry {
            name: name.into(),
            title: "t".into(),
            ..Default::default()
        })
        .to_vec();
    let mut app = welcome(i);
    app.update(ch(':'));
    for c in "bundled demo".chars() {
        app.update(ch(c));
    }
    let s = screen(&mut app, 160, 48);
    assert!(
        s.contains("run a bundled demo (Workflow): 1 wordfreq"),
        "{s}"
    );
    assert!(s.contains("run a bundled demo (Workflow): 2 roman"), "{s}");
    // Once each, and no demo 3 to 9.
    assert_eq!(s.matches("bundled demo (Workflow): ").count(), 2, "{s}");
    assert!(!s.contains("leave it for a bundled demo"), "{s}");
    app.update(key(KeyCode::Esc));
    let actions = choose(&mut app, "roman");
    assert!(
        matches!(&actions[..], [Action::Start(StartRequest::Demo { name, .. })] if name == "roman"),
        "{actions:?}"
    );
}
