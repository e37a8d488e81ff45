//! Functional consensus through the binary: `run --candidates 3` prints the
//! vote and its page shows the candidates; `bench --candidates 3` against
//! `bench` without, then `bench --compare`: pass@1, calls, the candidates.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The binary cargo built for these tests.
const CODELOOP: &str = env!("CARGO_BIN_EXE_codeloop");

use std::process::Command;

use codeloop_testkit::cli::{codeloop_in, fixture, row};

fn ok(mut cmd: Command) -> (String, String) {
    let out = cmd.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

#[test]
fn run_prints_the_vote_and_the_page_shows_the_candidates() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = codeloop_in(CODELOOP, dir.path());
    run.args(["run", "the total length of a list of words", "--no-cache"])
        .args([
            "--scripted",
            fixture("consensus_replies.jsonl").to_str().unwrap(),
            "--candidates",
            "3",
        ]);
    let (_, stderr) = ok(run);
    assert!(
        stderr.contains("vote    total_len #1: 3 candidates on 4 inputs (2 proposed by the model): #2 chosen (agreement 5 of 8) (#1 agreement 2, #2 agreement 5, chosen, #3 agreement 5)"),
        "{stderr}"
    );
    assert!(stderr.contains("run     total_len #1: passed"), "{stderr}");
    let page = dir.path().join("s.html");
    let mut export = codeloop_in(CODELOOP, dir.path());
    export
        .args(["export", "last", "--format", "html", "-o"])
        .arg(&page);
    ok(export);
    let html = std::fs::read_to_string(page).unwrap();
    assert!(
        html.contains("<div class=\"vote\"><h4>Vote (functional consensus)</h4><p>3 candidates on 4 inputs (2 proposed by the model): #2 chosen (agreement 5 of 8)</p>"),
        "{html}"
    );
    assert!(
        html.contains("<details class=\"chosen\"><summary>#2 agreement 5, chosen</summary>"),
        "{html}"
    );
}

#[test]
fn bench_with_and_without_candidates_compared() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (on, off) = (d.join("vote.jsonl"), d.join("plain.jsonl"));
    for (out, candidates) in [(&on, "3"), (&off, "1")] {
        let mut bench = codeloop_in(CODELOOP, d);
        bench
            .args(["bench", fixture("bench_problems.jsonl").to_str().unwrap()])
            .args(["--feedback", "hidden"])
            .args([
                "--scripted",
                fixture("bench_consensus_replies.jsonl").to_str().unwrap(),
            ])
            .args(["--candidates", candidates, "--out"])
            .arg(out);
        ok(bench);
    }
    let mut compare = codeloop_in(CODELOOP, d);
    compare.args(["bench", "--compare"]).arg(&on).arg(&off);
    let (stdout, _) = ok(compare);
    // T/1's first candidate was off by one; the vote took a right one.
    assert_eq!(
        row(&stdout, "pass@1 first try"),
        ["pass@1 first try", "100.0% (2/2)", "50.0% (1/2)", "*"]
    );
    assert_eq!(
        row(&stdout, "candidates voted on"),
        ["candidates voted on", "6", "0", "*"]
    );
    // Three code calls and one for inputs a problem; without: T/0's one,
    // T/1's code and repair.
    assert_eq!(row(&stdout, "model calls"), ["model calls", "8", "3", "*"]);
}

#[test]
fn the_roman_demo_shows_a_vote_and_a_demo_without_candidates_says_so_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = codeloop_in(CODELOOP, dir.path());
    run.args(["run", "--demo", "roman", "--pace", "0", "--no-cache"])
        .args(["--candidates", "3"]);
    let (_, progress) = ok(run);
    // roman_to_int's #1 adds its subtractive pairs; #2 and #3 agree, and
    // #2 is kept: no repair is needed.
    assert!(
        progress.contains(
            "vote    roman_to_int #1: 3 candidates on 9 inputs (5 proposed by the model): #2 chosen"
        ),
        "{progress}"
    );
    assert!(
        progress.contains("vote    int_to_roman #1: 3 candidates on 10 inputs (7 proposed by the model): #1 chosen"),
        "{progress}"
    );
    assert!(progress.contains("0 repairs, tokens"), "{progress}");
    assert!(!progress.contains("error"), "{progress}");

    let mut run = codeloop_in(CODELOOP, dir.path());
    run.args(["run", "--demo", "wordfreq", "--pace", "0", "--no-cache"])
        .args(["--candidates", "3"]);
    let (_, progress) = ok(run);
    assert_eq!(
        progress
            .matches("the recorded replies hold no other candidates")
            .count(),
        1,
        "{progress}"
    );
    for never in ["no reply is tagged so", "did not load", "vote ", "error"] {
        assert!(!progress.contains(never), "{never}:\n{progress}");
    }
    assert!(progress.contains("result: PASSED"), "{progress}");
}
