//! The review before running in the workbench: its findings at their lines
//! of the code reviewed, its verdict under the code and in the History
//! pane; not drawn on a later version of the code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop_session::{
    CodeEvent, Event, Record, ReviewEvent, ReviewFinding, ReviewVerdict, Severity, TapeContents,
};
use codeloop_tui::App;
use codeloop_tui::app::Focus;
use tui_support::*;

/// The scripted session with a review of parse_line's first version just
/// after it was written.
fn tape_with_review() -> TapeContents {
    let mut events = events();
    let at = events
        .iter()
        .position(|e| matches!(e, Event::Code(CodeEvent { node, iteration: 1, .. }) if node == "parse_line"))
        .unwrap();
    events.insert(
        at + 1,
        Event::Review(ReviewEvent {
            node: "parse_line".into(),
            iteration: 1,
            verdict: ReviewVerdict::Concerns,
            findings: vec![
                ReviewFinding {
                    severity: Severity::Serious,
                    line: Some(2),
                    what: "a blank line has no '=' and the unpacking fails".into(),
                },
                ReviewFinding {
                    severity: Severity::Minor,
                    line: None,
                    what: "the value is not stripped".into(),
                },
            ],
            call_id: None,
        }),
    );
    TapeContents {
        records: events
            .into_iter()
            .enumerate()
            .map(|(i, event)| Record {
                seq: i as u64,
                t_ms: i as u64 * 150,
                event,
            })
            .collect(),
        truncated_tail: None,
        skipped: Vec::new(),
    }
}

fn at(pred: impl Fn(&Event) -> bool) -> App {
    let mut app = App::review(tape_with_review(), info(), theme());
    let n = app.records().iter().position(|r| pred(&r.event)).unwrap() + 1;
    app.set_cursor(n);
    app.set_focus(Focus::Code);
    app
}

#[test]
fn the_findings_are_beside_their_lines_and_the_verdict_under_the_code() {
    let mut app = at(|e| matches!(e, Event::Review(_)));
    let s = screen(&mut app, 160, 48);
    assert!(
        s.contains("◆2     key, value = line.split(\"=\")  ◆ review: a blank line has no '=' and the unpacking fails"),
        "{s}"
    );
    assert!(s.contains("review: concerns: 1 serious, 1 minor"), "{s}");
    assert!(s.contains("◆ minor: the value is not stripped"), "{s}");
    // The History pane.
    assert!(s.contains("◆ review concerns: 1 serious, 1 minor"), "{s}");
}

#[test]
fn a_later_version_is_not_marked_with_an_earlier_review() {
    let mut app = at(
        |e| matches!(e, Event::Code(CodeEvent { node, iteration: 2, .. }) if node == "parse_line"),
    );
    let s = screen(&mut app, 160, 48);
    assert!(!s.contains("◆ review: a blank line"), "{s}");
    assert!(!s.contains("review: concerns"), "{s}");
    // The History pane still tells it.
    assert!(s.contains("◆ review concerns: 1 serious, 1 minor"), "{s}");
}
