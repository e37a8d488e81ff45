//! Steering in step mode as a person does it: an edit made while the engine
//! waits before a run, then one approval, runs the edit (the approval was
//! for it), without a second pause. Real engine, scripted model, real python3.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-engine-child");

use codeloop_engine::{self as engine, EngineOptions};
use codeloop_session::*;
use codeloop_testkit::engine as engine_kit;
use codeloop_testkit::reply;

const PLAN: &str = "```json\n{\"functions\": [{\"name\": \"mean\", \"purpose\": \"mean\", \"inputs\": \"xs\", \"output\": \"float\", \"depends_on\": []}]}\n```";
const BUGGY: &str = "def mean(xs):\n    return sum(xs) // len(xs)\n";
const FIXED: &str = "def mean(xs):\n    return sum(xs) / len(xs)\n";
const TESTS: &str = "def test_mean():\n    assert mean([1, 2]) == 1.5\n";

#[tokio::test]
async fn an_edit_made_while_paused_before_a_run_runs_after_one_approval() {
    let dir = tempfile::tempdir().unwrap();
    let replies = vec![
        reply("plan", PLAN),
        reply("tests/mean", &format!("```python\n{TESTS}```\n")),
        reply("code/mean/1", &format!("```python\n{BUGGY}```\n")),
    ];
    let options = EngineOptions {
        step_mode: true,
        ..EngineOptions::default()
    };
    let setup = engine_kit::setup(
        "the mean",
        engine_kit::scripted(replies),
        options,
        dir.path().join("session"),
        HELPER,
    );
    let mut handle = engine::start(setup).unwrap();
    let mut records = Vec::new();
    let mut edited = false;
    while let Some(r) = handle.events.recv().await {
        if let Event::Paused(PausedEvent { step }) = &r.event {
            if matches!(step, Step::Run { node: Some(_), .. }) && !edited {
                edited = true;
                handle
                    .commands
                    .send(Command::EditCode {
                        node: "mean".into(),
                        code: FIXED.into(),
                    })
                    .await
                    .unwrap();
            }
            handle.commands.send(Command::Approve).await.unwrap();
        }
        records.push(r);
    }
    let result = handle.done.await.unwrap().unwrap();
    assert!(result.passed, "{}", result.summary);
    let run_pauses: Vec<&Step> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Paused(PausedEvent {
                step: s @ Step::Run { node: Some(_), .. },
            }) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(
        run_pauses.len(),
        1,
        "one approval ran the edit: {run_pauses:?}"
    );
    let state = State::from_records(&records);
    let runs: Vec<u32> = state
        .runs
        .values()
        .filter(|r| r.node.is_some())
        .map(|r| r.iteration)
        .collect();
    assert_eq!(runs, vec![2], "the edit (iteration 2) is what ran");
}
