//! `codeloop bench --review-repairs` against the same problems without it,
//! then `bench --compare`: the review's calls, tokens and the repairs it
//! sent unrun, side by side with pass@1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::Path;
use std::process::Command;

use codeloop_testkit::cli::row;

fn bench(dir: &Path, out: &Path, review: bool) -> String {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_codeloop"));
    cmd.args(["bench", &format!("{fixtures}/bench_problems.jsonl")])
        .args(["--feedback", "hidden"])
        .args([
            "--scripted",
            &format!("{fixtures}/bench_review_replies.jsonl"),
        ])
        .arg("--out")
        .arg(out)
        .env("CODELOOP_DATA_DIR", dir.join("data"))
        .env("CODELOOP_CONFIG", dir.join("none.toml"));
    if review {
        cmd.arg("--review-repairs");
    }
    let output = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn review_on_and_off_compared() {
    let dir = tempfile::tempdir().unwrap();
    let (on, off) = (
        dir.path().join("review.jsonl"),
        dir.path().join("plain.jsonl"),
    );
    bench(dir.path(), &on, true);
    bench(dir.path(), &off, false);
    let results: Vec<serde_json::Value> = std::fs::read_to_string(&on)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // T/1's first version went to its repair on the review's word, unrun.
    assert_eq!(results[1]["reviews"], 2);
    assert_eq!(results[1]["review_repairs"], 1);
    assert_eq!(results[1]["review_tokens"], 320 + 30 + 330 + 10);
    assert_eq!(results[1]["passed_at"], 2);
    assert_eq!(results[1]["passed_first"], false);
    assert_eq!(results[1]["calls"], 4);
    let output = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["bench", "--compare"])
        .arg(&on)
        .arg(&off)
        .env("CODELOOP_DATA_DIR", dir.path().join("data"))
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert_eq!(row(&stdout, "reviews"), ["reviews", "3", "0", "*"]);
    assert_eq!(
        row(&stdout, "sent to repair unrun"),
        ["sent to repair unrun", "1", "0", "*"]
    );
    assert_eq!(
        row(&stdout, "review tokens"),
        ["review tokens", "1000", "0", "*"]
    );
    // Calls: T/0 code + review, T/1 code, review, repair, review = 6; without: 3.
    assert_eq!(row(&stdout, "model calls"), ["model calls", "6", "3", "*"]);
    assert_eq!(
        row(&stdout, "pass@1 final"),
        ["pass@1 final", "100.0% (2/2)", "100.0% (2/2)"]
    );
}
