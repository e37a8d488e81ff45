//! Issue 13, "wrong or lost": a failure drawn only on the code it was found
//! in; the badge, the graph and the history saying the same outcome; a
//! skipped run shown as skipped; approving from the past of a live session.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop_protocol::Usage;
use codeloop_session::*;
use codeloop_tui::app::Focus;
use codeloop_tui::{Action, App, Msg};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use tui_support::*;

fn index_of(pred: impl Fn(&Event) -> bool) -> usize {
    records().iter().position(|r| pred(&r.event)).unwrap()
}

/// A live app whose session is the scripted one's first `n` events, then `more`.
fn live_with(n: usize, more: Vec<Event>) -> App {
    let mut app = App::live(info(), theme());
    app.task_mut().insert_str("sum key=value lines");
    app.update(Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Char('s'),
        KeyModifiers::CONTROL,
    ))));
    let mut events: Vec<Event> = events().into_iter().take(n).collect();
    events.extend(more);
    for (i, event) in events.into_iter().enumerate() {
        app.update(Msg::Record(Record {
            seq: i as u64,
            t_ms: i as u64 * 10,
            event,
        }));
    }
    app
}

fn finished(passed: bool, summary: &str) -> Event {
    Event::Finished(FinishedEvent {
        result: FinalResult {
            passed,
            nodes_passed: 0,
            nodes_total: 2,
            iterations: 0,
            usage: Usage::default(),
            summary: summary.into(),
            output_dir: None,
        },
    })
}

/// Reviewing the scripted session just after the repair wrote iteration 2,
/// before it ran, the code pane focused.
fn after_the_repair() -> App {
    let mut app = App::review(tape(), info(), theme());
    let n = index_of(|e| matches!(e, Event::Code(CodeEvent { iteration: 2, .. }))) + 1;
    app.set_cursor(n);
    app.set_focus(Focus::Code);
    app
}

#[test]
fn the_failure_of_iteration_1_is_not_drawn_on_the_lines_of_iteration_2() {
    let mut app = after_the_repair();
    let screen = draw(&mut app, 160, 48);
    let marked: Vec<&str> = screen.lines().filter(|l| l.contains("◀")).collect();
    assert!(
        marked.is_empty(),
        "no line of iteration 2 is marked: {marked:?}"
    );
    assert!(
        screen.contains("previous iteration's failure (iteration 1, now 2): ValueError"),
        "{screen}"
    );
    insta::assert_snapshot!("failure_of_the_previous_iteration_at_160x48", screen);
    insta::assert_snapshot!(
        "failure_of_the_previous_iteration_at_80x24",
        draw(&mut after_the_repair(), 80, 24)
    );
    // On the code it was found in, the failure is on its line.
    let mut app = App::review(tape(), info(), theme());
    app.set_cursor(index_of(|e| matches!(e, Event::Localized(_))) + 1);
    let screen = draw(&mut app, 160, 48);
    assert!(
        screen
            .lines()
            .any(|l| l.contains("line.split(\"=\")") && l.contains("◀ ValueError")),
        "{screen}"
    );
}

fn draw(app: &mut App, w: u16, h: u16) -> String {
    tui_support::screen(app, w, h)
}

#[test]
fn new_tests_make_the_failure_one_of_an_earlier_version_too() {
    let n = index_of(|e| matches!(e, Event::Localized(_))) + 1;
    let mut app = live_with(
        n,
        vec![Event::Tests(TestsEvent {
            node: "parse_line".into(),
            code: PARSE_TESTS.replace("a=1", "b=2"),
            source: CodeSource::Edit,
        })],
    );
    app.set_focus(Focus::Code);
    app.update(key(KeyCode::Char('t')));
    let screen = draw(&mut app, 160, 48);
    assert!(!screen.contains("◀"), "{screen}");
    assert!(
        screen.contains("previous iteration's failure (before the tests changed, iteration 1)"),
        "{screen}"
    );
}

fn status_row(screen: &str, h: usize) -> &str {
    screen.lines().nth(h - 2).unwrap()
}

#[test]
fn a_cancelled_session_says_cancelled_in_the_badge_the_graph_and_the_history() {
    // Cancelled while parse_line ran.
    let n = index_of(|e| matches!(e, Event::RunStarted(_)));
    let mut app = live_with(
        n,
        vec![
            Event::Steer(SteerEvent {
                command: Command::Cancel,
            }),
            finished(
                false,
                "cancelled: 0 of 2 functions passed before it stopped",
            ),
        ],
    );
    let screen = draw(&mut app, 160, 48);
    let status = status_row(&screen, 48);
    assert!(status.contains("■ CANCELLED"), "{status}");
    assert!(!screen.contains("DONE"), "{screen}");
    assert!(
        screen.contains("■ parse_line cancelled"),
        "the node at work is cancelled, not running:\n{screen}"
    );
    assert!(screen.contains("· sum_by_key not run"), "{screen}");
    assert!(!screen.contains("running"), "{screen}");
    assert!(
        screen.contains("■ cancelled: 0 of 2 functions passed before it stopped"),
        "{screen}"
    );
    insta::assert_snapshot!("cancelled_session_at_80x24", draw(&mut app, 80, 24));
}

#[test]
fn a_session_without_a_plan_says_no_usable_plan_not_done() {
    let mut app = live_with(
        2,
        vec![
            Event::PlanError(PlanErrorEvent {
                message: "a cycle: a -> b -> a".into(),
            }),
            finished(false, "no usable plan: a cycle: a -> b -> a"),
        ],
    );
    let screen = draw(&mut app, 160, 48);
    let status = status_row(&screen, 48);
    assert!(status.contains("✗ NO USABLE PLAN"), "{status}");
    assert!(!status.contains("DONE"), "{status}");
}

#[test]
fn a_rerun_after_the_result_is_live_work_not_a_result_beside_a_checking_node() {
    let more = vec![Event::NodeStatus(NodeStatusEvent {
        node: "sum_by_key".into(),
        status: NodeStatus::Checking,
    })];
    let mut app = live_with(events().len(), more);
    let screen = draw(&mut app, 160, 48);
    let status = status_row(&screen, 48);
    assert!(status.contains(" LIVE "), "{status}");
    assert!(
        !screen.contains("every node and the program passed"),
        "{screen}"
    );
}

#[test]
fn a_skipped_run_shows_skipped_and_is_not_counted_as_passing() {
    // A tape from before `skipped` existed: the skip was recorded as a pass.
    let n = index_of(|e| matches!(e, Event::RunStarted(_)));
    let mut app = live_with(
        n,
        vec![
            Event::Paused(PausedEvent {
                step: Step::Run {
                    node: Some("parse_line".into()),
                    iteration: 1,
                },
            }),
            Event::Steer(SteerEvent {
                command: Command::Skip,
            }),
            Event::NodeStatus(NodeStatusEvent {
                node: "parse_line".into(),
                status: NodeStatus::Passed,
            }),
        ],
    );
    let screen = draw(&mut app, 160, 48);
    assert!(screen.contains("↷ parse_line skipped"), "{screen}");
    assert!(screen.contains("Workflow 0/2 passed"), "{screen}");
}

#[test]
fn approving_while_reviewing_the_past_of_a_live_session_goes_to_the_live_engine() {
    let n = index_of(|e| matches!(e, Event::RunStarted(_)));
    let mut app = live_with(
        n,
        vec![
            Event::Steer(SteerEvent {
                command: Command::SetStepMode { on: true },
            }),
            Event::Paused(PausedEvent {
                step: Step::Run {
                    node: Some("parse_line".into()),
                    iteration: 1,
                },
            }),
        ],
    );
    for _ in 0..3 {
        app.update(key(KeyCode::Left));
    }
    assert!(!app.at_end());
    assert_eq!(app.state().paused, None, "the cursor is before the pause");
    let actions = app.update(key(KeyCode::Char('a')));
    assert_eq!(actions, vec![Action::Steer(Command::Approve)]);
    let said = &app.flash().unwrap().1;
    assert!(said.contains("the live engine"), "{said}");
    assert!(said.contains("running parse_line #1"), "{said}");
    let screen = draw(&mut app, 160, 48);
    assert!(
        status_row(&screen, 48).contains("⏸ PAUSED"),
        "the live engine is paused whatever the cursor shows"
    );
}

#[test]
fn at_80x24_the_diff_opens_on_its_first_change_above_the_earlier_failure() {
    // A repair that changes the end of a long function.
    let head: String = (0..20).map(|i| format!("    x{i} = {i}\n")).collect();
    let v1 = format!("def parse_line(line):\n{head}    return line.split(\"=\")\n");
    let v2 = format!(
        "def parse_line(line):\n{head}    if \"=\" not in line:\n        return None\n    return line.split(\"=\", 1)\n"
    );
    let n = index_of(|e| matches!(e, Event::Localized(_))) + 1;
    let mut app = live_with(
        n,
        vec![
            Event::Code(CodeEvent {
                node: "parse_line".into(),
                iteration: 2,
                code: v1,
                source: CodeSource::Model,
                notes: Vec::new(),
            }),
            Event::Code(CodeEvent {
                node: "parse_line".into(),
                iteration: 3,
                code: v2,
                source: CodeSource::Model,
                notes: Vec::new(),
            }),
        ],
    );
    app.set_focus(Focus::Code);
    app.update(Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Char('d'),
        KeyModifiers::NONE,
    ))));
    let screen = draw(&mut app, 80, 24);
    let added = screen.lines().filter(|l| l.contains("┃+")).count();
    assert!(added >= 2, "the + lines of the repair show:\n{screen}");
}

/// A function whose tests never came fails with no place: the code pane
/// says so without one ("RunError at : no test ran" before), and what to do.
#[test]
fn a_failure_of_no_place_is_said_without_one_under_the_code() {
    let mut tape = tape();
    for r in &mut tape.records {
        if let Event::Localized(e) = &mut r.event {
            e.location = codeloop_protocol::Location {
                error_type: "RunError".into(),
                message: "no test ran: it has no tests, so it cannot pass".into(),
                ..codeloop_protocol::Location::default()
            };
        }
    }
    let mut app = at_failure(tape);
    for (w, h) in [(80, 24), (160, 48)] {
        let s = screen(&mut app, w, h);
        assert!(s.contains("✗ RunError: no test ran"), "{s}");
        assert!(!s.contains(" at :"), "{s}");
    }
}
