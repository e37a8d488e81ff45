//! What the workbench tells the person beyond the panes: no model for their
//! own task, a tape that did not finish, and the terminal's bell.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop::session::{
    AttemptEvent, CodeEvent, Event, FinishedEvent, ModelReplyEvent, PausedEvent, Purpose,
    SkippedLine, Step, TapeContents, TestsChangedEvent,
};
use codeloop::tui::app::DemoModel;
use codeloop::tui::notify::Desktop;
use codeloop::tui::{Action, App, Msg};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use tui_support::*;

fn ctrl_s() -> Msg {
    Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Char('s'),
        KeyModifiers::CONTROL,
    )))
}

fn demo_app() -> App {
    let mut i = info();
    i.demo_model = Some(DemoModel {
        task: "sum key=value lines".into(),
        refusal: "no model is available for your task: none configured.\nConfigure a model: --base-url URL".into(),
    });
    App::live(i, theme())
}

#[test]
fn the_demo_model_never_answers_the_persons_own_task() {
    let mut app = demo_app();
    app.task_mut().insert_str("count the words of a file");
    let actions = app.update(ctrl_s());
    assert_eq!(actions, Vec::<Action>::new(), "no session starts");
    assert!(app.welcome(), "still on the welcome screen, the draft kept");
    assert_eq!(app.panes().task.text(), "count the words of a file");
    let text = screen(&mut app, 100, 30);
    assert!(text.contains("No model for your task"), "{text}");
    assert!(text.contains("Configure a model: --base-url URL"), "{text}");
    // Any key closes the message; the demo's own task still starts.
    app.update(Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Esc,
        KeyModifiers::NONE,
    ))));
    assert!(app.message().is_none());
    let mut app = demo_app();
    app.task_mut().insert_str("sum key=value lines");
    let actions = app.update(ctrl_s());
    assert!(
        matches!(&actions[..], [Action::Start(_)]),
        "the demo's own task starts: {actions:?}"
    );
}

#[test]
fn a_tape_without_its_end_opens_marked_did_not_finish_with_its_damage() {
    let mut records = tape().records;
    records.retain(|r| !matches!(r.event, Event::Finished(_)));
    let contents = TapeContents {
        records,
        truncated_tail: None,
        skipped: vec![SkippedLine {
            line: 7,
            message: "expected value".into(),
        }],
    };
    let mut app = App::review(contents, info(), theme());
    assert!(app.info().unfinished);
    let text = screen(&mut app, 160, 48);
    assert!(text.contains(" did not finish "), "{text}");
    assert!(
        text.contains("did not finish: the tape has no end"),
        "{text}"
    );
    assert!(
        text.contains("tape damage: 1 unreadable line skipped (line 7: expected value)"),
        "{text}"
    );

    let mut whole = App::review(tape(), info(), theme());
    assert!(!whole.info().unfinished);
    assert!(!screen(&mut whole, 160, 48).contains("did not finish"));
}

fn notices(notify: bool) -> Vec<String> {
    let mut i = info();
    i.notify = notify;
    let mut app = App::live(i, theme());
    app.task_mut().insert_str("sum key=value lines");
    app.update(ctrl_s());
    let mut out = Vec::new();
    let mut records = records();
    // The engine pauses for approval before the first model call.
    let mut paused = records[0].clone();
    paused.event = Event::Paused(PausedEvent {
        step: Step::ModelCall {
            purpose: Purpose::Plan,
            again: None,
        },
    });
    records.insert(1, paused);
    for r in records {
        for a in app.update(Msg::Record(r)) {
            if let Action::Notify(text) = a {
                out.push(text);
            }
        }
    }
    out
}

#[test]
fn the_terminal_rings_on_a_pause_and_at_the_end_unless_turned_off() {
    let rung = notices(true);
    assert_eq!(rung.len(), 2, "{rung:?}");
    assert!(
        rung[0].starts_with("waiting for you: paused before"),
        "{rung:?}"
    );
    assert!(rung[1].starts_with("session ended:"), "{rung:?}");
    assert_eq!(notices(false), Vec::<String>::new());
}

#[test]
fn the_bell_is_bel_and_a_desktop_notification_where_the_terminal_shows_one() {
    assert_eq!(
        Desktop::detect(Some("iTerm.app"), Some("xterm-256color"), false),
        Desktop::Osc9
    );
    assert_eq!(
        Desktop::detect(None, Some("xterm-kitty"), false),
        Desktop::Osc9
    );
    assert_eq!(Desktop::detect(None, Some("foot"), false), Desktop::Osc777);
    assert_eq!(
        Desktop::detect(None, Some("xterm-256color"), true),
        Desktop::Osc777
    );
    // tmux would swallow the OSC: BEL alone, which tmux passes on.
    assert_eq!(
        Desktop::detect(Some("iTerm.app"), Some("tmux-256color"), false),
        Desktop::None
    );
    assert_eq!(
        Desktop::detect(None, Some("xterm-256color"), false),
        Desktop::None
    );
    assert_eq!(Desktop::None.escape("x"), "\x07");
    assert_eq!(
        Desktop::Osc9.escape("a;b\x1bc"),
        "\x07\x1b]9;codeloop: a b c\x07"
    );
    assert_eq!(
        Desktop::Osc777.escape("done"),
        "\x07\x1b]777;notify;codeloop;done\x07"
    );
}

#[test]
fn y_copies_the_selected_nodes_code_through_osc52() {
    let mut app = App::review(tape(), info(), theme());
    app.select_node("parse_line".into());
    let actions = app.update(Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Char('y'),
        KeyModifiers::NONE,
    ))));
    let code = app.state().nodes["parse_line"]
        .versions
        .last()
        .unwrap()
        .code
        .clone();
    assert_eq!(actions, vec![Action::Copy(code)]);
    assert!(
        screen(&mut app, 160, 48)
            .contains("copied parse_line's code (iteration 2) to the clipboard")
    );
    assert_eq!(
        codeloop::tui::notify::osc52_for("hi!\n", false),
        "\x1b]52;c;aGkhCg==\x07"
    );
    assert_eq!(
        codeloop::tui::notify::osc52_for("ab", false),
        "\x1b]52;c;YWI=\x07"
    );
}

#[test]
fn the_end_of_a_session_says_where_the_program_tests_report_and_tape_are() {
    let mut contents = tape();
    for r in &mut contents.records {
        if let Event::Finished(FinishedEvent { result }) = &mut r.event {
            result.output_dir = Some("/data/s1/out".into());
        }
    }
    let mut i = info();
    i.session_dir = Some("/data/s1".into());
    let mut app = App::review(contents, i, theme());
    let text = screen(&mut app, 160, 48);
    for place in [
        "in /data/s1:",
        "out/program.py · out/test_*.py · out/report.md · tape.jsonl",
    ] {
        assert!(text.contains(place), "{place}\n{text}");
    }
}

#[test]
fn the_persons_own_edits_are_not_counted_as_repairs() {
    use codeloop::session::{CodeSource, Record};
    let mut contents = tape();
    let before = App::review(tape(), info(), theme())
        .state()
        .repair_iterations();
    let last = contents.records.last().unwrap().clone();
    contents.records.push(Record {
        seq: last.seq + 1,
        t_ms: last.t_ms,
        event: Event::Code(CodeEvent {
            node: "sum_by_key".into(),
            iteration: 2,
            code: "def sum_by_key(lines):\n    return {}\n".into(),
            source: CodeSource::Edit,
            notes: Vec::new(),
        }),
    });
    let mut app = App::review(contents, info(), theme());
    assert_eq!(
        app.state().repair_iterations(),
        before,
        "an edit is not a repair"
    );
    let text = screen(&mut app, 160, 48);
    assert!(text.contains(&format!("History {before} repair")), "{text}");
}

#[test]
fn the_demo_keys_offered_are_the_demos_there_are() {
    let rows: Vec<_> = codeloop::tui::keymap::rows(codeloop::tui::panes::welcome::KEYS).collect();
    assert_eq!(rows[0].does, "run a bundled demo");
    assert_eq!(rows[0].label, format!("1-{}", codeloop::demos::all().len()));
}

/// History shows what the repair loop did beyond the code: the kind of an
/// attempt (a fresh start), that a call's reasoning was kept apart, and a
/// test the model changed, marked as such, with its changed lines.
#[test]
fn history_shows_a_fresh_start_the_reasoning_kept_apart_and_a_test_changed_by_the_model() {
    use codeloop::session::AttemptKind;
    let mut events = events();
    let reflection = events
        .iter()
        .position(|e| matches!(e, Event::Reflection(_)))
        .unwrap();
    if let Some(Event::ModelReply(ModelReplyEvent { reasoning, .. })) = events[..reflection]
        .iter_mut()
        .rev()
        .find(|e| matches!(e, Event::ModelReply(_)))
    {
        *reasoning = "maybe split?".into();
    }
    events.insert(
        reflection,
        Event::TestsChanged(TestsChangedEvent {
            node: "parse_line".into(),
            iteration: 1,
            old: "assert parse_line('') == ('', 0)\n".into(),
            new: "assert parse_line('') is None\n".into(),
            reason: "a blank line has no value".into(),
            applied: true,
            rejected_because: None,
        }),
    );
    let code2 = events
        .iter()
        .position(|e| matches!(e, Event::Code(CodeEvent { iteration: 2, .. })))
        .unwrap();
    events.insert(
        code2,
        Event::Attempt(AttemptEvent {
            node: "parse_line".into(),
            iteration: 2,
            kind: AttemptKind::FreshStart,
            runtime_values: true,
        }),
    );
    let records = events
        .into_iter()
        .enumerate()
        .map(|(i, event)| codeloop::session::Record {
            seq: i as u64,
            t_ms: i as u64 * 150,
            event,
        })
        .collect();
    let contents = TapeContents {
        records,
        truncated_tail: None,
        skipped: Vec::new(),
    };
    let mut app = App::review(contents, info(), theme());
    let text = screen(&mut app, 200, 60);
    assert!(
        text.contains("parse_line #2 by the model, fresh start"),
        "{text}"
    );
    assert!(
        text.contains("12 characters of reasoning, kept apart"),
        "{text}"
    );
    assert!(
        text.contains("✎ tests changed by the model (applied)"),
        "{text}"
    );
    assert!(
        text.contains("- assert parse_line('') == ('', 0)"),
        "{text}"
    );
    assert!(text.contains("+ assert parse_line('') is None"), "{text}");
}

/// Below a usable size the workbench says so instead of drawing panes of
/// no height; a zoomed pane needs less; at a usable size the panes are back.
#[test]
fn a_terminal_too_small_is_told_so_instead_of_drawing_empty_panes() {
    let mut app = App::live(info(), theme());
    let text = screen(&mut app, 50, 12);
    assert!(
        text.contains("terminal too small (need 60x16, have 50x12)"),
        "{text}"
    );
    assert!(!text.contains("Workflow"), "{text}");
    app.set_zoom(true);
    let text = screen(&mut app, 50, 12);
    assert!(!text.contains("terminal too small"), "{text}");
    app.set_zoom(false);
    let text = screen(&mut app, 80, 24);
    assert!(text.contains("Workflow"), "{text}");
    assert!(!text.contains("terminal too small"), "{text}");
}
