//! `codeloop run` end to end against an OpenAI-compatible server on loopback:
//! the real binary, real HTTP with streamed SSE replies, real python3 in the
//! sandbox. The server stands in for a hosted model at the wire level and
//! answers by what each prompt asks for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::net::TcpListener;
use std::process::Command;

use codeloop_testkit::prompt_server;
use prompt_server::PromptServer;

const PLAN: &str = "```json\n{\"functions\": [{\"name\": \"clamp\", \"purpose\": \"Limit x to the range lo..hi\", \"inputs\": \"x: int, lo: int, hi: int\", \"output\": \"int\", \"depends_on\": []}]}\n```";
const TESTS: &str = "```python\ndef test_inside():\n    assert clamp(5, 0, 10) == 5\n\ndef test_above():\n    assert clamp(15, 0, 10) == 10\n\ndef test_below():\n    assert clamp(-3, 0, 10) == 0\n```";
/// The tests as a served model gives them: cases, under the schema.
const CASES: &str = "{\"cases\": [{\"args\": \"5, 0, 10\", \"expected\": \"5\"}, {\"args\": \"15, 0, 10\", \"expected\": \"10\"}, {\"args\": \"-3, 0, 10\", \"expected\": \"0\"}]}";
const BUGGY: &str = "```python\ndef clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return x\n    return x\n```";
const FIXED: &str = "The upper branch returned x instead of hi.\n```python\ndef clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n```";

const PLAN_INPUT: &str = "```json\n{\"functions\": [{\"name\": \"count_rows\", \"purpose\": \"Rows of data.csv below its header\", \"inputs\": \"path: str\", \"output\": \"int\", \"depends_on\": []}]}\n```";
const TESTS_INPUT: &str =
    "```python\ndef test_rows():\n    assert count_rows('data.csv') == 3\n```";
const CASES_INPUT: &str = "{\"cases\": [{\"args\": \"'data.csv'\", \"expected\": \"3\"}]}";
const CODE_INPUT: &str = "```python\ndef count_rows(path):\n    with open(path) as f:\n        return len(f.read().splitlines()) - 1\n```";

fn reply_for(prompt: &str) -> &'static str {
    if prompt.contains("count_rows") || prompt.contains("data.csv") {
        if prompt.contains("Write this function") {
            CODE_INPUT
        } else if prompt.contains("Write tests for this function") {
            TESTS_INPUT
        } else if prompt.contains("Write test cases for") {
            CASES_INPUT
        } else {
            PLAN_INPUT
        }
    } else if prompt.contains("failed its tests") {
        FIXED
    } else if prompt.contains("Write this function") {
        BUGGY
    } else if prompt.contains("Write tests for this function") {
        TESTS
    } else if prompt.contains("Write test cases for") {
        CASES
    } else {
        PLAN
    }
}

#[test]
fn run_against_an_openai_compatible_server_repairs_and_passes() {
    let server = PromptServer::start(reply_for);
    let base_url = server.base_url.clone();
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["run", "Clamp an integer into a range", "--json"])
        .args(["--base-url", &base_url])
        .arg("--out")
        .arg(dir.path().join("out"))
        .env("CODELOOP_DATA_DIR", dir.path().join("data"))
        .env("CODELOOP_CACHE_DIR", dir.path().join("cache"))
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .env("OPENAI_API_KEY", "sk-loopback-secret")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("run     clamp #1: failed"), "{stderr}");
    assert!(stderr.contains("clamp.py:5"), "{stderr}");
    assert!(stderr.contains("run     clamp #2: passed"), "{stderr}");
    assert!(stderr.contains("result: PASSED"), "{stderr}");
    // 4 calls (plan, tests, code, repair) of 100 + 20 tokens each.
    assert!(stderr.contains("tokens: 400 in + 80 out"), "{stderr}");

    // --json: the tape's events on stdout, and the key is never in them.
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.first().unwrap()["type"], "session_started");
    assert_eq!(events.first().unwrap()["config"]["model"], "loopback-coder");
    assert_eq!(events.last().unwrap()["type"], "finished");
    assert!(!stdout.contains("sk-loopback-secret"));

    // The requests as the server saw them: streamed, with the key.
    let posts: Vec<_> = server
        .exchanges()
        .into_iter()
        .filter(|e| e.request_line.starts_with("POST /v1/chat/completions"))
        .collect();
    assert_eq!(posts.len(), 4);
    for post in &posts {
        assert!(
            post.headers
                .iter()
                .any(|h| h.eq_ignore_ascii_case("authorization: Bearer sk-loopback-secret"))
        );
        let b: serde_json::Value = serde_json::from_str(&post.body).unwrap();
        assert_eq!(b["stream"], true);
        assert_eq!(b["model"], "loopback-coder");
    }
    let program = std::fs::read_to_string(dir.path().join("out/program.py")).unwrap();
    assert!(program.contains("return hi"));
}

#[test]
fn an_input_file_is_described_to_the_model_and_given_to_the_program_and_a_solved_task_is_cached() {
    let server = PromptServer::start(reply_for);
    let base_url = server.base_url.clone();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("data.csv");
    std::fs::write(&input, "name,qty\napple,3\npear,5\nfig,1\n").unwrap();
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_codeloop"))
            .args(["run", "Count the rows of data.csv", "--base-url", &base_url])
            .arg("--input")
            .arg(&input)
            .env("CODELOOP_DATA_DIR", dir.path().join("data"))
            .env("CODELOOP_CACHE_DIR", dir.path().join("cache"))
            .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
            .output()
            .unwrap()
    };
    let first = run();
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{stderr}");
    let bodies = server.posts();
    assert_eq!(bodies.len(), 3, "plan, tests, code");
    let plan: serde_json::Value = serde_json::from_str(&bodies[0]).unwrap();
    let prompt = plan["messages"][1]["content"].as_str().unwrap();
    assert!(
        prompt.contains("data.csv (30 B): CSV (comma), 2 columns, 3 rows"),
        "{prompt}"
    );
    assert!(prompt.contains("- qty: int, e.g. 3, 5, 1"), "{prompt}");

    // The same task again: replayed from the cache, verified by a real run, no model call.
    let second = run();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    assert!(stderr.contains("solved before"), "{stderr}");
    assert!(stderr.contains("run     count_rows #1: passed"), "{stderr}");
    assert_eq!(server.posts().len(), 3, "no new model calls");
}

#[test]
fn an_unreachable_server_is_a_clear_error_not_a_fallback() {
    // A port that was free a moment ago: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["run", "anything"])
        .args(["--base-url", &format!("http://127.0.0.1:{port}/v1")])
        .env("CODELOOP_DATA_DIR", dir.path().join("data"))
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
}
