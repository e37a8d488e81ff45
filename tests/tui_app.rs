//! The app with no terminal: keys in, engine commands out; the cursor of
//! review and replay; what read-only means.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop::session::{
    Command, Event, OutputEvent, PausedEvent, Record, RunFinishedEvent, RunStartedEvent,
    SteerEvent, Step,
};
use codeloop::tui::app::{CodeTab, Confirm, Focus, Mode, StartRequest};
use codeloop::tui::{Action, App, Msg};
use crossterm::event::{Event as TermEvent, KeyCode, KeyModifiers};
use tui_support::*;

/// A live app fed with the first `n` records of the scripted session.
fn live_after(n: usize) -> App {
    let mut app = App::live(info(), theme());
    assert_eq!(
        app.focus(),
        Focus::Task,
        "no demos: the task editor has the keys"
    );
    app.task_mut().insert_str("sum key=value lines");
    let actions = app.update(ctrl('s'));
    assert!(matches!(
        &actions[..],
        [Action::Start(StartRequest::Task { task, .. })] if task == "sum key=value lines"
    ));
    for r in records().into_iter().take(n) {
        app.update(Msg::Record(r));
    }
    app
}

fn index_of(pred: impl Fn(&Event) -> bool) -> usize {
    records().iter().position(|r| pred(&r.event)).unwrap()
}

#[test]
fn a_demo_is_one_keystroke_from_the_welcome_screen() {
    let mut i = info();
    i.demos = vec![codeloop::tui::app::DemoEntry {
        name: "kv-sum".into(),
        title: "t".into(),
        ..Default::default()
    }];
    let mut app = App::live(i, theme());
    assert_eq!(app.focus(), Focus::Welcome);
    let actions = app.update(ch('1'));
    assert_eq!(
        actions,
        vec![Action::Start(StartRequest::Demo {
            name: "kv-sum".into(),
            step_mode: false,
        })]
    );
}

#[test]
fn step_mode_chosen_on_the_welcome_screen_goes_with_the_session() {
    let mut i = info();
    i.demos = vec![codeloop::tui::app::DemoEntry {
        name: "kv-sum".into(),
        title: "t".into(),
        ..Default::default()
    }];
    let mut app = App::live(i, theme());
    assert!(app.update(ch('s')).is_empty(), "nothing to steer yet");
    assert!(app.step_armed());
    let actions = app.update(ch('1'));
    assert_eq!(
        actions,
        vec![Action::Start(StartRequest::Demo {
            name: "kv-sum".into(),
            step_mode: true,
        })]
    );
}

#[test]
fn an_empty_task_is_not_started() {
    let mut app = App::live(info(), theme());
    assert_eq!(
        app.focus(),
        Focus::Task,
        "no demos: the task editor has the keys"
    );
    assert!(app.update(ctrl('s')).is_empty());
    assert!(app.flash().unwrap().1.contains("write a task"));
}

#[test]
fn typing_in_the_task_editor_does_not_trigger_pane_keys() {
    let mut app = App::live(info(), theme());
    assert_eq!(
        app.focus(),
        Focus::Task,
        "no demos: the task editor has the keys"
    );
    let actions = press(&mut app, "quiet zoo".chars().map(ch));
    assert!(actions.is_empty());
    assert!(!app.quitting() && !app.zoomed());
    assert_eq!(app.panes().task.lines(), ["quiet zoo"]);
}

#[test]
fn step_mode_approve_skip_and_cancel_become_commands() {
    let mut app = live_after(5);
    let a = app.update(ch('s'));
    assert_eq!(steers(&a), vec![Command::SetStepMode { on: true }]);
    // Not paused: nothing to approve.
    assert!(steers(&app.update(ch('a'))).is_empty());
    app.update(Msg::Record(Record {
        seq: 100,
        t_ms: 1,
        event: Event::Paused(PausedEvent {
            step: Step::Run {
                node: Some("parse_line".into()),
                iteration: 1,
            },
        }),
    }));
    assert_eq!(steers(&app.update(ch('a'))), vec![Command::Approve]);
    // Skipping a run asks first (issue 21).
    assert!(steers(&app.update(ch('x'))).is_empty());
    assert_eq!(app.confirm(), Some(Confirm::SkipRun));
    assert_eq!(steers(&app.update(ch('y'))), vec![Command::Skip]);
    assert!(steers(&app.update(ch('c'))).is_empty());
    assert_eq!(app.confirm(), Some(Confirm::CancelSession));
    assert_eq!(steers(&app.update(ch('y'))), vec![Command::Cancel]);
}

#[test]
fn editing_the_code_in_place_sends_the_edited_code() {
    let n = index_of(|e| matches!(e, Event::Localized(_))) + 1;
    let mut app = live_after(n);
    assert_eq!(app.selected(), Some("parse_line"));
    app.update(ch('e'));
    let editor = app.editor_mut().expect("editor open").textarea_mut();
    assert_eq!(editor.lines()[1], "    key, value = line.split(\"=\")");
    // Go to the end of line 2 and add a fix.
    editor.move_cursor(ratatui_textarea::CursorMove::Jump(1, 0));
    editor.move_cursor(ratatui_textarea::CursorMove::End);
    let a = press(&mut app, [key(KeyCode::Enter)]);
    assert!(a.is_empty());
    app.editor_mut()
        .unwrap()
        .textarea_mut()
        .insert_str("    # fixed");
    let a = app.update(ctrl('s'));
    match &steers(&a)[..] {
        [Command::EditCode { node, code }] => {
            assert_eq!(node, "parse_line");
            assert!(code.contains("line.split(\"=\")\n    # fixed\n"), "{code}");
            assert!(code.ends_with('\n'));
        }
        other => panic!("expected one EditCode, got {other:?}"),
    }
    assert!(app.editor().is_none());
}

#[test]
fn tests_tab_edits_the_tests_and_escape_discards() {
    let n = index_of(|e| matches!(e, Event::Localized(_))) + 1;
    let mut app = live_after(n);
    app.set_focus(Focus::Code);
    app.update(ch('t'));
    assert_eq!(app.panes().code.tab(), CodeTab::Tests);
    app.update(ch('e'));
    assert!(app.editor().unwrap().textarea().lines()[0].starts_with("def test_simple"));
    assert!(app.update(key(KeyCode::Esc)).is_empty());
    assert!(app.editor().is_none());
    app.update(ch('e'));
    let a = app.update(ctrl('s'));
    assert!(
        matches!(&steers(&a)[..], [Command::EditTests { node, code }] if node == "parse_line" && code == PARSE_TESTS)
    );
}

#[test]
fn hint_spec_and_rerun_name_the_selected_node() {
    let n = index_of(|e| matches!(e, Event::Localized(_))) + 1;
    let mut app = live_after(n);
    app.update(ch('h'));
    app.editor_mut()
        .unwrap()
        .textarea_mut()
        .insert_str("blank lines are allowed");
    assert_eq!(
        steers(&app.update(ctrl('s'))),
        vec![Command::Hint {
            node: "parse_line".into(),
            text: "blank lines are allowed".into()
        }]
    );
    app.update(ch('E'));
    let ed = app.editor_mut().unwrap().textarea_mut();
    ed.move_cursor(ratatui_textarea::CursorMove::Jump(0, 0));
    ed.move_cursor(ratatui_textarea::CursorMove::End);
    ed.insert_str(", or None");
    match &steers(&app.update(ctrl('s')))[..] {
        [Command::EditSpec { node, spec }] => {
            assert_eq!(node, "parse_line");
            assert_eq!(spec.purpose, "split one key=value line, or None");
            assert!(spec.depends_on.is_empty());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        steers(&app.update(ch('r'))),
        vec![Command::RerunNode {
            node: "parse_line".into()
        }]
    );
}

#[test]
fn selecting_another_node_pins_it_and_l_follows_the_engine_again() {
    let n = index_of(|e| matches!(e, Event::Plan(_))) + 1;
    let mut app = live_after(n);
    app.set_focus(Focus::Graph);
    app.update(key(KeyCode::Down));
    app.update(key(KeyCode::Down));
    assert_eq!(app.selected(), Some("sum_by_key"));
    for r in records().into_iter().skip(n).take(4) {
        app.update(Msg::Record(r));
    }
    assert_eq!(app.selected(), Some("sum_by_key"), "pinned");
    app.update(ch('l'));
    assert_eq!(app.selected(), Some("parse_line"));
}

#[test]
fn quitting_a_running_session_asks_first_and_cancels_it() {
    let mut app = live_after(3);
    assert!(app.update(ch('q')).is_empty());
    assert_eq!(app.confirm(), Some(Confirm::Quit));
    let a = app.update(ch('y'));
    assert_eq!(a, vec![Action::Steer(Command::Cancel), Action::Quit]);
    assert!(app.quitting());
}

#[test]
fn review_is_read_only_and_steps_through_every_iteration() {
    let mut app = App::review(tape(), info(), theme());
    let total = app.records().len();
    assert_eq!(app.cursor(), total);
    assert!(steers(&app.update(ch('e'))).is_empty());
    assert!(app.flash().unwrap().1.contains("read-only"));
    app.update(key(KeyCode::Home));
    assert_eq!(app.cursor(), 0);
    // ] goes from code version to code version: 3 in this session.
    let mut seen = Vec::new();
    for _ in 0..3 {
        app.update(ch(']'));
        let node = app.selected().unwrap().to_string();
        seen.push((node.clone(), app.state().nodes[&node].iteration()));
    }
    assert_eq!(
        seen,
        vec![
            ("parse_line".to_string(), 1),
            ("parse_line".to_string(), 2),
            ("sum_by_key".to_string(), 1)
        ]
    );
    app.update(ch(']'));
    assert!(app.flash().unwrap().1.contains("no later iteration"));
    app.update(ch('['));
    assert_eq!(app.state().nodes["parse_line"].iteration(), 2);
    assert!(app.state().nodes["sum_by_key"].versions.is_empty());
    // Every step back equals the fold of that prefix.
    for _ in 0..5 {
        app.update(key(KeyCode::Left));
        let expect = codeloop::session::State::from_records(&app.records()[..app.cursor()]);
        assert_eq!(*app.state(), expect);
    }
}

#[test]
fn first_failure_shows_the_failed_node_with_its_location() {
    let mut app = App::review(tape(), info(), theme());
    app.update(ch('f'));
    let node = &app.state().nodes["parse_line"];
    assert_eq!(node.status, codeloop::session::NodeStatus::Failed);
    let failure = app.state().last_failure("parse_line").unwrap();
    assert_eq!(failure.location.error_type, "ValueError");
    assert_eq!(app.selected(), Some("parse_line"));
}

#[test]
fn replay_plays_in_its_own_timing_pauses_and_changes_speed() {
    use std::time::{Duration, Instant};
    let mut app = App::replay(tape(), info(), theme(), 2.0, false, false);
    assert_eq!(app.cursor(), 0);
    let t0 = Instant::now();
    let first = app.replay_deadline(t0).unwrap();
    assert_eq!(first, t0, "the first record is due at once");
    app.update(Msg::Tick(t0));
    assert_eq!(app.cursor(), 1);
    // The next record is 150 ms later on the tape: 75 ms at double speed.
    let next = app.replay_deadline(t0).unwrap();
    assert_eq!(next, t0 + Duration::from_millis(75));
    app.update(Msg::Tick(t0 + Duration::from_millis(74)));
    assert_eq!(app.cursor(), 1, "not due yet");
    app.update(Msg::Tick(next));
    assert_eq!(app.cursor(), 2);
    app.update(ch(' '));
    assert!(matches!(app.mode(), Mode::Replay(r) if !r.playing));
    assert!(app.replay_deadline(next).is_none());
    app.update(Msg::Tick(next + Duration::from_secs(60)));
    assert_eq!(app.cursor(), 2, "a paused replay stands still");
    app.update(ch('+'));
    assert!(matches!(app.mode(), Mode::Replay(r) if r.speed == 4.0));
    app.update(key(KeyCode::Right));
    let c = app.cursor();
    app.update(key(KeyCode::Right));
    assert_eq!(app.cursor(), c + 1);
}

#[test]
fn replay_live_asks_to_rerun_each_finished_run_and_marks_differences() {
    let mut app = App::replay(tape(), info(), theme(), 64.0, false, true);
    let mut reruns = Vec::new();
    // The clock advances by hand: 150 ms on the tape is a little over 2 ms at 64x.
    let mut now = std::time::Instant::now();
    for _ in 0..1000 {
        if app.cursor() >= app.records().len() {
            break;
        }
        now += std::time::Duration::from_millis(5);
        for a in app.update(Msg::Tick(now)) {
            if let Action::Rerun { run_id, state } = a {
                assert!(state.runs[&run_id].record.is_some());
                reruns.push(run_id);
            }
        }
    }
    assert_eq!(reruns, vec![1, 2, 3]);
    let mut now_fails = records()
        .iter()
        .find_map(|r| match &r.event {
            Event::RunFinished(RunFinishedEvent { run_id: 2, record }) => Some(record.clone()),
            _ => None,
        })
        .unwrap();
    now_fails.passed = false;
    now_fails.exit_code = Some(1);
    app.update(Msg::Rerun {
        run_id: 2,
        outcome: Ok(now_fails),
    });
    assert!(app.reruns()[&2].differs());
    let text = screen(&mut app, 120, 36);
    assert!(
        text.contains("✓ parse_line #2: passed, 2 tests · run 2"),
        "{text}"
    );
    assert!(text.contains("≠live · 48 ms"), "{text}");
}

#[test]
fn output_follows_the_tail_unless_scrolled_up_and_search_finds_lines() {
    use codeloop::protocol::Stream;
    use codeloop::session::RunKind;
    let mut app = live_after(4);
    let mut seq = 1000;
    let mut rec = |event| {
        seq += 1;
        Msg::Record(Record {
            seq,
            t_ms: 5,
            event,
        })
    };
    app.update(rec(Event::RunStarted(RunStartedEvent {
        run_id: 50,
        node: None,
        iteration: 1,
        kind: RunKind::Program,
    })));
    let chunk: String = (0..100).map(|i| format!("line {i}\n")).collect();
    app.update(rec(Event::Output(OutputEvent {
        run_id: 50,
        stream: Stream::Stdout,
        text: chunk,
    })));
    app.prepare();
    assert_eq!(app.panes().output.lines().len(), 100);
    app.set_focus(Focus::Output);
    press(&mut app, [key(KeyCode::Up), key(KeyCode::Up)]);
    assert_eq!(app.panes().output.back(), 2);
    app.update(rec(Event::Output(OutputEvent {
        run_id: 50,
        stream: Stream::Stderr,
        text: "more\nand more\n".into(),
    })));
    app.prepare();
    assert_eq!(
        app.panes().output.back(),
        4,
        "the view stays on the same lines"
    );
    press(&mut app, [ch('/')]);
    press(&mut app, "line 42".chars().map(ch));
    app.update(key(KeyCode::Enter));
    assert_eq!(
        app.panes().output.lines()
            [app.panes().output.lines().len() - 1 - app.panes().output.back()]
        .1,
        "line 42"
    );
    app.update(ch('G'));
    assert_eq!(app.panes().output.back(), 0);
}

#[test]
fn a_flood_of_output_keeps_memory_bounded() {
    use codeloop::protocol::Stream;
    use codeloop::session::RunKind;
    let mut app = live_after(4);
    app.update(Msg::Record(Record {
        seq: 1,
        t_ms: 1,
        event: Event::RunStarted(RunStartedEvent {
            run_id: 77,
            node: None,
            iteration: 1,
            kind: RunKind::Program,
        }),
    }));
    let chunk = "x".repeat(64 * 1024);
    for i in 0..1000 {
        app.update(Msg::Record(Record {
            seq: 2 + i,
            t_ms: 2,
            event: Event::Output(OutputEvent {
                run_id: 77,
                stream: Stream::Stdout,
                text: chunk.clone(),
            }),
        }));
    }
    let held: usize = app
        .records()
        .iter()
        .map(|r| match &r.event {
            Event::Output(OutputEvent { text, .. }) => text.len(),
            _ => 0,
        })
        .sum();
    assert!(held <= codeloop::tui::app::OUTPUT_MEMORY_BUDGET, "{held}");
    assert!(app.timeline().elided_output());
}

#[test]
fn a_tape_on_disk_opens_like_the_records_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_tape(dir.path());
    // For trying the UI by hand: CODELOOP_TEST_TAPE_OUT=/some/dir keeps a copy.
    if let Some(out) = std::env::var_os("CODELOOP_TEST_TAPE_OUT") {
        write_tape(std::path::Path::new(&out));
    }
    let (contents, label) = codeloop::commands::ui::load_tape(dir.path(), dir.path()).unwrap();
    assert!(label.ends_with("tape.jsonl"));
    let app = App::review(contents, info(), theme());
    assert_eq!(
        *app.state(),
        codeloop::session::State::from_records(&records())
    );
    let err = codeloop::commands::ui::load_tape(&path.with_file_name("nope"), dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("neither a tape file, a session folder, nor a bundled demo"),
        "{err}"
    );
}

#[test]
fn an_attached_file_goes_with_the_task_and_a_bad_path_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("cities.csv");
    std::fs::write(&data, "city,temp\nOslo,3\n").unwrap();
    let mut app = App::live(info(), theme());
    app.update(ctrl('o'));
    press(&mut app, "/no/such/file".chars().map(ch));
    assert!(app.update(key(KeyCode::Enter)).is_empty());
    assert!(
        app.flash()
            .unwrap()
            .1
            .contains("/no/such/file does not exist")
    );
    // The prompt stays open with the path (issue 13); Esc leaves it.
    app.update(key(KeyCode::Esc));
    app.update(ctrl('o'));
    press(&mut app, data.to_string_lossy().chars().map(ch));
    // Described off the UI thread (issue 33), then attached.
    let asked = app.update(key(KeyCode::Enter));
    assert_eq!(describe_asked(&mut app, asked), 1);
    assert_eq!(app.panes().task.attached(), vec![data.clone()]);
    app.task_mut().insert_str("mean temperature per city");
    let actions = app.update(ctrl('s'));
    assert_eq!(
        actions,
        vec![Action::Start(StartRequest::Task {
            task: "mean temperature per city".into(),
            inputs: vec![data],
            step_mode: false,
            plan: None,
            demo: None,
        })]
    );
}

#[test]
fn quitting_from_the_past_of_a_finished_session_neither_asks_nor_cancels() {
    let mut app = live_after(records().len());
    assert!(app.state().finished.is_some());
    app.set_focus(Focus::Graph);
    press(&mut app, [key(KeyCode::Left), key(KeyCode::Left)]);
    assert!(!app.at_end(), "the cursor is in the session's past");
    assert!(app.state().finished.is_none());
    assert!(!app.session_running(), "a finished session is not running");
    let a = app.update(ch('q'));
    assert_eq!(app.confirm(), None, "nothing to ask: the session ended");
    assert_eq!(a, vec![Action::Quit], "no cancel on a finished tape");
}

#[test]
fn after_a_session_ends_n_opens_a_new_one() {
    let mut app = live_after(records().len());
    assert!(app.state().finished.is_some());
    app.set_focus(Focus::Graph);
    app.update(ch('n'));
    // It asks first (issue 13); yes leaves for the new one.
    assert_eq!(app.confirm(), Some(Confirm::LeaveSession));
    app.update(ch('y'));
    assert!(matches!(app.mode(), Mode::Live(l) if !l.started));
    assert!(app.records().is_empty());
    assert!(app.state().specs.is_empty());
    assert!(!app.step_armed(), "the session left was not in step mode");
    // While a session runs, n does not throw it away.
    let mut running = live_after(5);
    running.set_focus(Focus::Graph);
    running.update(ch('n'));
    assert!(matches!(running.mode(), Mode::Live(l) if l.started));
    assert_eq!(running.records().len(), 5);
}

#[test]
fn a_click_focuses_a_pane_and_selects_the_node_under_it() {
    use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let mut app = App::review(tape(), info(), theme());
    let _ = screen(&mut app, 120, 36);
    app.update(Msg::Term(TermEvent::Resize(120, 36)));
    let click = |column, row| {
        Msg::Term(TermEvent::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column,
            row,
            modifiers: KeyModifiers::NONE,
        }))
    };
    // The Workflow pane starts below the task (rows 0-3 at this size):
    // "level 1" on row 5, parse_line on row 6.
    app.update(click(10, 6));
    assert_eq!(app.focus(), Focus::Graph);
    assert_eq!(app.selected(), Some("parse_line"));
    app.update(click(10, 8));
    assert_eq!(app.selected(), Some("sum_by_key"));
    // The output pane, bottom right; the wheel scrolls it.
    app.update(click(100, 30));
    assert_eq!(app.focus(), Focus::Output);
}

#[test]
fn stepping_back_through_a_long_tape_gives_the_state_of_that_prefix() {
    use codeloop::protocol::Stream;
    use codeloop::session::RunKind;
    let mut recs = records();
    let n0 = recs.len() as u64;
    recs.push(Record {
        seq: n0,
        t_ms: 10_000,
        event: Event::RunStarted(RunStartedEvent {
            run_id: 90,
            node: None,
            iteration: 1,
            kind: RunKind::Program,
        }),
    });
    for i in 0..20_000u64 {
        recs.push(Record {
            seq: n0 + 1 + i,
            t_ms: 10_000 + i,
            event: Event::Output(OutputEvent {
                run_id: 90,
                stream: if i % 7 == 0 {
                    Stream::Stderr
                } else {
                    Stream::Stdout
                },
                text: format!("line {i}\n"),
            }),
        });
    }
    let contents = codeloop::session::TapeContents {
        records: recs.clone(),
        truncated_tail: None,
        skipped: Vec::new(),
    };
    let mut app = App::review(contents, info(), theme());
    for target in [15_000usize, 12_289, 8_192, 8_191, 4_000, 20_010, 3] {
        app.set_cursor(target);
        assert_eq!(app.cursor(), target);
        assert_eq!(
            *app.state(),
            codeloop::session::State::from_records(&recs[..target]),
            "at {target}"
        );
    }
}

#[test]
fn saying_no_to_quit_keeps_the_open_editor_and_its_draft() {
    let n = index_of(|e| matches!(e, Event::Localized(_))) + 1;
    let mut app = live_after(n);
    app.update(ch('h'));
    app.editor_mut()
        .unwrap()
        .textarea_mut()
        .insert_str("keep me");
    assert!(app.update(ctrl('c')).is_empty());
    assert_eq!(app.confirm(), Some(Confirm::Quit));
    assert!(app.update(ch('n')).is_empty());
    assert_eq!(app.confirm(), None);
    assert_eq!(app.editor().unwrap().textarea().lines(), ["keep me"]);
    assert!(!app.quitting());
}

#[test]
fn the_help_of_a_live_session_lists_the_keys_that_move_through_its_past() {
    let mut app = live_after(records().len());
    app.update(ch('?'));
    let text = screen(&mut app, 120, 44);
    for row in [
        "[ / ]",
        "previous / next iteration",
        "jump to the first failure",
    ] {
        assert!(text.contains(row), "{row} missing:\n{text}");
    }
    // Any key closes the help; the key listed then does what it says.
    app.update(key(KeyCode::Esc));
    let end = app.cursor();
    app.update(ch('['));
    assert!(app.cursor() < end);
}

#[test]
fn a_help_taller_than_the_screen_scrolls_and_any_other_key_closes_it() {
    // A replay's help at 80x24 is taller than the screen.
    let mut app = App::replay(tape(), info(), theme(), 1.0, true, false);
    app.update(ch('?'));
    let first = screen(&mut app, 80, 24);
    assert!(
        first.contains("↑ ↓ PgUp PgDn more · any other key closes"),
        "{first}"
    );
    assert!(!first.contains("any key closes this help"), "{first}");
    let mut seen = first;
    for _ in 0..30 {
        app.update(key(KeyCode::Down));
        assert!(app.help_open(), "a scrolling key keeps it open");
        seen.push_str(&screen(&mut app, 80, 24));
    }
    // Every row can be read, what it does wrapped beside its keys.
    for row in [
        "fork here: a new session goes on live",
        "any key closes this help",
    ] {
        assert!(seen.contains(row), "{row} never shown:\n{seen}");
    }
    app.update(key(KeyCode::PageUp));
    app.update(key(KeyCode::PageUp));
    assert!(screen(&mut app, 80, 24).contains("Workflow pane"));
    app.update(key(KeyCode::Esc));
    assert!(!app.help_open());
    // Where it fits, any key closes it, a scrolling one too.
    app.update(ch('?'));
    screen(&mut app, 160, 48);
    app.update(key(KeyCode::Down));
    assert!(!app.help_open());
}

#[test]
fn a_replay_before_its_first_record_shows_no_empty_model_nor_a_sandbox_warning() {
    let mut i = info();
    i.model_label = String::new();
    i.sandbox_layers = Vec::new();
    let mut app = App::replay(tape(), i, theme(), 1.0, true, false);
    let s = screen(&mut app, 80, 24);
    let status = s.lines().rev().nth(1).unwrap().trim_matches('"');
    assert_eq!(
        status.trim_end(),
        " REPLAY ⏸ ×1 0/33 │ 0 tokens  │ 00:00",
        "{s}"
    );
    // One record in, the session says both.
    app.update(key(KeyCode::Right));
    let s = screen(&mut app, 160, 48);
    let status = s.lines().rev().nth(1).unwrap();
    assert!(
        status.contains("demo model") || status.contains("scripted"),
        "{status}"
    );
    assert!(status.contains("│ sandbox "), "{status}");
}

#[test]
fn once_a_session_ended_the_demo_keys_leave_it_for_a_demo_and_step_mode_stays() {
    let mut i = info();
    i.demos = vec![
        codeloop::tui::app::DemoEntry {
            name: "wordfreq".into(),
            title: "t".into(),
            ..Default::default()
        },
        codeloop::tui::app::DemoEntry {
            name: "roman".into(),
            title: "t".into(),
            ..Default::default()
        },
    ];
    let mut app = App::live(i, theme());
    // Step mode armed on the welcome screen, then demo 1 to its end.
    app.update(ch('s'));
    app.update(ch('1'));
    let mut recs = records();
    recs.insert(
        1,
        Record {
            seq: 0,
            t_ms: 0,
            event: Event::Steer(SteerEvent {
                command: Command::SetStepMode { on: true },
            }),
        },
    );
    for r in recs {
        app.update(Msg::Record(r));
    }
    assert!(app.state().finished.is_some() && app.state().step_mode);
    app.set_focus(Focus::Graph);
    assert!(app.update(ch('2')).is_empty(), "asked first");
    assert_eq!(app.confirm(), Some(Confirm::LeaveSession));
    let a = app.update(ch('y'));
    assert_eq!(
        a,
        vec![Action::Start(StartRequest::Demo {
            name: "roman".into(),
            step_mode: true,
        })]
    );
    // n, too, keeps step mode for the next session.
    let mut again = live_after(0);
    again.update(Msg::Record(Record {
        seq: 0,
        t_ms: 0,
        event: Event::Steer(SteerEvent {
            command: Command::SetStepMode { on: true },
        }),
    }));
    for r in records().into_iter().skip(1) {
        again.update(Msg::Record(r));
    }
    again.set_focus(Focus::Graph);
    again.update(ch('n'));
    again.update(ch('y'));
    assert!(again.welcome() && again.step_armed(), "step mode kept");
    // While a session runs, a digit leaves nothing.
    let mut running = live_after(5);
    running.set_focus(Focus::Graph);
    assert!(running.update(ch('2')).is_empty());
    assert_eq!(running.confirm(), None);
}

/// The rows of the History pane in `screen` (the text between its borders).
fn history_rows(screen: &str) -> Vec<String> {
    pane_rows(screen, "History")
}

/// The rows of the pane titled `title` in `screen` (the left column's).
fn pane_rows(screen: &str, title: &str) -> Vec<String> {
    let lines: Vec<&str> = screen.lines().collect();
    let Some(top) = lines
        .iter()
        .position(|l| l.contains(&format!("┌ {title}")) || l.contains(&format!("┏ {title}")))
    else {
        return Vec::new();
    };
    let left = lines[top]
        .chars()
        .position(|c| c == '┌' || c == '┏')
        .unwrap();
    let width = lines[top]
        .chars()
        .skip(left + 1)
        .take_while(|c| *c != '┐' && *c != '┓')
        .count();
    lines[top + 1..]
        .iter()
        .take_while(|l| !l.chars().nth(left).is_some_and(|c| c == '└' || c == '┗'))
        .map(|l| l.chars().skip(left + 1).take(width).collect())
        .collect()
}

#[test]
fn history_names_each_runs_function_and_never_cuts_a_word_at_its_edge() {
    // The roman demo runs its two functions in parallel: int_to_roman's
    // run comes between roman_to_int's attempts.
    let tape = codeloop::session::read_tape(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demos/roman/tape.jsonl"),
    )
    .unwrap();
    let mut app = App::review(tape, info(), theme());
    app.set_focus(Focus::History);
    let wide = screen(&mut app, 160, 48);
    let rows = history_rows(&wide).join("\n");
    assert!(
        rows.contains("✓ int_to_roman #1: passed, 3 tests · run 2"),
        "{rows}"
    );
    assert!(
        rows.contains("✗ roman_to_int #2: failed 2 of 4 tests · run 3"),
        "{rows}"
    );
    assert!(
        rows.contains("✓ the program: passed, 7 tests · run 5"),
        "{rows}"
    );
    // At 80x24 a row that reaches the pane's edge ends with a whole word
    // (one the widest History has too): nothing is cut mid-word.
    let widest = history_rows(&screen(&mut app, 240, 120)).join(" ");
    let words: std::collections::HashSet<&str> = widest.split_whitespace().collect();
    // Scrolled from its end to its start.
    for _ in 0..60 {
        let narrow = screen(&mut app, 80, 24);
        for row in history_rows(&narrow) {
            let last = row.split_whitespace().last().unwrap_or("");
            // A word longer than the whole line is cut: nothing else is.
            let alone = row.trim_start() == last;
            let too_long = words
                .iter()
                .any(|w| w.starts_with(last) && w.chars().count() > last.chars().count());
            assert!(
                row.ends_with(' ')
                    || words.contains(last)
                    || last.ends_with('…')
                    || (alone && too_long),
                "a row cut mid-word: {row:?}\n{narrow}"
            );
        }
        app.update(key(KeyCode::Up));
    }
    // The workflow's rows too, where the status word has no room.
    let narrow = screen(&mut app, 80, 24);
    let rows = pane_rows(&narrow, "Workflow");
    assert!(rows.iter().any(|r| r.contains("roman_to_int")), "{narrow}");
    for row in rows {
        let last = row.split_whitespace().last().unwrap_or("");
        assert!(
            row.ends_with(' ') || words.contains(last),
            "a row cut mid-word: {row:?}\n{narrow}"
        );
    }
}

#[test]
fn at_80x24_the_footer_of_every_pane_ends_with_help_and_quit_whole() {
    let mut app = App::review(tape(), info(), theme());
    for focus in [
        Focus::Task,
        Focus::Graph,
        Focus::Code,
        Focus::Output,
        Focus::History,
    ] {
        app.set_focus(focus);
        let s = screen(&mut app, 80, 24);
        let footer = s
            .lines()
            .last()
            .unwrap()
            .trim_matches('"')
            .trim_end()
            .to_string();
        assert!(footer.ends_with("? help · q quit"), "{focus:?}: {footer}");
    }
}

#[test]
fn zoomed_on_a_projectors_100x30_a_pane_fills_it_and_says_how_to_come_back() {
    let no_dir = std::path::Path::new("/nonexistent");
    for name in ["dark", "light"] {
        let theme = codeloop::tui::Theme::load(name, no_dir).unwrap();
        let mut app = App::review(tape(), info(), theme);
        for focus in [Focus::Code, Focus::Output, Focus::History, Focus::Graph] {
            app.set_focus(focus);
            app.update(ch('z'));
            let s = screen(&mut app, 100, 30);
            let footer = s
                .lines()
                .last()
                .unwrap()
                .trim_matches('"')
                .trim_end()
                .to_string();
            assert!(
                footer.ends_with("Esc unzoom · ? help · q quit"),
                "{focus:?}: {footer}"
            );
            // One pane, the whole width: its frame's corners at both edges.
            let top = s.lines().next().unwrap().trim_matches('"').to_string();
            assert!(
                top.starts_with(['┌', '┏']) && top.ends_with(['┐', '┓']),
                "{focus:?}:\n{s}"
            );
            app.update(key(KeyCode::Esc));
            assert!(!app.zoomed());
        }
    }
}
