//! Step mode pauses before every model call and every run: a reply with no
//! code asked once more, the tests asked the other way after an unusable
//! reply, and the assembled program's run each wait for the person's word,
//! and the pause says why a call is asked again. Real engine, scripted
//! model, real python3.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-engine-child");

use codeloop_engine::{self as engine, EngineOptions};
use codeloop_session::story::words;
use codeloop_session::*;
use codeloop_testkit::engine as engine_kit;
use codeloop_testkit::{py, reply};

const PLAN: &str = "```json\n{\"functions\": [{\"name\": \"mean\", \"purpose\": \"mean\", \"inputs\": \"xs\", \"output\": \"float\", \"depends_on\": []}]}\n```";
const CODE: &str = "def mean(xs):\n    return sum(xs) / len(xs)\n";
const TESTS: &str = "def test_mean():\n    assert mean([1, 2]) == 1.5\n";

/// Each pause of a step-mode session answered by `answer`, read to its end.
async fn stepped(
    replies: Vec<codeloop_llm::scripted::ScriptedReply>,
    answer: impl Fn(&Step) -> Command,
) -> (State, FinalResult, Vec<Step>) {
    let dir = tempfile::tempdir().unwrap();
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
    let handle = engine::start(setup).unwrap();
    let (state, result, records) = engine_kit::finish(handle, |s| [answer(s)]).await;
    let pauses = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Paused(PausedEvent { step }) => Some(step.clone()),
            _ => None,
        })
        .collect();
    (state, result, pauses)
}

/// The calls' tags in the order they were asked.
fn tags(state: &State) -> Vec<String> {
    state.calls.values().map(|c| c.tag.clone()).collect()
}

#[tokio::test]
async fn a_reply_with_no_code_is_asked_again_only_after_a_pause_that_says_so() {
    let replies = vec![
        reply("plan", PLAN),
        reply("tests/mean", &py(TESTS)),
        reply("code/mean/1", "I would compute the mean of the list."),
        reply("code/mean/1/retry", &py(CODE)),
    ];
    let (state, result, pauses) = stepped(replies, |_| Command::Approve).await;
    assert!(result.passed, "{}", result.summary);
    assert_eq!(
        tags(&state),
        ["plan", "tests/mean", "code/mean/1", "code/mean/1/retry"]
    );
    let code_pauses: Vec<&Step> = pauses
        .iter()
        .filter(|s| {
            matches!(
                s,
                Step::ModelCall {
                    purpose: Purpose::Code { .. },
                    ..
                }
            )
        })
        .collect();
    assert_eq!(
        code_pauses,
        [
            &Step::ModelCall {
                purpose: Purpose::Code {
                    node: "mean".into()
                },
                again: None,
            },
            &Step::ModelCall {
                purpose: Purpose::Code {
                    node: "mean".into()
                },
                again: Some("the reply to code/mean/1 had no code".into()),
            },
        ],
        "every call paused before: {pauses:?}"
    );
    assert_eq!(
        words::step(code_pauses[1]),
        "writing code for mean, asked again (the reply to code/mean/1 had no code)"
    );
}

#[tokio::test]
async fn skipping_the_second_ask_makes_no_second_call() {
    let replies = vec![
        reply("plan", PLAN),
        reply("tests/mean", &py(TESTS)),
        reply("code/mean/1", "no code here"),
        reply("code/mean/1/retry", &py(CODE)),
    ];
    let (state, result, _) = stepped(replies, |s| match s {
        Step::ModelCall { again: Some(_), .. } => Command::Skip,
        _ => Command::Approve,
    })
    .await;
    assert!(!result.passed, "{}", result.summary);
    assert!(
        !tags(&state).iter().any(|t| t.ends_with("/retry")),
        "{:?}",
        tags(&state)
    );
}

#[tokio::test]
async fn the_tests_asked_the_other_way_wait_for_their_own_pause() {
    let replies = vec![
        reply("plan", PLAN),
        // No test file: the engine falls back to asking for cases.
        reply("tests/mean", "Tests would check the mean of a few lists."),
        reply(
            "tests/mean/retry",
            "{\"cases\": [{\"args\": \"[1, 2]\", \"expected\": \"1.5\"}]}",
        ),
        reply("code/mean/1", &py(CODE)),
    ];
    let (state, result, pauses) = stepped(replies, |_| Command::Approve).await;
    assert!(result.passed, "{}", result.summary);
    assert!(tags(&state).contains(&"tests/mean/retry".to_string()));
    let tests_pauses: Vec<&Step> = pauses
        .iter()
        .filter(|s| {
            matches!(
                s,
                Step::ModelCall {
                    purpose: Purpose::Tests { .. },
                    ..
                }
            )
        })
        .collect();
    assert_eq!(tests_pauses.len(), 2, "{pauses:?}");
    assert_eq!(
        tests_pauses[1],
        &Step::ModelCall {
            purpose: Purpose::Tests {
                node: "mean".into()
            },
            again: Some("the reply to tests/mean could not be used".into()),
        }
    );
}

#[tokio::test]
async fn the_programs_run_waits_for_its_own_pause_and_a_skip_leaves_it_unrun() {
    let replies = vec![
        reply("plan", PLAN),
        reply("tests/mean", &py(TESTS)),
        reply("code/mean/1", &py(CODE)),
    ];
    let program = Step::Run {
        node: None,
        iteration: 0,
    };
    let (state, result, pauses) = stepped(replies.clone(), |_| Command::Approve).await;
    assert!(result.passed, "{}", result.summary);
    assert_eq!(pauses.last(), Some(&program), "{pauses:?}");
    assert!(state.runs.values().any(|r| r.node.is_none()));

    let (state, result, _) = stepped(replies, |s| match s {
        Step::Run { node: None, .. } => Command::Skip,
        _ => Command::Approve,
    })
    .await;
    assert!(!result.passed, "{}", result.summary);
    assert!(
        !state.runs.values().any(|r| r.node.is_none()),
        "the program did not run"
    );
    assert!(
        state
            .notices
            .iter()
            .any(|n| n.message.starts_with("the program's run was skipped")),
        "{:?}",
        state.notices
    );
}
