//! The tools around the panes: `o` hands the code to the person's editor
//! and takes the edit back as a command.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop_session::{Command, Event, NoticeLevel};
use codeloop_tui::app::{CodeTab, EditTarget, Focus, StartRequest};
use codeloop_tui::external_editor::{EditorOutcome, ExternalEdit};
use codeloop_tui::{Action, App, Msg};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use tui_support::*;

fn ch(c: char) -> Msg {
    Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::NONE,
    )))
}

/// A live app fed with the scripted session up to its first localized failure.
fn live_at_failure() -> App {
    let mut app = App::live(info(), theme());
    app.task_mut().insert_str("sum key=value lines");
    let actions = app.update(ctrl('s'));
    assert!(matches!(
        &actions[..],
        [Action::Start(StartRequest::Task { .. })]
    ));
    let n = records()
        .iter()
        .position(|r| matches!(r.event, Event::Localized(_)))
        .unwrap()
        + 1;
    for r in records().into_iter().take(n) {
        app.update(Msg::Record(r));
    }
    app
}

fn open_editor(app: &mut App) -> ExternalEdit {
    match &app.update(ch('o'))[..] {
        [Action::OpenEditor(edit)] => edit.clone(),
        other => panic!("expected OpenEditor, got {other:?}"),
    }
}

#[test]
fn o_hands_the_code_to_the_editor_and_the_edit_comes_back_as_a_command() {
    let mut app = live_at_failure();
    let edit = open_editor(&mut app);
    assert_eq!(
        edit.target,
        EditTarget::Code {
            node: "parse_line".into()
        }
    );
    assert!(edit.text.contains("line.split(\"=\")"), "{}", edit.text);
    let edited = edit.text.replace("split(\"=\")", "split(\"=\", 1)");
    let a = app.update(Msg::EditorDone {
        target: edit.target,
        outcome: EditorOutcome::Edited(edited.clone()),
    });
    match &a[..] {
        [Action::Steer(Command::EditCode { node, code })] => {
            assert_eq!(node, "parse_line");
            assert_eq!(code, &edited);
        }
        other => panic!("expected one EditCode, got {other:?}"),
    }
}

#[test]
fn on_the_tests_tab_o_edits_the_tests() {
    let mut app = live_at_failure();
    app.set_focus(Focus::Code);
    app.update(ch('t'));
    assert_eq!(app.panes().code.tab(), CodeTab::Tests);
    let edit = open_editor(&mut app);
    assert_eq!(edit.text, PARSE_TESTS);
    let a = app.update(Msg::EditorDone {
        target: edit.target,
        outcome: EditorOutcome::Edited(format!("{PARSE_TESTS}# more\n")),
    });
    assert!(
        matches!(&a[..], [Action::Steer(Command::EditTests { node, code })] if node == "parse_line" && code.ends_with("# more\n"))
    );
}

#[test]
fn an_unchanged_file_sends_nothing_and_says_so() {
    let mut app = live_at_failure();
    let edit = open_editor(&mut app);
    let a = app.update(Msg::EditorDone {
        target: edit.target,
        outcome: EditorOutcome::Unchanged,
    });
    assert!(a.is_empty(), "{a:?}");
    let (level, text) = app.flash().unwrap();
    assert_eq!(*level, NoticeLevel::Info);
    assert!(text.contains("nothing sent"), "{text}");
}

#[test]
fn a_failed_editor_says_so_and_keeps_what_it_wrote_in_the_editor_popup() {
    let mut app = live_at_failure();
    let edit = open_editor(&mut app);
    let a = app.update(Msg::EditorDone {
        target: edit.target.clone(),
        outcome: EditorOutcome::Failed {
            message: "the editor `vim` failed (exit status: 1)".into(),
            text: Some("x = 2\n".into()),
        },
    });
    assert!(a.is_empty(), "nothing is sent by a failed editor: {a:?}");
    let (level, text) = app.flash().unwrap();
    assert_eq!(*level, NoticeLevel::Error);
    assert!(text.contains("`vim` failed"), "{text}");
    let popup = app.editor().expect("the text is kept in the editor popup");
    assert_eq!(popup.target(), &edit.target);
    assert_eq!(popup.textarea().lines()[0], "x = 2");
    // Sending it from there is the ordinary edit.
    let a = app.update(ctrl('s'));
    assert!(matches!(&a[..], [Action::Steer(Command::EditCode { code, .. })] if code == "x = 2\n"));
}

#[test]
fn o_is_read_only_in_review() {
    let mut app = App::review(tape(), info(), theme());
    assert!(app.update(ch('o')).is_empty());
    assert!(app.flash().unwrap().1.contains("read-only"));
}

/// After a failed editor: the error in the status line, the text kept in the
/// editor popup, at both sizes.
#[test]
fn a_failed_editor_on_screen() {
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = live_at_failure();
        let edit = open_editor(&mut app);
        app.update(Msg::EditorDone {
            target: edit.target,
            outcome: EditorOutcome::Failed {
                message: "the editor `vim` failed (exit status: 1)".into(),
                text: Some(edit.text.replace("split(\"=\")", "split(\"=\", 1)")),
            },
        });
        insta::assert_snapshot!(format!("editor_failed_{w}x{h}"), screen(&mut app, w, h));
    }
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        app.update(ch(c));
    }
}

#[test]
fn the_palette_finds_an_action_by_its_words_and_does_it() {
    let mut app = App::review(tape(), info(), theme());
    app.update(ch(':'));
    assert!(app.palette().is_some());
    typed(&mut app, "zoom foc");
    let first = app.palette().unwrap().matches()[0].does.clone();
    assert_eq!(first, "zoom the focused pane (Esc back)");
    app.update(Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Enter,
        KeyModifiers::NONE,
    ))));
    assert!(app.palette().is_none());
    assert!(app.zoomed(), "the palette did what z does");
}

#[test]
fn ctrl_p_opens_the_palette_and_its_steering_actions_become_commands() {
    let mut app = live_at_failure();
    app.update(ctrl('p'));
    typed(&mut app, "qqqq");
    assert!(
        app.palette().unwrap().matches().is_empty(),
        "no row has four q"
    );
    for _ in 0..4 {
        app.update(Msg::Term(TermEvent::Key(KeyEvent::new(
            KeyCode::Backspace,
            KeyModifiers::NONE,
        ))));
    }
    typed(&mut app, "re-run sel");
    let a = app.update(Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Enter,
        KeyModifiers::NONE,
    ))));
    assert!(
        matches!(&a[..], [Action::Steer(Command::RerunNode { node })] if node == "parse_line"),
        "{a:?}"
    );
    // Esc closes it and does nothing.
    app.update(ch(':'));
    let a = app.update(Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Esc,
        KeyModifiers::NONE,
    ))));
    assert!(a.is_empty() && app.palette().is_none());
}

#[test]
fn the_palette_on_screen() {
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = live_at_failure();
        app.update(ch(':'));
        typed(&mut app, "step");
        insta::assert_snapshot!(format!("palette_{w}x{h}"), screen(&mut app, w, h));
    }
}

#[test]
fn the_palette_switches_the_theme_which_no_key_does() {
    let mut app = App::review(tape(), info(), theme());
    let before = app.theme().text;
    app.update(ch(':'));
    typed(&mut app, "theme light");
    app.update(Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Enter,
        KeyModifiers::NONE,
    ))));
    assert!(
        app.flash().unwrap().1.starts_with("theme: light"),
        "{:?}",
        app.flash()
    );
    assert_ne!(
        app.theme().text,
        before,
        "the light theme's text differs from the dark one's"
    );
}
