//! A plan's `inputs` are checked as a parameter list at plan time (issue
//! 42: `"inputs": "read_rows('sales.csv')"` became the code prompt's `def
//! read_rows(read_rows('sales.csv'))`): mended where they can be, else the
//! plan is asked again saying what to write. Real engine, scripted model,
//! real python3.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-engine-child");

use codeloop_engine::{self as engine, EngineOptions};
use codeloop_session::*;
use codeloop_testkit::engine as engine_kit;
use codeloop_testkit::{prompt_of, py, reply};

fn plan(inputs: &str) -> String {
    format!(
        "```json\n{{\"functions\": [{{\"name\": \"count_rows\", \"purpose\": \"count the rows of the file\", \"inputs\": \"{inputs}\", \"output\": \"int\", \"depends_on\": []}}]}}\n```"
    )
}

const TESTS: &str = "def test_rows():\n    assert count_rows('sales.csv') == 2\n";
const CODE: &str = "def count_rows(path='sales.csv'):\n    with open(path) as f:\n        return len(f.read().splitlines())\n";

async fn session(replies: Vec<codeloop_llm::scripted::ScriptedReply>) -> (State, Vec<Record>) {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("sales.csv");
    std::fs::write(&csv, "a,1\nb,2\n").unwrap();
    let mut setup = engine_kit::setup(
        "Count the rows of sales.csv",
        engine_kit::scripted(replies),
        EngineOptions::default(),
        dir.path().join("session"),
        HELPER,
    );
    setup.inputs = vec![csv];
    let (state, result, records) =
        engine_kit::finish(engine::start(setup).unwrap(), |_| Vec::<Command>::new()).await;
    assert!(result.passed, "{}", result.summary);
    (state, records)
}

#[tokio::test]
async fn a_call_where_the_parameters_go_is_mended_into_a_parameter() {
    let (state, records) = session(vec![
        reply("plan", &plan("count_rows('sales.csv')")),
        reply("tests/count_rows", &py(TESTS)),
        reply("code/count_rows/1", &py(CODE)),
    ])
    .await;
    assert_eq!(state.specs[0].inputs, "path: str = 'sales.csv'");
    assert!(
        state
            .notices
            .iter()
            .any(|n| n.message.contains("mended to `path: str = 'sales.csv'`")),
        "{:?}",
        state.notices
    );
    let code_prompt = prompt_of(&records, "code/count_rows/1");
    assert!(
        !code_prompt.contains("count_rows(count_rows("),
        "{code_prompt}"
    );
    assert!(
        code_prompt.contains("count_rows(path: str = 'sales.csv')"),
        "{code_prompt}"
    );
}

#[tokio::test]
async fn words_where_the_parameters_go_ask_for_the_plan_again() {
    let (state, records) = session(vec![
        reply("plan", &plan("the rows of the file")),
        reply("plan/2", &plan("path: str")),
        reply("tests/count_rows", &py(TESTS)),
        reply("code/count_rows/1", &py(CODE)),
    ])
    .await;
    assert_eq!(state.specs[0].inputs, "path: str");
    let again = prompt_of(&records, "plan/2");
    assert!(
        again.contains("are not a parameter list") && again.contains("name: type"),
        "{again}"
    );
}
