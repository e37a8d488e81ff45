//! Coverage of the failing path and each run's figures in the workbench: a
//! gutter mark beside the failing function's lines (┃ ran, ✗ did not),
//! drawn only on the version the failure was found in, and the CPU time and
//! peak memory in the Output pane's title and History's run entries.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop_protocol::resources::Resources;
use codeloop_session::{CodeEvent, Event, LocalizedEvent, RunFinishedEvent, TapeContents};
use codeloop_tui::App;
use tui_support::*;

/// The scripted session: its failure with the coverage of its path (line 2
/// ran and raised, line 3 did not run), its runs measured.
fn tape_with_coverage() -> TapeContents {
    let mut tape = tape();
    for r in &mut tape.records {
        match &mut r.event {
            Event::Localized(LocalizedEvent { location, .. }) => {
                location.executed_lines = vec![2];
                location.missed_lines = vec![3];
            }
            Event::RunFinished(RunFinishedEvent { run_id, record }) => {
                record.resources = Some(Resources {
                    cpu_ms: 40 + *run_id,
                    peak_rss_bytes: (16 << 20) + (*run_id << 20),
                });
            }
            _ => {}
        }
    }
    tape
}

/// Reviewing at the failure, the code pane focused.
fn at_failure() -> App {
    tui_support::at_failure(tape_with_coverage())
}

#[test]
fn the_gutter_marks_the_lines_that_ran_at_160x48() {
    let mut app = at_failure();
    let text = screen(&mut app, 160, 48);
    // The failing line keeps its sign; after the number, whether it ran.
    assert!(text.contains(" 1  def parse_line(line):"), "{text}");
    assert!(
        text.contains("▶2┃     key, value = line.split(\"=\")"),
        "{text}"
    );
    assert!(
        text.contains(" 3✗     return key.strip(), int(value)"),
        "{text}"
    );
    assert!(text.contains("┃ ran 1 · ✗ not run 1"), "{text}");
}

#[test]
fn the_gutter_fits_at_80x24() {
    let mut app = at_failure();
    let text = screen(&mut app, 80, 24);
    assert!(text.contains("▶2┃"), "{text}");
    assert!(text.contains(" 3✗"), "{text}");
}

#[test]
fn no_gutter_on_a_later_version() {
    let mut app = at_failure();
    let n = app
        .records()
        .iter()
        .position(|r| matches!(&r.event, Event::Code(CodeEvent { iteration: 2, .. })))
        .unwrap()
        + 1;
    app.set_cursor(n);
    let text = screen(&mut app, 160, 48);
    assert!(!text.contains(" 3✗"), "{text}");
    assert!(!text.contains("┃ ran"), "{text}");
    assert!(!text.contains("not run"), "{text}");
}

#[test]
fn each_run_says_what_it_used_in_the_output_title_and_history() {
    let mut app = at_failure();
    let text = screen(&mut app, 160, 48);
    let first_run = codeloop_protocol::resources::Resources {
        cpu_ms: 41,
        peak_rss_bytes: 17 << 20,
    }
    .short();
    // In the title where it fits, else on the pane's bottom border.
    let lines: Vec<&str> = text.lines().collect();
    let top = lines
        .iter()
        .position(|l| l.contains("┌ Output run 1"))
        .unwrap();
    let bottom = top + lines[top..].iter().position(|l| l.contains("└──")).unwrap();
    assert!(
        lines[top].contains(&first_run) || lines[bottom].contains(&first_run),
        "{first_run} not on the Output pane's border:\n{text}"
    );
    // The History's run line, wrapped in its column (each line of the
    // screen is quoted).
    let history: String = text
        .lines()
        .map(|l| {
            let l = l.strip_prefix('"').unwrap_or(l);
            l.chars().take(60).collect::<String>().replace('│', " ")
        })
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        history.contains(&format!(
            "✗ parse_line #1: failed 1 of 2 tests · run 1 · 48 ms, {first_run}"
        )),
        "{first_run} not in History:\n{text}"
    );
}
