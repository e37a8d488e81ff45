//! Crash safety: a session killed at any moment reopens with every completed
//! step. The real binary is killed with SIGKILL in the middle of a run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use codeloop::session::{NodeStatus, State, read_tape};

#[test]
fn a_session_killed_mid_run_reopens_with_every_completed_step() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["run", "--demo", "collatz", "--pace", "0", "--timeout", "20"])
        .env("CODELOOP_DATA_DIR", dir.path())
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The demo's first code hangs: wait until its run has started, then kill.
    let deadline = Instant::now() + Duration::from_secs(30);
    let tape = loop {
        assert!(Instant::now() < deadline, "the run never started");
        let found = std::fs::read_dir(dir.path().join("sessions"))
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .map(|e| e.path().join("tape.jsonl"));
        if let Some(t) = found
            && std::fs::read_to_string(&t).is_ok_and(|s| s.contains("\"type\":\"run_started\""))
        {
            break t;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();

    let contents = read_tape(&tape).unwrap();
    let state = State::from_records(&contents.records);
    assert_eq!(state.specs.len(), 1);
    let node = &state.nodes["collatz_steps"];
    assert!(node.tests.is_some());
    assert_eq!(node.versions.len(), 1);
    assert_eq!(node.status, NodeStatus::Running);
    let run = &state.runs[&1];
    assert!(run.record.is_none(), "the run never finished");
    assert!(state.finished.is_none());
}
