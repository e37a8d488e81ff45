//! Functional consensus (`candidates` > 1), scripted with real python3 in
//! the real sandbox: the first code written three times, each candidate
//! run on the inputs of the tests, the one most others agree with kept;
//! a candidate that does not load scores nothing; off, one candidate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-engine-child");

use codeloop_engine::{self as engine, EngineOptions};
use codeloop_llm::scripted::ScriptedReply;
use codeloop_session::*;
use codeloop_testkit::engine as engine_kit;
use codeloop_testkit::{py, reply};

const PLAN: &str = "```json\n{\"functions\": [{\"name\": \"total_len\", \"purpose\": \"the total length of the words\", \"inputs\": \"words: list[str]\", \"output\": \"int\", \"depends_on\": []}]}\n```";
// Two calls the vote can use, one built from a variable of the test (no use).
const TESTS: &str = "def test_total():\n    assert total_len([\"ab\", \"c\"]) == 3\n\ndef test_empty():\n    assert total_len([]) == 0\n\ndef test_one():\n    words = [\"abc\"]\n    assert total_len(words) == 3\n";
const BUGGY: &str = "def total_len(words):\n    total = 0\n    for w in words:\n        total += len(w) + 1\n    return total\n";
const SUM: &str = "def total_len(words):\n    return sum(len(w) for w in words)\n";
const JOIN: &str = "def total_len(words):\n    return len(\"\".join(words))\n";
const BROKEN: &str = "def total_len(words)\n    return 0\n";
const FIXED: &str = "def total_len(words):\n    total = 0\n    for w in words:\n        total += len(w)\n    return total\n";

async fn finish(replies: Vec<ScriptedReply>, candidates: u32) -> (State, FinalResult, Vec<Record>) {
    let dir = tempfile::tempdir().unwrap();
    let options = EngineOptions {
        candidates,
        ..EngineOptions::default()
    };
    let setup = engine_kit::setup(
        "the total length of a list of words",
        engine_kit::scripted(replies),
        options,
        dir.path().join("session"),
        HELPER,
    );
    engine_kit::finish(engine::start(setup).unwrap(), |_| Vec::new()).await
}

fn script(second: &str, third: &str) -> Vec<ScriptedReply> {
    vec![
        reply("plan", PLAN),
        reply("tests/total_len", &py(TESTS)),
        reply("code/total_len/1", &py(BUGGY)),
        reply("code/total_len/1/c2", &py(second)),
        reply("code/total_len/1/c3", &py(third)),
        // Two calls of the function, and one that is not (left out).
        reply(
            "inputs/total_len",
            "{\"calls\": [\"total_len(['a', 'bb'])\", \"total_len(['x'])\", \"print(1)\"]}",
        ),
        reply(
            "repair/total_len/2",
            &format!("One too many per word.\n{}", py(FIXED)),
        ),
    ]
}

fn tags(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ModelRequest(ModelRequestEvent { tag, .. }) => Some(tag.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_candidate_most_others_agree_with_is_kept() {
    let (state, result, records) = finish(script(SUM, JOIN), 3).await;
    assert!(result.passed, "{}", result.summary);
    assert_eq!(
        tags(&records),
        [
            "plan",
            "tests/total_len",
            "code/total_len/1",
            "code/total_len/1/c2",
            "code/total_len/1/c3",
            "inputs/total_len"
        ]
    );
    let info = state.nodes["total_len"].candidates.clone().unwrap();
    // The inputs: ["ab", "c"] and [] from the tests (`words` is the test's
    // own variable), ["a", "bb"] and ["x"] proposed by the model.
    assert_eq!((info.inputs, info.proposed), (4, 2));
    let scores: Vec<u32> = info.candidates.iter().map(|c| c.score).collect();
    assert_eq!(scores, [2, 5, 5]);
    assert_eq!(info.chosen, 1);
    assert!(
        info.candidates
            .iter()
            .all(|c| c.loaded && c.call_id.is_some())
    );
    // The chosen candidate is version 1, and it passed without a repair.
    assert_eq!(state.nodes["total_len"].versions.len(), 1);
    assert_eq!(state.nodes["total_len"].code(), Some(SUM));
    // The Candidates event comes just before the chosen code.
    let at = records
        .iter()
        .position(|r| matches!(r.event, Event::Candidates(_)))
        .unwrap();
    assert!(
        matches!(&records[at + 1].event, Event::Code(CodeEvent { code, iteration: 1, .. }) if code == SUM)
    );
    let md = report::markdown(&state);
    assert!(
        md.contains(
            "- vote #1: 3 candidates on 4 inputs (2 proposed by the model): #2 chosen (agreement 5 of 8)"
        ),
        "{md}"
    );
}

#[tokio::test]
async fn a_candidate_that_does_not_load_scores_nothing() {
    let (state, _, _) = finish(script(BROKEN, JOIN), 3).await;
    let info = state.nodes["total_len"].candidates.clone().unwrap();
    assert!(!info.candidates[1].loaded);
    assert_eq!(info.candidates[1].score, 0);
    // #1 and #3 agree on [] only: equal, so the first is kept.
    assert_eq!(info.chosen, 0);
}

#[tokio::test]
async fn with_one_candidate_there_is_no_vote() {
    let (state, result, records) = finish(script(SUM, JOIN), 1).await;
    assert!(result.passed, "{}", result.summary);
    assert!(state.nodes["total_len"].candidates.is_none());
    assert!(!tags(&records).iter().any(|t| t.contains("/c")));
    // The first code failed and was repaired.
    assert_eq!(state.nodes["total_len"].versions.len(), 2);
}
