//! At a failure the code pane opens at the failing line when it would be
//! below the rows the pane has (issue 42: at 80x24 the failing line was
//! off screen when the failure was shown); scrolling goes on from there.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_session::*;
use codeloop_testkit::tui_support::*;
use crossterm::event::KeyCode;

const FAILING: &str = "key, value = line.split(\"=\")";

/// The demo tape with `parse_line`'s first version thirty lines longer
/// above its failing line.
fn long_code_tape() -> TapeContents {
    let mut tape = tape();
    for r in &mut tape.records {
        if let Event::Code(c) = &mut r.event
            && c.node == "parse_line"
            && c.iteration == 1
        {
            let padding: String = (1..=30)
                .map(|i| format!("    # step {i} of the plan\n"))
                .collect();
            c.code = c.code.replacen("):\n", &format!("):\n{padding}"), 1);
        }
    }
    tape
}

#[test]
fn the_code_pane_opens_at_the_failing_line_at_80x24_and_200x50() {
    for (w, h) in [(80, 24), (200, 50)] {
        let mut app = at_failure(long_code_tape());
        let s = screen(&mut app, w, h);
        let failing = s
            .lines()
            .find(|l| l.contains(FAILING))
            .unwrap_or_else(|| panic!("{w}x{h}: the failing line is on screen\n{s}"));
        assert!(failing.contains("32"), "{failing}");
        // Scrolling goes on from there, not from the top.
        app.update(key(KeyCode::Down));
        let s = screen(&mut app, w, h);
        assert!(!s.contains("step 1 of the plan"), "{w}x{h}\n{s}");
    }
}

#[test]
fn code_whose_failing_line_is_on_screen_opens_at_its_top() {
    let mut app = at_failure(tape());
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("def parse_line(line):"), "{s}");
    assert!(s.contains(FAILING), "{s}");
}
