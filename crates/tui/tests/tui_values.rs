//! Runtime values in the code pane (issue 10): beside their lines on the
//! code version the failure was found in, stepped through with v / V, and
//! never drawn on a later version.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop_protocol::Snapshot;
use codeloop_session::{CodeEvent, Event, LocalizedEvent, TapeContents};
use codeloop_tui::{App, Msg};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use tui_support::*;

fn key(c: char) -> Msg {
    Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::NONE,
    )))
}

fn snap(line: u32, vars: &[(&str, &str)]) -> Snapshot {
    Snapshot {
        line,
        depth: 0,
        vars: vars
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
    }
}

/// The scripted session, its failure carrying the values along the path.
fn tape_with_values() -> TapeContents {
    let mut tape = tape();
    for r in &mut tape.records {
        if let Event::Localized(LocalizedEvent { location, .. }) = &mut r.event {
            location.values = vec![
                snap(1, &[("line", "''")]),
                snap(2, &[("line", "''"), ("parts", "['']")]),
            ];
            location.values_note = Some("the test's path, 2 lines".into());
        }
    }
    tape
}

/// Reviewing at the failure, the code pane focused.
fn at_failure() -> App {
    tui_support::at_failure(tape_with_values())
}

#[test]
fn values_beside_their_lines_at_80x24() {
    let mut app = at_failure();
    insta::assert_snapshot!(screen(&mut app, 80, 24));
}

#[test]
fn values_beside_their_lines_at_160x48() {
    let mut app = at_failure();
    insta::assert_snapshot!(screen(&mut app, 160, 48));
}

#[test]
fn v_steps_through_the_snapshots_and_marks_the_current_line() {
    let mut app = at_failure();
    let last = screen(&mut app, 160, 48);
    assert!(last.contains("values 2/2 at line 2"), "{last}");
    assert!(
        last.contains("▶2     key, value = line.split(\"=\")  line='', parts=['']  ◀ ValueError"),
        "the failing line: its values, then its error: {last}"
    );
    app.update(key('v'));
    let first = screen(&mut app, 160, 48);
    assert!(first.contains("values 1/2 at line 1"), "{first}");
    assert!(
        first.contains("●1 def parse_line(line):  line=''"),
        "{first}"
    );
    assert!(
        !first.contains("parts=['']"),
        "a later snapshot's values are not shown yet: {first}"
    );
    app.update(key('V'));
    assert!(screen(&mut app, 160, 48).contains("values 2/2 at line 2"));
}

#[test]
fn values_are_not_drawn_on_a_later_version() {
    let mut app = at_failure();
    let n = app
        .records()
        .iter()
        .position(|r| matches!(&r.event, Event::Code(CodeEvent { iteration: 2, .. })))
        .unwrap()
        + 1;
    app.set_cursor(n);
    let text = screen(&mut app, 160, 48);
    assert!(!text.contains("parts=['']"), "{text}");
    assert!(!text.contains("values 2/2"), "{text}");
}
