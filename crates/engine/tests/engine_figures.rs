//! The figures and the coverage of each run reach the tape and the repair
//! prompt, scripted with real python3 in the real sandbox: the repair prompt
//! shows the failing function with the lines that ran marked (what LDB shows),
//! and every run's record carries its CPU time and peak memory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-engine-child");

use codeloop_engine::{self as engine, EngineOptions, RepairPolicy};
use codeloop_llm::scripted::ScriptedReply;
use codeloop_session::*;
use codeloop_testkit::engine as engine_kit;
use codeloop_testkit::{prompt_of, py, reply};

fn plan(name: &str) -> String {
    format!(
        "```json\n{{\"functions\": [{{\"name\": \"{name}\", \"purpose\": \"{name}\", \"inputs\": \"x\", \"output\": \"y\", \"depends_on\": []}}]}}\n```"
    )
}

async fn records(replies: Vec<ScriptedReply>, options: EngineOptions) -> Vec<Record> {
    let dir = tempfile::tempdir().unwrap();
    let model = engine_kit::scripted(replies);
    let setup = engine_kit::setup(
        "a test task",
        model,
        options,
        dir.path().join("session"),
        HELPER,
    );
    let (_, _, records) = engine_kit::finish(engine::start(setup).unwrap(), |_| Vec::new()).await;
    records
}

const TESTS: &str = "def test_negative():\n    assert sign(-3) == -1\n";
const BUGGY: &str =
    "def sign(x):\n    if x > 0:\n        y = 1\n    else:\n        y = 1\n    return y\n";
const FIXED: &str =
    "def sign(x):\n    if x > 0:\n        y = 1\n    else:\n        y = -1\n    return y\n";

fn script() -> Vec<ScriptedReply> {
    vec![
        reply("plan", &plan("sign")),
        reply("tests/sign", &py(TESTS)),
        reply("code/sign/1", &py(BUGGY)),
        reply(
            "repair/sign/2",
            &format!("The else branch gives 1.\nVerdict: code\n{}", py(FIXED)),
        ),
    ]
}

#[tokio::test]
async fn the_repair_prompt_marks_the_lines_of_the_failing_path() {
    let records = records(script(), EngineOptions::default()).await;
    let location = records
        .iter()
        .find_map(|r| match &r.event {
            Event::Localized(LocalizedEvent { location, .. }) => Some(location.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(location.executed_lines, vec![2, 5, 6], "{location:?}");
    assert_eq!(location.missed_lines, vec![3], "{location:?}");
    let prompt = prompt_of(&records, "repair/sign/2");
    for marked in [
        "> 2 |     if x > 0:\n",
        "! 3 |         y = 1\n",
        "  4 |     else:\n",
        "> 5 |         y = 1\n",
        "> 6 |     return y\n",
        "(3 lines ran, 1 did not)",
    ] {
        assert!(prompt.contains(marked), "{marked:?} not in\n{prompt}");
    }
    // Without the trace, no coverage either.
    let records = records_without_values().await;
    let prompt = prompt_of(&records, "repair/sign/2");
    assert!(!prompt.contains("! 3 |"), "{prompt}");
    assert!(!prompt.contains("that ran in the failing test"), "{prompt}");
}

async fn records_without_values() -> Vec<Record> {
    let options = EngineOptions {
        policy: RepairPolicy {
            runtime_values: false,
            ..RepairPolicy::default()
        },
        ..EngineOptions::default()
    };
    records(script(), options).await
}

#[tokio::test]
async fn every_run_on_the_tape_has_its_figures() {
    let records = records(script(), EngineOptions::default()).await;
    let runs: Vec<&RunRecord> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::RunFinished(RunFinishedEvent { record, .. }) => Some(record),
            _ => None,
        })
        .collect();
    assert!(runs.len() >= 2, "{runs:?}");
    for run in runs {
        let res = run
            .resources
            .unwrap_or_else(|| panic!("no figures: {run:?}"));
        // A Python interpreter's own pages, at least.
        assert!(res.peak_rss_bytes > 1 << 20, "{res:?}");
    }
}
