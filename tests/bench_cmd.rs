//! `codeloop bench` on a small HumanEval-format set with scripted replies:
//! one problem passes at once, one fails, is repaired, and passes.

use std::process::Command;

use codeloop::session::{Event, read_tape};

#[test]
fn bench_reports_first_try_and_after_repair_and_never_shows_the_tests() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results.jsonl");
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let output = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["bench", &format!("{fixtures}/bench_problems.jsonl")])
        .args(["--scripted", &format!("{fixtures}/bench_replies.jsonl")])
        .arg("--out")
        .arg(&out)
        .env("CODELOOP_DATA_DIR", dir.path().join("data"))
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("pass@1 first try:    50.0% (1/2)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("pass@1 after repair: 100.0% (2/2)"),
        "{stdout}"
    );

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["task_id"], "T/1");
    assert_eq!(lines[1]["passed_first"], false);
    assert_eq!(lines[1]["passed_final"], true);
    assert_eq!(lines[1]["iterations"], 2);
    assert_eq!(lines[1]["first_failure"]["line"], 2);
    assert_eq!(lines[1]["first_failure"]["expected"], "2");
    assert_eq!(lines[1]["first_failure"]["actual"], "3");

    // The model saw the problem and the localized failure, never `check`.
    let tape = read_tape(std::path::Path::new(lines[1]["tape"].as_str().unwrap())).unwrap();
    let prompts: Vec<String> = tape
        .records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ModelRequest { messages, .. } => Some(
                messages
                    .iter()
                    .map(|m| m.content.clone())
                    .collect::<String>(),
            ),
            _ => None,
        })
        .collect();
    assert_eq!(prompts.len(), 2);
    assert!(prompts.iter().all(|p| !p.contains("def check")));
    assert!(prompts[1].contains("expected 2, got 3"), "{}", prompts[1]);
}
