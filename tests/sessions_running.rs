//! A session still running is listed as running, not as one that did not
//! finish (issue 42): the tape's writer holds its lock, and `codeloop
//! sessions` asks it; once the writer is gone, the same tape did not finish.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

mod sessions_support;

use codeloop::session::index::{SessionResult, SessionSummary};
use codeloop::session::{TapeWriter, read_tape};
use sessions_support::{codeloop, stdout};

fn listed(data: &std::path::Path) -> Vec<SessionSummary> {
    let out = codeloop(data, &["sessions", "--json"]);
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_tape_whose_writer_holds_its_lock_is_listed_as_running() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("sessions").join("20260101-000000-0000");
    std::fs::create_dir_all(&dir).unwrap();
    let demo =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demos/roman/tape.jsonl");
    let head: String = std::fs::read_to_string(demo)
        .unwrap()
        .lines()
        .take(30)
        .map(|l| format!("{l}\n"))
        .collect();
    let tape = dir.join("tape.jsonl");
    std::fs::write(&tape, head).unwrap();

    // A session writing its tape: the writer holds the lock.
    let writer = TapeWriter::reopen(&tape, &read_tape(&tape).unwrap()).unwrap();
    assert_eq!(listed(data.path())[0].result, SessionResult::Running);
    let text = stdout(&codeloop(data.path(), &["sessions"]));
    assert!(text.contains("running"), "{text}");
    assert!(!text.contains("did not finish"), "{text}");

    // Its writer gone (killed, crashed): the tape did not finish.
    drop(writer);
    assert_eq!(listed(data.path())[0].result, SessionResult::DidNotFinish);
    let text = stdout(&codeloop(data.path(), &["sessions"]));
    assert!(text.contains("did not finish"), "{text}");
}
