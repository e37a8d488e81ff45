//! Every moment of a session drawn at many sizes, from 1x1 up, live and in
//! review, each pane zoomed, with the popups: drawing never panics. (The
//! crash that prompted it, `hscroll` asked to fit text into a code pane of
//! no width, seen in the real binary at 80x24, is pinned by a unit test in
//! `hscroll.rs`; these frames did not reach that state.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop_tui::app::{Action, StartRequest};
use codeloop_tui::{App, Msg};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use tui_support::*;

const WIDTHS: [u16; 12] = [1, 2, 9, 20, 40, 59, 60, 61, 80, 100, 160, 200];
const HEIGHTS: [u16; 9] = [1, 2, 5, 15, 16, 17, 24, 30, 60];

fn draw_everywhere(app: &mut App, what: &str) {
    for w in WIDTHS {
        for h in HEIGHTS {
            let shown = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                screen(app, w, h);
            }));
            assert!(shown.is_ok(), "drawing {what} at {w}x{h} panicked");
        }
    }
}

#[test]
fn a_live_session_draws_at_every_size_at_every_step() {
    let mut app = App::live(info(), theme());
    draw_everywhere(&mut app, "the welcome screen");
    app.task_mut().insert_str("sum key=value lines");
    let actions = app.update(Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Char('s'),
        KeyModifiers::CONTROL,
    ))));
    assert!(matches!(
        &actions[..],
        [Action::Start(StartRequest::Task { .. })]
    ));
    for (i, r) in records().into_iter().enumerate() {
        app.update(Msg::Record(r));
        if i % 4 == 0 {
            draw_everywhere(&mut app, &format!("the live session after record {i}"));
        }
    }
    draw_everywhere(&mut app, "the end of the session");
}

#[test]
fn a_review_draws_at_every_size_in_every_pane_zoomed_and_with_its_popups() {
    let mut app = App::review(tape(), info(), theme());
    let steps = records().len();
    for at in (0..steps).step_by(7) {
        app.set_cursor(at);
        draw_everywhere(&mut app, &format!("review at record {at}"));
    }
    // Each pane focused and zoomed, scrolled sideways and to its end.
    for pane in 0..5 {
        app.update(key(KeyCode::Tab));
        for m in [ch('z'), ch('>'), ch('>'), key(KeyCode::End), ch('G')] {
            app.update(m);
        }
        draw_everywhere(&mut app, &format!("pane {pane} zoomed"));
        app.update(key(KeyCode::Esc));
    }
    // The popups over it: help, the palette, the inspector.
    for (open, name) in [
        (ch('?'), "help"),
        (ch(':'), "palette"),
        (ch('m'), "inspector"),
    ] {
        app.update(open);
        draw_everywhere(&mut app, name);
        app.update(key(KeyCode::Esc));
    }
}

#[test]
fn a_demo_started_from_the_welcome_screen_draws_at_80x24_at_every_step() {
    let mut i = info();
    i.demos = vec![codeloop_tui::app::DemoEntry {
        name: "kv-sum".into(),
        title: "sum key=value lines".into(),
        ..Default::default()
    }];
    let mut app = App::live(i, theme());
    screen(&mut app, 80, 24);
    let actions = app.update(ch('1'));
    assert!(matches!(
        &actions[..],
        [Action::Start(StartRequest::Demo { .. })]
    ));
    // Started, before the engine's first record: the welcome layout gives way.
    draw_everywhere(&mut app, "a demo before its first record");
    for (n, r) in records().into_iter().enumerate() {
        app.update(Msg::Record(r));
        for (w, h) in [(80, 24), (100, 30), (60, 16)] {
            let shown = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                screen(&mut app, w, h);
            }));
            assert!(shown.is_ok(), "record {n} at {w}x{h} panicked");
        }
    }
}
