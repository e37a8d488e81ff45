//! codeloop against a real model on real servers: SmolLM2-135M-Instruct
//! behind llama-cpp-python's server and behind llama.cpp's `llama-server`,
//! started on loopback (see testkit's `real_servers`). The real binary, real
//! HTTP, real python3 in the sandbox.
//!
//! The model is tiny: what is asserted is what codeloop does with what a
//! real server really sends (every call answered, nothing cut or empty taken
//! as a reply, no call wasted, the structured-output shape each server took,
//! an outcome said), never whether the model's code passes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use codeloop_testkit::tmux_server;

use codeloop_testkit::real_servers;
use real_servers::{Kind, MODEL, RealServer, one_at_a_time, tape_events, tapes_under};

/// The longest reply a test lets the model write: enough for a small
/// function, short enough that a test takes a minute, not ten.
const MAX_TOKENS: &str = "320";

fn codeloop(dir: &Path, server: &RealServer, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(args)
        .args(["--base-url", &server.base_url, "--model", MODEL])
        .args(["--max-tokens", MAX_TOKENS])
        .env("CODELOOP_DATA_DIR", dir.join("data"))
        .env("CODELOOP_CACHE_DIR", dir.join("cache"))
        .env("CODELOOP_CONFIG", dir.join("none.toml"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("CODELOOP_BASE_URL")
        .env_remove("CODELOOP_MODEL")
        .output()
        .unwrap()
}

/// Each model call on a tape, in order: its purpose, and how it ended.
#[derive(Debug)]
struct Call {
    purpose: String,
    tag: String,
    reply: Option<String>,
    error: Option<String>,
    structured: Option<String>,
    restarts: Vec<String>,
}

fn calls_of(events: &[Value]) -> Vec<Call> {
    let mut calls: Vec<(u64, Call)> = Vec::new();
    for e in events {
        let id = e["call_id"].as_u64();
        let find = |calls: &mut Vec<(u64, Call)>| {
            let id = id.unwrap();
            calls.iter().position(|(k, _)| *k == id).unwrap()
        };
        match e["type"].as_str().unwrap_or("") {
            "model_request" => calls.push((
                id.unwrap(),
                Call {
                    purpose: e["purpose"]["kind"].as_str().unwrap_or("").to_string(),
                    tag: e["tag"].as_str().unwrap_or("").to_string(),
                    reply: None,
                    error: None,
                    structured: None,
                    restarts: Vec::new(),
                },
            )),
            "model_reply" => {
                let k = find(&mut calls);
                calls[k].1.reply = Some(e["text"].as_str().unwrap().to_string());
                calls[k].1.structured = e["structured"].as_str().map(str::to_string);
            }
            "model_error" => {
                let k = find(&mut calls);
                calls[k].1.error = Some(e["message"].as_str().unwrap().to_string());
            }
            "model_restart" => {
                let k = find(&mut calls);
                calls[k]
                    .1
                    .restarts
                    .push(e["reason"].as_str().unwrap().to_string());
            }
            _ => {}
        }
    }
    calls.into_iter().map(|(_, c)| c).collect()
}

/// What every session on a real server must show: each call answered with a
/// reply that is not empty (or stopped for looping, which is said), none
/// cut, the plan asked in the server's structured shape.
fn assert_every_call_answered(calls: &[Call], shape: &str, server: &RealServer) {
    assert!(!calls.is_empty(), "no model call was made");
    for call in calls {
        assert!(
            call.restarts.iter().all(|r| !r.contains("cut")),
            "a stream was cut ({}): {:?}\nserver log:\n{}",
            call.tag,
            call.restarts,
            server.log_text()
        );
        match (&call.reply, &call.error) {
            (Some(reply), None) => assert!(
                !reply.trim().is_empty(),
                "the reply to {} is empty\nserver log:\n{}",
                call.tag,
                server.log_text()
            ),
            (None, Some(error)) => assert!(
                error.starts_with("the reply repeats itself"),
                "the call {} failed: {error}\nserver log:\n{}",
                call.tag,
                server.log_text()
            ),
            other => panic!("the call {} did not end: {other:?}", call.tag),
        }
        if call.purpose == "plan" && call.reply.is_some() {
            assert_eq!(
                call.structured.as_deref(),
                Some(shape),
                "the plan call {} was not asked in the shape {shape}",
                call.tag
            );
        }
    }
}

#[test]
fn an_own_task_on_llama_cpp_python_reaches_code_with_every_call_answered() {
    let _one = one_at_a_time();
    let server = RealServer::start(Kind::LlamaCppPython, 4096);
    let dir = tempfile::tempdir().unwrap();
    let out = codeloop(
        dir.path(),
        &server,
        &[
            "run",
            "count the vowels in a string",
            "--max-iterations",
            "2",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("result: "),
        "no outcome was said:\n{stderr}\nserver log:\n{}",
        server.log_text()
    );
    let tapes = tapes_under(&dir.path().join("data"));
    assert_eq!(tapes.len(), 1, "{tapes:?}");
    let events = tape_events(&tapes[0]);
    let calls = calls_of(&events);
    assert_every_call_answered(&calls, "json_object", &server);
    let has = |kind: &str| events.iter().any(|e| e["type"] == kind);
    assert!(has("plan"), "no plan:\n{stderr}");
    assert!(has("code"), "the session never reached code:\n{stderr}");
    assert!(has("finished"), "{stderr}");
    // A plan is asked for at most three times, and no reply was taken for a
    // plan that did not parse when the server constrained it.
    let plans = calls.iter().filter(|c| c.purpose == "plan").count();
    assert!((1..=3).contains(&plans), "{plans} plan calls:\n{stderr}");
}

#[test]
fn bench_at_the_default_workers_gets_a_real_reply_for_every_call() {
    let _one = one_at_a_time();
    // llama-cpp-python serves one request at a time and cuts a running
    // stream when a second arrives: bench's two workers must not make two
    // calls at once, whatever they do in the sandbox.
    let server = RealServer::start(Kind::LlamaCppPython, 4096);
    let dir = tempfile::tempdir().unwrap();
    let problems =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/humaneval/HumanEval.jsonl.gz");
    let out = codeloop(
        dir.path(),
        &server,
        &[
            "bench",
            problems.to_str().unwrap(),
            // The replies' shapes are what is tested, as before own-test
            // feedback: the problems' tests are the node's.
            "--feedback",
            "hidden",
            "--limit",
            "3",
            "--max-iterations",
            "1",
            "--out",
            dir.path().join("results.jsonl").to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tapes = tapes_under(&dir.path().join("data"));
    assert_eq!(tapes.len(), 3, "{tapes:?}\n{stdout}\n{stderr}");
    for tape in &tapes {
        let calls = calls_of(&tape_events(tape));
        assert_every_call_answered(&calls, "json_object", &server);
    }
    assert!(
        stdout.contains("prefix") || stderr.contains("prefix"),
        "bench printed no prefix share:\n{stdout}\n{stderr}"
    );
}

#[test]
fn llama_server_takes_the_json_schema_and_the_reply_streams() {
    let _one = one_at_a_time();
    let server = RealServer::start(Kind::LlamaServer, 4096);
    let dir = tempfile::tempdir().unwrap();
    let out = codeloop(
        dir.path(),
        &server,
        &[
            "run",
            "reverse the words in a sentence",
            "--max-iterations",
            "1",
            "--json",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("result: "),
        "{stderr}\n{}",
        server.log_text()
    );
    let tapes = tapes_under(&dir.path().join("data"));
    let events = tape_events(&tapes[0]);
    let calls = calls_of(&events);
    assert_every_call_answered(&calls, "json_schema", &server);
    // The reply came in pieces as the server streamed it, not in one.
    let deltas = events.iter().filter(|e| e["type"] == "model_delta").count();
    assert!(
        deltas > calls.len(),
        "{deltas} deltas for {} calls",
        calls.len()
    );
    assert!(events.iter().any(|e| e["type"] == "code"), "{stderr}");
    // llama-server says how much of each prompt it took from its cache; the
    // calls after the first share at least the system prompt and the task.
    // A reply codeloop stopped once its answer was whole has no word from
    // the server on its usage: estimated, and said so.
    let replies: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "model_reply")
        .collect();
    let cached: Vec<Option<u64>> = replies
        .iter()
        .filter(|e| e["usage_estimated"] != true)
        .map(|e| e["usage"]["cached_tokens"].as_u64())
        .collect();
    assert!(
        replies
            .iter()
            .filter(|e| e["usage_estimated"] == true)
            .all(|e| e["stopped"].is_string()),
        "only a reply codeloop stopped has its usage estimated: {replies:?}"
    );
    assert!(cached.iter().all(Option::is_some), "{cached:?}");
    // A cache hit needs a second reply the server itself ended: how many
    // there are is the model's doing (a run with one, `[Some(0)]`, failed
    // here), so the hit is asserted only where there is one to see.
    if cached.len() >= 2 {
        assert!(cached.iter().skip(1).any(|c| *c > Some(0)), "{cached:?}");
        assert!(stderr.contains(" cached) + "), "{stderr}");
    }
}

/// The real coder model end to end, as `bench` meets it by default: its
/// own tests feed the loop, the hidden tests judge each version afterwards.
/// Structure only, never a pass rate: every call answered, a verdict for
/// every version, the hidden tests on no tape.
#[test]
fn bench_on_the_coder_model_judges_every_version_by_the_hidden_tests_only_afterwards() {
    let _one = one_at_a_time();
    let server = RealServer::start_coder(Kind::LlamaServer, 8192);
    let dir = tempfile::tempdir().unwrap();
    let problems =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/humaneval/HumanEval.jsonl.gz");
    let results = dir.path().join("results.jsonl");
    let out = codeloop(
        dir.path(),
        &server,
        &[
            "bench",
            problems.to_str().unwrap(),
            "--limit",
            "1",
            "--max-iterations",
            "2",
            "--workers",
            "1",
            "--out",
            results.to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("feedback: own tests (hidden tests only judge)"),
        "{stdout}
{stderr}
{}",
        server.log_text()
    );
    let text = std::fs::read_to_string(&results).unwrap();
    let r: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(r["feedback"], "own", "{r}");
    let hidden = r["verdicts"]["hidden"].as_array().expect("verdicts");
    let versions = r["iterations"].as_u64().unwrap();
    assert!(versions >= 1, "{r}");
    assert!(
        hidden.len() as u64 >= versions && hidden.iter().all(Value::is_boolean),
        "a hidden verdict for every version: {r}"
    );
    assert_eq!(
        r["passed_final"],
        *hidden.last().unwrap(),
        "scored by the hidden tests: {r}"
    );
    let tapes = tapes_under(&dir.path().join("data"));
    for tape in &tapes {
        assert!(
            !std::fs::read_to_string(tape)
                .unwrap()
                .contains("def check(candidate)"),
            "the hidden tests reached a tape: {}",
            tape.display()
        );
        let calls = calls_of(&tape_events(tape));
        assert_every_call_answered(&calls, "json_schema", &server);
    }
}

#[test]
fn a_model_name_the_server_does_not_list_is_refused_before_any_call() {
    let _one = one_at_a_time();
    let server = RealServer::start(Kind::LlamaCppPython, 2048);
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["run", "add two numbers", "--base-url", &server.base_url])
        .args(["--model", "gpt-99"])
        .env("CODELOOP_DATA_DIR", dir.path().join("data"))
        .env("CODELOOP_CACHE_DIR", dir.path().join("cache"))
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("gpt-99"), "{stderr}");
    assert!(stderr.contains(MODEL), "the names it lists: {stderr}");
    assert!(tapes_under(&dir.path().join("data")).is_empty());
}

#[test]
fn codeloop_models_tells_each_server_and_the_shape_it_took() {
    let _one = one_at_a_time();
    for (kind, shape) in [
        (Kind::LlamaCppPython, "json_object"),
        (Kind::LlamaServer, "json_schema"),
    ] {
        let server = RealServer::start(kind, 2048);
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
            .args(["models", "--base-url", &server.base_url, "--model", MODEL])
            .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        assert!(stdout.contains(MODEL), "{stdout}");
        assert!(
            stdout.contains(&format!("structured replies: {shape}")),
            "{kind:?}:\n{stdout}"
        );
        assert!(stdout.contains("requests at once: "), "{stdout}");
    }
}

#[test]
fn the_workbench_streams_the_real_reply_live_in_a_real_terminal() {
    let tmux_works = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(tmux_works, "tmux is needed (scripts/test.sh installs it)");
    let _one = one_at_a_time();
    let server = RealServer::start(Kind::LlamaCppPython, 4096);
    let dir = tempfile::tempdir().unwrap();
    let session = format!("codeloop-real-{}", std::process::id());
    let mut cmd = tmux_server::new_session(&session, (100, 30));
    cmd.args(["-c", &dir.path().to_string_lossy()]);
    for (k, v) in [
        ("CODELOOP_DATA_DIR", dir.path().join("data")),
        ("CODELOOP_CACHE_DIR", dir.path().join("cache")),
        ("CODELOOP_CONFIG", dir.path().join("none.toml")),
    ] {
        cmd.args(["-e", &format!("{k}={}", v.display())]);
    }
    cmd.arg(env!("CARGO_BIN_EXE_codeloop"))
        .args(["--base-url", &server.base_url, "--model", MODEL])
        .args(["--max-tokens", MAX_TOKENS])
        .arg("count the vowels in a string");
    assert!(cmd.status().unwrap().success(), "tmux new-session failed");
    let screen = || {
        let out = Command::new("tmux")
            .args(["-L", &session, "capture-pane", "-p", "-t", &session])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // "planning… N functions so far (C characters)": C grows while the
    // plan's reply streams in.
    let characters = |s: &str| -> Option<usize> {
        let at = s.find("planning…")?;
        let rest = &s[at..];
        let open = rest.find('(')?;
        rest[open + 1..].split_whitespace().next()?.parse().ok()
    };
    // Three growing counts of one reply (a count that drops is the next
    // plan attempt starting over).
    let started = std::time::Instant::now();
    let mut seen: Vec<usize> = Vec::new();
    while started.elapsed() < std::time::Duration::from_secs(180) {
        let s = screen();
        if let Some(c) = characters(&s)
            && c > 0
        {
            match seen.last() {
                Some(&last) if c < last => seen = vec![c],
                Some(&last) if c == last => {}
                _ => seen.push(c),
            }
        }
        if seen.len() >= 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let last = screen();
    tmux_server::stop(&session);
    assert!(
        seen.len() >= 3 && seen.windows(2).all(|w| w[0] < w[1]),
        "the plan's reply did not stream in on screen (counts seen: {seen:?}); the screen:\n{last}\nserver log:\n{}",
        server.log_text()
    );
}
