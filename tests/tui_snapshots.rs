//! Snapshots of each pane and of the whole screen at fixed sizes, over
//! ratatui's TestBackend, fed with a scripted session.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop::session::{
    Event, ModelDeltaEvent, ModelRequestEvent, NodeStatusEvent, RunFinishedEvent,
};
use codeloop::tui::app::{CodeTab, Focus};
use codeloop::tui::{App, Msg};
use crossterm::event::KeyCode;
use tui_support::*;

fn review() -> App {
    App::review(tape(), info(), theme())
}

/// The cursor just after the first event of `kind` matching `pred`.
fn after(app: &App, pred: impl Fn(&Event) -> bool) -> usize {
    app.records().iter().position(|r| pred(&r.event)).unwrap() + 1
}

#[test]
fn whole_screen_at_the_end_of_the_session() {
    let mut app = review();
    insta::assert_snapshot!(screen(&mut app, 120, 36));
}

#[test]
fn whole_screen_at_the_first_failure() {
    let mut app = review();
    app.update(key(KeyCode::Char('f')));
    insta::assert_snapshot!(screen(&mut app, 120, 36));
}

#[test]
fn graph_pane_zoomed_while_the_first_node_fails() {
    let mut app = review();
    let n = after(
        &app,
        |e| matches!(e, Event::NodeStatus(NodeStatusEvent { node, .. }) if node == "sum_by_key"),
    );
    app.set_cursor(n);
    app.set_focus(Focus::Graph);
    app.set_zoom(true);
    insta::assert_snapshot!(screen(&mut app, 80, 10));
}

#[test]
fn code_pane_marks_the_failing_line_with_its_error() {
    let mut app = review();
    let n = after(&app, |e| matches!(e, Event::Localized(_)));
    app.set_cursor(n);
    app.set_focus(Focus::Code);
    app.set_zoom(true);
    insta::assert_snapshot!(screen(&mut app, 90, 12));
}

#[test]
fn code_pane_diff_against_the_previous_iteration() {
    let mut app = review();
    app.select_node("parse_line".into());
    assert!(app.panes().graph.pinned());
    app.set_focus(Focus::Code);
    app.set_zoom(true);
    app.update(key(KeyCode::Char('d')));
    assert_eq!(app.panes().code.tab(), CodeTab::Diff);
    insta::assert_snapshot!(screen(&mut app, 90, 14));
}

#[test]
fn code_pane_streams_the_reply_settled_lines_then_the_live_tail() {
    use codeloop::session::{Purpose, Record};
    let mut app = review();
    let n = after(&app, |e| matches!(e, Event::Localized(_)));
    app.set_cursor(n);
    // A repair call starts streaming after the failure (not on the recorded tape).
    let base = app.records().len() as u64;
    let mut live = App::review(
        codeloop::session::TapeContents {
            records: app.records()[..n].to_vec(),
            truncated_tail: None,
            skipped: Vec::new(),
        },
        info(),
        theme(),
    );
    for (i, event) in [
        Event::ModelRequest(ModelRequestEvent {
            call_id: 9,
            purpose: Purpose::Repair {
                node: "parse_line".into(),
            },
            tag: "repair/parse_line/1".into(),
            messages: vec![],
        }),
        Event::ModelDelta(ModelDeltaEvent {
            call_id: 9,
            text: "def parse_line(line):\n    if \"=\" not in line:\n        ret".into(),
        }),
    ]
    .into_iter()
    .enumerate()
    {
        live.update(Msg::Record(Record {
            seq: base + i as u64,
            t_ms: 9_000,
            event,
        }));
    }
    live.set_focus(Focus::Code);
    live.set_zoom(true);
    insta::assert_snapshot!(screen(&mut live, 70, 8));
}

#[test]
fn output_pane_sets_stderr_apart_and_strips_control_sequences() {
    let mut app = review();
    let n = after(&app, |e| {
        matches!(e, Event::RunFinished(RunFinishedEvent { run_id: 1, .. }))
    });
    app.set_cursor(n);
    app.set_focus(Focus::Output);
    app.set_zoom(true);
    let text = screen(&mut app, 90, 10);
    assert!(!text.contains("owned title"), "OSC payload leaked:\n{text}");
    assert!(!text.contains('\u{1b}'));
    insta::assert_snapshot!(text);
}

#[test]
fn history_pane_shows_attempts_failures_reflections_and_changes() {
    let mut app = review();
    app.set_focus(Focus::History);
    app.set_zoom(true);
    insta::assert_snapshot!(screen(&mut app, 90, 16));
}

#[test]
fn help_popup_lists_the_keys_of_the_focused_pane() {
    let mut app = review();
    app.set_focus(Focus::Output);
    app.update(key(KeyCode::Char('?')));
    insta::assert_snapshot!(screen(&mut app, 100, 32));
}

#[test]
fn live_welcome_screen_offers_the_demos() {
    let mut i = info();
    i.demos = vec![
        codeloop::tui::app::DemoEntry {
            name: "kv-sum".into(),
            title: "sum key=value lines (a blank line breaks it)".into(),
            ..Default::default()
        },
        codeloop::tui::app::DemoEntry {
            name: "roman".into(),
            title: "roman numerals (subtractive pairs)".into(),
            ..Default::default()
        },
    ];
    let mut app = App::live(i, theme());
    insta::assert_snapshot!(screen(&mut app, 120, 30));
}

#[test]
fn a_cut_off_tape_opens_and_says_so() {
    let mut contents = tape();
    contents.records.truncate(10);
    contents.truncated_tail = Some((11, 37));
    let mut app = App::review(contents, info(), theme());
    app.set_focus(Focus::History);
    let text = screen(&mut app, 120, 30);
    assert!(text.contains("tape cut off at line 11"), "{text}");
    assert!(text.contains("the tape was cut off at line 11"), "{text}");
}

#[test]
fn resizing_to_a_tiny_terminal_does_not_panic() {
    let mut app = review();
    for (w, h) in [(20, 5), (1, 1), (0, 0), (200, 60), (40, 12)] {
        let _ = screen(&mut app, w.max(1), h.max(1));
    }
}

#[test]
fn a_large_welcome_uses_its_room_for_the_sandbox_and_the_keys() {
    let mut i = info();
    i.demos = codeloop::demos::all()
        .iter()
        .map(|d| codeloop::tui::app::DemoEntry {
            name: d.name.into(),
            title: d.title.into(),
            ..Default::default()
        })
        .collect();
    let mut app = App::live(i, theme());
    let s = screen(&mut app, 140, 42);
    assert!(s.contains("Sandbox: hygiene + rlimits (full)"), "{s}");
    assert!(s.contains("Keys:") && s.contains("1-5"), "{s}");
    assert!(s.contains("step mode on/off"), "{s}");
    // Where there is no room, the welcome stays as it was.
    let s = screen(&mut app, 80, 24);
    assert!(!s.contains("Keys:"), "{s}");
}
