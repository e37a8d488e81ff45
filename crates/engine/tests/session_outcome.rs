//! What a session came to says the same thing everywhere: the node statuses
//! on the tape, the engine's result, `Outcome`, the session list's result and
//! the report the engine writes. Real engine, scripted model, real python3.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-engine-child");

use codeloop_engine::{self as engine, EngineOptions};
use codeloop_llm::scripted::ScriptedReply;
use codeloop_session::index::{SessionResult, SessionSummary};
use codeloop_session::*;
use codeloop_testkit::engine as engine_kit;
use codeloop_testkit::{py, reply};

const PLAN: &str = "```json\n{\"functions\": [{\"name\": \"mean\", \"purpose\": \"mean\", \"inputs\": \"xs\", \"output\": \"float\", \"depends_on\": []}, {\"name\": \"half_mean\", \"purpose\": \"half the mean\", \"inputs\": \"xs\", \"output\": \"float\", \"depends_on\": [\"mean\"]}]}\n```";
const MEAN: &str = "def mean(xs):\n    return sum(xs) / len(xs)\n";
const MEAN_TESTS: &str = "def test_mean():\n    assert mean([1, 2]) == 1.5\n";
const HALF: &str = "def half_mean(xs):\n    return mean(xs) / 2\n";
const HALF_TESTS: &str = "def test_half():\n    assert half_mean([2, 2]) == 1.0\n";

fn replies() -> Vec<ScriptedReply> {
    vec![
        reply("plan", PLAN),
        reply("tests/mean", &py(MEAN_TESTS)),
        reply("code/mean/1", &py(MEAN)),
        reply("tests/half_mean", &py(HALF_TESTS)),
        reply("code/half_mean/1", &py(HALF)),
    ]
}

/// Run a step-mode session, answering each pause with `answer`; the
/// records, the result and the session folder.
async fn step_session(
    answer: impl Fn(&Step) -> Command,
) -> (Vec<Record>, FinalResult, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let options = EngineOptions {
        step_mode: true,
        workers: 1,
        ..EngineOptions::default()
    };
    let setup = engine_kit::setup(
        "the mean, and half of it",
        engine_kit::scripted(replies()),
        options,
        dir.path().join("session"),
        HELPER,
    );
    let handle = engine::start(setup).unwrap();
    let (_, result, records) = engine_kit::finish(handle, |s| [answer(s)]).await;
    (records, result, dir)
}

fn report_of(result: &FinalResult) -> String {
    let out = std::path::PathBuf::from(result.output_dir.clone().expect("the program was written"));
    std::fs::read_to_string(out.join("report.md")).unwrap()
}

#[tokio::test]
async fn a_skipped_run_is_skipped_not_passed_anywhere_and_its_dependents_still_run() {
    let (records, result, dir) = step_session(|step| match step {
        Step::Run {
            node: Some(n),
            iteration: 1,
        } if n == "mean" => Command::Skip,
        _ => Command::Approve,
    })
    .await;
    let state = State::from_records(&records);
    assert_eq!(state.nodes["mean"].status, NodeStatus::Skipped);
    assert_eq!(
        state.nodes["half_mean"].status,
        NodeStatus::Passed,
        "a skipped node's code is kept: its dependents run against it"
    );
    assert!(!result.passed, "{}", result.summary);
    assert_eq!((result.nodes_passed, result.nodes_total), (1, 2));
    assert!(
        result.summary.contains("mean skipped"),
        "{}",
        result.summary
    );
    assert_eq!(Outcome::of(&state), Outcome::Failed);
    let summary = SessionSummary::of(&state, &dir.path().join("session"));
    assert_eq!(summary.result, SessionResult::Failed);
    let report = report_of(&result);
    assert!(
        report.contains("## mean (skipped, 1 iteration)"),
        "{report}"
    );
    assert!(
        report.contains("Result: failed: 1 of 2 functions pass"),
        "{report}"
    );
}

#[tokio::test]
async fn a_cancel_leaves_no_node_checking_and_the_report_says_cancelled_after_the_result() {
    let (records, result, _dir) = step_session(|step| match step {
        Step::Run { .. } => Command::Cancel,
        _ => Command::Approve,
    })
    .await;
    let state = State::from_records(&records);
    assert!(
        result.summary.starts_with("cancelled"),
        "{}",
        result.summary
    );
    assert_eq!(
        state.nodes["mean"].status,
        NodeStatus::Cancelled,
        "it was being checked when the session was cancelled"
    );
    assert_eq!(state.nodes["half_mean"].status, NodeStatus::NotRun);
    assert_eq!(Outcome::of(&state), Outcome::Cancelled);
    // Nothing was assembled (half_mean has no code): the report is the one
    // `codeloop export --format md` writes, the same function.
    assert_eq!(result.output_dir, None);
    let report = codeloop_session::report::markdown(&state);
    assert!(
        report.contains("## mean (cancelled, 1 iteration)"),
        "{report}"
    );
    assert!(
        report.contains("## half_mean (not run, 0 iterations)"),
        "{report}"
    );
    assert!(
        report.contains(&format!("Result: {}", result.summary)),
        "the report is written once the result is on the tape:\n{report}"
    );
    assert!(!report.contains("the tape ends after"), "{report}");
}
