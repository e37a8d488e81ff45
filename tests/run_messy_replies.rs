//! The real binary against a loopback server that answers the way reasoning
//! models and small token limits really do: the plan's draft inside a
//! reasoning field, a `<think>` block with a decoy function in the code reply,
//! and a code reply cut off at `finish_reason: "length"` that must be
//! continued, never compiled half-written.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::process::Command;

use codeloop_testkit::cli::codeloop_in;
use codeloop_testkit::fault_server;
use fault_server::{Answer, FaultServer, content, done, finish, reasoning, usage};
use serde_json::Value;

fn sse(events: Vec<String>) -> Answer {
    Answer::Sse(events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_is_kept_apart_and_a_cut_off_reply_is_continued_before_it_is_used() {
    let server = FaultServer::start("unused").await;
    let decoy_plan = r#"{"functions": [{"name": "decoy", "purpose": "x", "inputs": "", "output": "", "depends_on": []}]}"#;
    let plan = r#"```json
{"functions": [{"name": "double", "purpose": "twice x", "inputs": "x: int", "output": "int", "depends_on": []}]}
```"#;
    let tests = "```python\ndef test_double():\n    assert double(2) == 4\n    assert double(-3) == -6\n```\n";
    server.queue([
        // The plan: a draft plan in the reasoning field, the real one in content.
        sse(vec![
            reasoning("reasoning_content", "Maybe: "),
            reasoning("reasoning_content", decoy_plan),
            content(plan),
            finish("stop"),
            usage(50, 40),
            done(),
        ]),
        sse(vec![content(tests), finish("stop"), usage(60, 30), done()]),
        // The code: a <think> draft with a wrong body, then the answer cut
        // off at the token limit in the middle of the function.
        sse(vec![
            content(
                "<think>draft:\n```python\ndef double(x):\n    return x + x + 1\n```\n</think>",
            ),
            content("```python\ndef double(x):\n"),
            finish("length"),
            usage(70, 20),
            done(),
        ]),
        // The continuation.
        sse(vec![
            content("    return x * 2\n```\n"),
            finish("stop"),
            usage(90, 10),
            done(),
        ]),
    ]);

    let dir = tempfile::tempdir().unwrap();
    let base_url = server.base_url.clone();
    let data = dir.path().join("data");
    let output = tokio::task::spawn_blocking({
        let data = data.clone();
        let dir = dir.path().to_path_buf();
        move || {
            Command::new(env!("CARGO_BIN_EXE_codeloop"))
                .args(["run", "Double an integer", "--json", "--workers", "1"])
                .args(["--base-url", &base_url, "--model", "loopback-coder"])
                .arg("--out")
                .arg(dir.join("out"))
                .env("CODELOOP_DATA_DIR", &data)
                .env("CODELOOP_CACHE_DIR", dir.join("cache"))
                .env("CODELOOP_CONFIG", dir.join("none.toml"))
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        server.chat_requests(),
        4,
        "plan, tests, code, its continuation"
    );

    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of_type = |t: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == t).collect() };

    // The plan is the one in the answer, never the draft in the reasoning.
    let plan = of_type("plan");
    assert_eq!(plan.len(), 1);
    assert_eq!(plan[0]["specs"][0]["name"], "double");
    assert_eq!(plan[0]["specs"].as_array().unwrap().len(), 1);

    // Reasoning is on the tape apart from the answer, both streamed and whole.
    let streamed_reasoning: String = of_type("model_reasoning")
        .iter()
        .filter(|e| e["call_id"] == 1)
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(streamed_reasoning, format!("Maybe: {decoy_plan}"));
    let replies = of_type("model_reply");
    assert_eq!(replies[0]["reasoning"], format!("Maybe: {decoy_plan}"));
    assert!(!replies[0]["text"].as_str().unwrap().contains("decoy"));

    // The code call: the <think> draft is reasoning; the cut reply was
    // continued, said so, and the code used is the whole function.
    let code_reply = replies
        .iter()
        .find(|r| r["text"].as_str().unwrap().contains("def double"))
        .unwrap();
    assert!(
        code_reply["reasoning"]
            .as_str()
            .unwrap()
            .contains("x + x + 1")
    );
    assert_eq!(
        code_reply["text"],
        "```python\ndef double(x):\n    return x * 2\n```\n"
    );
    assert!(code_reply.get("finish_reason").is_none(), "{code_reply}");
    assert_eq!(code_reply["usage"]["completion_tokens"], 30);
    let notices: Vec<&str> = of_type("notice")
        .iter()
        .map(|n| n["message"].as_str().unwrap())
        .collect();
    assert!(
        notices
            .iter()
            .any(|m| m.contains("cut off at the model's token limit")),
        "{notices:?}"
    );
    let code = of_type("code");
    assert_eq!(code.len(), 1, "one version, compiled once it was whole");
    assert_eq!(code[0]["code"], "def double(x):\n    return x * 2\n");

    // The continuation asked the model to go on from its own partial reply.
    let continuation = &server
        .seen()
        .into_iter()
        .filter(|s| s.path == "/v1/chat/completions")
        .nth(3)
        .unwrap()
        .json();
    let messages = continuation["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(messages[n - 2]["role"], "assistant");
    assert_eq!(messages[n - 2]["content"], "```python\ndef double(x):\n");
    assert!(
        messages[n - 1]["content"]
            .as_str()
            .unwrap()
            .contains("cut off")
    );
}

/// The plan and tests of `double`, then `code`: what the loopback server
/// answers, in order.
fn double_with_code(code: impl IntoIterator<Item = Answer>) -> Vec<Answer> {
    let plan = r#"{"functions": [{"name": "double", "purpose": "twice x", "inputs": "x: int", "output": "int", "depends_on": []}]}"#;
    let mut answers = vec![
        sse(vec![content(plan), finish("stop"), done()]),
        sse(vec![
            content("def test_double():\n    assert double(2) == 4\n"),
            finish("stop"),
            done(),
        ]),
    ];
    answers.extend(code);
    answers
}

/// A reply cut off at the token limit.
fn cut(text: &str) -> Answer {
    sse(vec![content(text), finish("length"), done()])
}

/// `codeloop run "Double an integer" --json` against `server` with no fresh
/// start after an unusable first reply (the continuations are what is
/// tested), plus `extra`: whether it succeeded, and its events.
async fn run_double(server: &FaultServer, extra: &[&str]) -> (bool, Vec<Value>, String) {
    let dir = tempfile::tempdir().unwrap();
    let base_url = server.base_url.clone();
    let extra: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
    let output = tokio::task::spawn_blocking({
        let dir = dir.path().to_path_buf();
        move || {
            codeloop_in(env!("CARGO_BIN_EXE_codeloop"), &dir)
                .args(["run", "Double an integer", "--json", "--workers", "1"])
                .arg("--no-fresh-start")
                .args(["--base-url", &base_url, "--model", "m"])
                .args(&extra)
                .arg("--out")
                .arg(dir.join("out"))
                .env("CODELOOP_CACHE_DIR", dir.join("cache"))
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let events = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (output.status.success(), events, stdout)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_still_cut_off_after_two_continuations_is_never_compiled() {
    let server = FaultServer::start("unused").await;
    server.queue(double_with_code([
        cut("```python\ndef double(x):\n"),
        cut("    y = x\n"),
        cut("    z = y\n"),
    ]));
    let (passed, events, stdout) = run_double(&server, &[]).await;
    assert!(!passed);
    assert_eq!(
        server.chat_requests(),
        5,
        "plan, tests, code and 2 continuations"
    );
    assert!(
        !events.iter().any(|e| e["type"] == "code"),
        "half a function was recorded as code"
    );
    let last_reply = events.iter().rfind(|e| e["type"] == "model_reply").unwrap();
    assert_eq!(last_reply["finish_reason"], "length");
    assert!(
        events.iter().any(|e| e["type"] == "notice"
            && e["message"]
                .as_str()
                .unwrap()
                .contains("still cut off after 2 continuations")),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continuation_the_server_refuses_keeps_the_cut_reply_and_the_call_does_not_fail() {
    // llama-server refuses a continuation whose prompt (the conversation
    // and the reply so far) no longer fits its context window: seen on the
    // easy set, where the refusal failed the call and the bench counted the
    // problem as an error.
    let server = FaultServer::start("unused").await;
    let refused = r#"{"error":{"code":400,"message":"request (4096 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4096,"n_ctx":4096}}"#;
    server.queue(double_with_code([
        cut("```python\ndef double(x):\n"),
        Answer::Whole(
            400,
            "Content-Type: application/json\r\n".into(),
            refused.into(),
        ),
    ]));
    let (passed, events, stdout) = run_double(&server, &["--max-iterations", "1"]).await;
    assert!(!passed);
    assert_eq!(
        server.chat_requests(),
        4,
        "plan, tests, code, 1 continuation"
    );
    assert!(
        !events.iter().any(|e| e["type"] == "model_error"),
        "the call failed: {stdout}"
    );
    assert!(!events.iter().any(|e| e["type"] == "code"), "{stdout}");
    let said = |words: &str| {
        events
            .iter()
            .any(|e| e["type"] == "notice" && e["message"].as_str().unwrap().contains(words))
    };
    assert!(
        said("failed") && said("the reply is kept as it was cut"),
        "{stdout}"
    );
    assert!(said("still cut off after 1 continuation:"), "{stdout}");
}
