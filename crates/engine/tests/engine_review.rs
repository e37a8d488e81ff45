//! The review before running (`review = true`), scripted with real python3
//! in the real sandbox: its verdict on the tape with its tokens counted, a
//! serious finding sent to a repair unrun (`review_repairs`), a reply that
//! cannot be read taken as a notice, the step-mode pause and its answers,
//! and no review at all when it is off.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-engine-child");

use codeloop_engine::{self as engine, EngineOptions, RepairPolicy};
use codeloop_llm::scripted::ScriptedReply;
use codeloop_protocol::Usage;
use codeloop_session::review::REVIEW_ERROR;
use codeloop_session::*;
use codeloop_testkit::engine as engine_kit;
use codeloop_testkit::{prompt_of, py, reply};

const PLAN: &str = "```json\n{\"functions\": [{\"name\": \"total_len\", \"purpose\": \"the total length of the words\", \"inputs\": \"words: list[str]\", \"output\": \"int\", \"depends_on\": []}]}\n```";
const TESTS: &str = "def test_total():\n    assert total_len([\"ab\", \"c\"]) == 3\n";
const BUGGY: &str = "def total_len(words):\n    total = 0\n    for w in words:\n        total += len(w) + 1\n    return total\n";
const FIXED: &str = "def total_len(words):\n    total = 0\n    for w in words:\n        total += len(w)\n    return total\n";
const SERIOUS: &str = "{\"verdict\": \"concerns\", \"findings\": [{\"severity\": \"serious\", \"line\": 4, \"what\": \"adds one per word: the total is too large\"}]}";
const OK: &str = "{\"verdict\": \"ok\", \"findings\": []}";

/// The plan, the tests, the buggy code, and the review of version 1.
fn script(review_1: Option<&str>, more: Vec<ScriptedReply>) -> Vec<ScriptedReply> {
    let mut replies = vec![
        reply("plan", PLAN),
        reply("tests/total_len", &py(TESTS)),
        reply("code/total_len/1", &py(BUGGY)),
    ];
    if let Some(text) = review_1 {
        replies.push(ScriptedReply {
            usage: Some(Usage::new(700, 40)),
            ..reply("review/total_len/1", text)
        });
    }
    replies.extend(more);
    replies
}

fn repair_2() -> ScriptedReply {
    reply(
        "repair/total_len/2",
        &format!("Each word adds one too many.\n{}", py(FIXED)),
    )
}

fn review_on(repairs: bool) -> EngineOptions {
    EngineOptions {
        policy: RepairPolicy {
            review: true,
            review_repairs: repairs,
            ..RepairPolicy::default()
        },
        ..EngineOptions::default()
    }
}

async fn finish(
    replies: Vec<ScriptedReply>,
    options: EngineOptions,
    on_pause: impl Fn(&Step) -> Vec<Command>,
) -> (State, FinalResult, Vec<Record>) {
    let dir = tempfile::tempdir().unwrap();
    let setup = engine_kit::setup(
        "the total length of a list of words",
        engine_kit::scripted(replies),
        options,
        dir.path().join("session"),
        HELPER,
    );
    engine_kit::finish(engine::start(setup).unwrap(), on_pause).await
}

fn runs_of(records: &[Record]) -> Vec<u32> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::RunStarted(RunStartedEvent {
                node: Some(_),
                iteration,
                ..
            }) => Some(*iteration),
            _ => None,
        })
        .collect()
}

fn reviews(records: &[Record]) -> Vec<(u32, ReviewVerdict, Vec<ReviewFinding>)> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Review(ReviewEvent {
                iteration,
                verdict,
                findings,
                ..
            }) => Some((*iteration, *verdict, findings.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_serious_finding_goes_to_a_repair_without_a_run() {
    let replies = script(
        Some(SERIOUS),
        vec![repair_2(), reply("review/total_len/2", OK)],
    );
    let (state, result, records) = finish(replies, review_on(true), |_| vec![]).await;
    assert!(result.passed, "{}", result.summary);
    // Version 1 was never run: the review sent it to its repair.
    assert_eq!(runs_of(&records), vec![2]);
    let found = reviews(&records);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].0, 1);
    assert_eq!(found[0].1, ReviewVerdict::Concerns);
    assert_eq!(found[0].2[0].line, Some(4));
    assert_eq!(found[1].1, ReviewVerdict::Ok);
    let localized = records
        .iter()
        .find_map(|r| match &r.event {
            Event::Localized(LocalizedEvent { location, .. }) => Some(location.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(localized.error_type, REVIEW_ERROR);
    assert_eq!(localized.line, Some(4));
    // The repair prompt carries the findings.
    let prompt = prompt_of(&records, "repair/total_len/2");
    assert!(
        prompt.contains(
            "A review of this code before it ran found:\n- serious, line 4: adds one per word"
        ),
        "{prompt}"
    );
    // The review's prompt shows the code with its line numbers, the spec and the tests.
    let review_prompt = prompt_of(&records, "review/total_len/1");
    assert!(
        review_prompt.contains("4 |         total += len(w) + 1"),
        "{review_prompt}"
    );
    assert!(
        review_prompt.contains("assert total_len"),
        "{review_prompt}"
    );
    // Its tokens count in the session's usage.
    assert!(state.usage.prompt_tokens >= 700, "{:?}", state.usage);
    assert_eq!(state.reviews_of("total_len").count(), 2);
    assert_eq!(
        state.current_review("total_len").unwrap().verdict,
        ReviewVerdict::Ok
    );
}

#[tokio::test]
async fn without_review_repairs_a_serious_finding_is_advice_and_the_code_runs() {
    let replies = script(
        Some(SERIOUS),
        vec![repair_2(), reply("review/total_len/2", OK)],
    );
    let (_, result, records) = finish(replies, review_on(false), |_| vec![]).await;
    assert!(result.passed, "{}", result.summary);
    assert_eq!(runs_of(&records), vec![1, 2]);
    // The run's failure, not the review's, goes to the repair; the
    // findings go with it.
    let prompt = prompt_of(&records, "repair/total_len/2");
    assert!(prompt.contains("AssertionError"), "{prompt}");
    assert!(prompt.contains("- serious, line 4:"), "{prompt}");
}

#[tokio::test]
async fn a_review_that_sent_code_to_repair_does_not_stop_the_next_version_running() {
    // The second review is serious too: version 2 runs all the same.
    let replies = script(
        Some(SERIOUS),
        vec![repair_2(), reply("review/total_len/2", SERIOUS)],
    );
    let (_, result, records) = finish(replies, review_on(true), |_| vec![]).await;
    assert!(result.passed, "{}", result.summary);
    assert_eq!(runs_of(&records), vec![2]);
}

#[tokio::test]
async fn a_review_reply_that_does_not_parse_is_a_notice_and_the_code_runs() {
    let replies = script(Some("Looks fine to me!"), vec![repair_2()]);
    let (state, result, records) = finish(replies, review_on(true), |_| vec![]).await;
    assert!(result.passed, "{}", result.summary);
    assert!(reviews(&records).is_empty());
    assert_eq!(runs_of(&records)[0], 1);
    assert!(
        state.notices.iter().any(|n| n
            .message
            .starts_with("the review of `total_len` could not be read")),
        "{:?}",
        state.notices
    );
}

#[tokio::test]
async fn with_review_off_no_review_is_asked_for() {
    let replies = script(None, vec![repair_2()]);
    let (_, result, records) = finish(replies, EngineOptions::default(), |_| vec![]).await;
    assert!(result.passed, "{}", result.summary);
    assert!(reviews(&records).is_empty());
    assert!(!records.iter().any(|r| matches!(
        &r.event,
        Event::ModelRequest(ModelRequestEvent {
            purpose: Purpose::Review { .. },
            ..
        })
    )));
}

#[tokio::test]
async fn in_step_mode_the_review_is_a_pause_whose_skip_sends_the_code_to_repair() {
    let options = EngineOptions {
        step_mode: true,
        ..review_on(false)
    };
    let replies = script(
        Some(SERIOUS),
        vec![repair_2(), reply("review/total_len/2", OK)],
    );
    let (_, result, records) = finish(replies, options, |step| match step {
        // The person reads the findings, hints and sends version 1 back.
        Step::Review { iteration: 1, .. } => vec![
            Command::Hint {
                node: "total_len".into(),
                text: "do not count separators".into(),
            },
            Command::Skip,
        ],
        _ => vec![Command::Approve],
    })
    .await;
    assert!(result.passed, "{}", result.summary);
    let paused: Vec<&Step> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Paused(PausedEvent { step }) => Some(step),
            _ => None,
        })
        .collect();
    assert!(
        paused
            .iter()
            .any(|s| matches!(s, Step::Review { node, iteration: 1 } if node == "total_len")),
        "{paused:?}"
    );
    // Approving the review of version 2 runs it: no second pause before its run.
    assert!(
        !paused
            .iter()
            .any(|s| matches!(s, Step::Run { node: Some(_), .. })),
        "{paused:?}"
    );
    assert_eq!(runs_of(&records), vec![2]);
    let prompt = prompt_of(&records, "repair/total_len/2");
    assert!(prompt.contains("do not count separators"), "{prompt}");
    assert!(prompt.contains("- serious, line 4:"), "{prompt}");
    // The history says what the skip did there: a repair, not a step left out.
    let state = codeloop_session::State::from_records(&records);
    let skips: Vec<bool> = state
        .history
        .iter()
        .filter_map(|h| match h {
            codeloop_session::state::HistoryEntry::Steer {
                steer, review_skip, ..
            } if state.steers[*steer] == Command::Skip => Some(*review_skip),
            _ => None,
        })
        .collect();
    assert_eq!(skips, vec![true]);
}

#[tokio::test]
async fn code_edited_at_the_review_pause_runs_unreviewed() {
    let options = EngineOptions {
        step_mode: true,
        ..review_on(false)
    };
    let replies = script(Some(SERIOUS), vec![]);
    let (state, result, records) = finish(replies, options, |step| match step {
        // The person reads the finding and fixes line 4 by hand.
        Step::Review { .. } => vec![
            Command::EditCode {
                node: "total_len".into(),
                code: FIXED.into(),
            },
            Command::Approve,
        ],
        _ => vec![Command::Approve],
    })
    .await;
    assert!(result.passed, "{}", result.summary);
    // Their version ran; it was not reviewed, and no repair was asked for.
    assert_eq!(runs_of(&records), vec![2]);
    assert_eq!(reviews(&records).len(), 1);
    assert_eq!(state.nodes["total_len"].code(), Some(FIXED));
    assert!(!records.iter().any(|r| matches!(&r.event,
        Event::ModelRequest(ModelRequestEvent { tag, .. }) if tag.starts_with("repair/"))));
}
