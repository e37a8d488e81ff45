//! A reflection that repeats itself (Qwen2.5-Coder-0.5B said one sentence
//! eight times before its code) is recorded cut where the repetition
//! begins, marked, said in a notice, and not fed into the next repair's
//! prompt. Real engine, scripted model, real python3.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-engine-child");

use codeloop_engine::{self as engine, EngineOptions};
use codeloop_session::story::{self, What, words};
use codeloop_session::*;
use codeloop_testkit::engine as engine_kit;
use codeloop_testkit::{messages_of, py, reply};

const PLAN: &str = "```json\n{\"functions\": [{\"name\": \"mean\", \"purpose\": \"mean\", \"inputs\": \"xs\", \"output\": \"float\", \"depends_on\": []}]}\n```";
const TESTS: &str = "def test_halves():\n    assert mean([1, 2]) == 1.5\n";
const BUGGY: &str = "def mean(xs):\n    return sum(xs) // len(xs)\n";
const STILL_BUGGY: &str = "def mean(xs):\n    return int(sum(xs) / len(xs))\n";
const FIXED: &str = "def mean(xs):\n    return sum(xs) / len(xs)\n";
const SAID: &str = "The test expects 1.5, so the division must not round down.";

#[tokio::test]
async fn a_looped_reflection_is_cut_marked_and_not_fed_into_the_next_repair() {
    let dir = tempfile::tempdir().unwrap();
    let looped = format!(
        "Floor division drops the half. {}\n\n{}",
        [SAID; 8].join(" "),
        py(STILL_BUGGY)
    );
    let replies = vec![
        reply("plan", PLAN),
        reply("tests/mean", &py(TESTS)),
        reply("code/mean/1", &py(BUGGY)),
        reply("repair/mean/2", &looped),
        reply("repair/mean/3", &py(FIXED)),
    ];
    let setup = engine_kit::setup(
        "the mean",
        engine_kit::scripted(replies),
        EngineOptions::default(),
        dir.path().join("session"),
        HELPER,
    );
    let (state, result, records) =
        engine_kit::finish(engine::start(setup).unwrap(), |_| Vec::<Command>::new()).await;
    assert!(result.passed, "{}", result.summary);
    let reflections: Vec<String> = story::timeline(&state)
        .into_iter()
        .filter(|l| matches!(l.what, What::Reflection { .. }))
        .map(|l| l.text)
        .collect();
    assert_eq!(
        reflections[0],
        format!(
            "Floor division drops the half. {SAID} {}",
            words::REFLECTION_CUT
        ),
        "cut where the sentence is said again, and marked"
    );
    assert!(
        state
            .notices
            .iter()
            .any(|n| n.message.contains("the same sentence") && n.message.contains("8 times")),
        "{:?}",
        state.notices
    );
    // The next repair does not go on from the reply that held it.
    let next: String = messages_of(&records, "repair/mean/3")
        .iter()
        .map(|m| m.content.clone())
        .collect();
    assert!(!next.contains(SAID), "the loop was fed on:\n{next}");
    assert!(
        next.contains("int(sum(xs) / len(xs))"),
        "the code it repairs is shown:\n{next}"
    );
    // The report shows it cut too.
    let report = report::markdown(&state);
    assert!(report.contains(words::REFLECTION_CUT), "{report}");
    assert_eq!(report.matches(SAID).count(), 1, "{report}");
}
