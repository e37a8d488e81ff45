//! `codeloop run` against a server that lies (issue 33): llama.cpp's
//! `/props` saying 2^64-1 slots panicked a worker and left `run` hanging
//! (two SIGTERMs to quit). The numbers a server states are bounded, and
//! the run goes on to its end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use codeloop_testkit::fault_server;
use fault_server::*;
use serde_json::json;

/// The command's output, or a failure if it has not ended within 90 s.
fn bounded(mut c: Command) -> Output {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "codeloop run hung: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_props_of_endless_slots_and_window_does_not_stop_the_run() {
    let server = FaultServer::start("I cannot help with that.").await;
    server.route(
        "GET /props",
        json_answer(
            200,
            json!({"default_generation_settings": {"n_ctx": u64::MAX}, "total_slots": u64::MAX}),
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_codeloop"));
    c.args(["run", "Add two numbers", "--base-url", &server.base_url])
        .args(["--model", "m"])
        .arg("--out")
        .arg(dir.path().join("out"))
        .env("CODELOOP_DATA_DIR", dir.path().join("data"))
        .env("CODELOOP_CACHE_DIR", dir.path().join("cache"))
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"));
    let out = tokio::task::spawn_blocking(move || bounded(c))
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("result:"),
        "the run came to its end: {stderr}"
    );
}
