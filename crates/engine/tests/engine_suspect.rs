//! "The test may be wrong" as a state the person sees (issue 42: a
//! reflection said "Therefore, the test was wrong" and the next step was
//! another code repair, silently): the doubt is said in a notice, and in
//! step mode the engine waits before the repaired code runs, so the tests
//! can be edited first; the edit is what the code runs against. Real
//! engine, scripted model, real python3.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-engine-child");

use codeloop_engine::{self as engine, EngineOptions};
use codeloop_session::*;
use codeloop_testkit::engine as engine_kit;
use codeloop_testkit::{py, reply};

const PLAN: &str = "```json\n{\"functions\": [{\"name\": \"mean\", \"purpose\": \"mean\", \"inputs\": \"xs\", \"output\": \"float\", \"depends_on\": []}]}\n```";
const WRONG_TESTS: &str = "def test_halves():\n    assert mean([1, 2]) == 2.0\n";
const RIGHT_TESTS: &str = "def test_halves():\n    assert mean([1, 2]) == 1.5\n";
const CODE: &str = "def mean(xs):\n    return sum(xs) / len(xs)\n";
const AGAIN: &str = "def mean(xs):\n    return sum(xs) / float(len(xs))\n";

fn replies() -> Vec<codeloop_llm::scripted::ScriptedReply> {
    vec![
        reply("plan", PLAN),
        reply("tests/mean", &py(WRONG_TESTS)),
        reply("code/mean/1", &py(CODE)),
        reply(
            "repair/mean/2",
            &format!(
                "The mean of [1, 2] is 1.5 and the code returns 1.5. Therefore, the test was wrong.\n\n{}",
                py(AGAIN)
            ),
        ),
    ]
}

#[tokio::test]
async fn in_step_mode_the_engine_waits_at_a_doubted_test_and_runs_the_edited_one() {
    let dir = tempfile::tempdir().unwrap();
    let setup = engine_kit::setup(
        "the mean",
        engine_kit::scripted(replies()),
        EngineOptions {
            step_mode: true,
            ..EngineOptions::default()
        },
        dir.path().join("session"),
        HELPER,
    );
    let (state, result, records) =
        engine_kit::finish(engine::start(setup).unwrap(), |step| match step {
            Step::SuspectTest { .. } => vec![
                Command::EditTests {
                    node: "mean".into(),
                    code: RIGHT_TESTS.into(),
                },
                Command::Approve,
            ],
            _ => vec![Command::Approve],
        })
        .await;
    assert!(result.passed, "{}", result.summary);
    let paused: Vec<&Step> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Paused(PausedEvent {
                step: s @ Step::SuspectTest { .. },
            }) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(
        paused,
        [&Step::SuspectTest {
            node: "mean".into(),
            iteration: 1,
            why: "its reflection says \"Therefore, the test was wrong.\"".into(),
        }]
    );
    assert_eq!(state.nodes["mean"].tests.as_deref(), Some(RIGHT_TESTS));
    assert_eq!(
        state.nodes["mean"].iteration(),
        2,
        "the repaired code ran the edited tests"
    );
}

#[tokio::test]
async fn headless_the_doubt_is_said_never_silently_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let mut replies = replies();
    replies.push(reply("repair/mean/3", &py(CODE)));
    replies.push(reply("fresh/mean/4", &py(AGAIN)));
    let setup = engine_kit::setup(
        "the mean",
        engine_kit::scripted(replies),
        EngineOptions {
            max_iterations: 2,
            ..EngineOptions::default()
        },
        dir.path().join("session"),
        HELPER,
    );
    let (state, _, _) =
        engine_kit::finish(engine::start(setup).unwrap(), |_| Vec::<Command>::new()).await;
    assert!(
        state.notices.iter().any(|n| n.message.starts_with(
            "the test of mean may be wrong: its reflection says \"Therefore, the test was wrong.\""
        )),
        "{:?}",
        state.notices
    );
}
