//! The proving ground's parts that CI can hold without the real model:
//! the easy problem set (assets/easy) is well formed, its canonical
//! solutions pass their hidden checks and an empty body fails every one;
//! `scripts/proving_ground.sh` parses and says how it is used. The script
//! itself runs the real model for an hour or more: a person runs it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use codeloop::eval::{self, EvalOptions, Problem, Sample};
use codeloop::exec::Sandbox;
use tokio_util::sync::CancellationToken;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn easy() -> Vec<Problem> {
    eval::read_problems(&repo("assets/easy/problems.jsonl")).unwrap()
}

#[test]
fn the_easy_set_is_thirty_problems_each_with_its_signature_examples_and_asserts() {
    let problems = easy();
    assert_eq!(problems.len(), 30);
    let mut names = BTreeSet::new();
    for (i, p) in problems.iter().enumerate() {
        assert_eq!(p.task_id, format!("Easy/{i}"));
        assert!(
            names.insert(p.entry_point.clone()),
            "{} twice",
            p.entry_point
        );
        assert!(
            p.prompt.starts_with(&format!("def {}(", p.entry_point)),
            "{}: {}",
            p.task_id,
            p.prompt
        );
        let docstring = p.prompt.split("\"\"\"").nth(1).unwrap_or("");
        let examples = docstring.matches(">>> ").count();
        assert!(
            (1..=2).contains(&examples),
            "{}: {examples} examples",
            p.task_id
        );
        assert!(
            p.test.contains("def check(candidate):"),
            "{}: {}",
            p.task_id,
            p.test
        );
        let asserts = p.test.matches("assert candidate(").count()
            + p.test.matches("assert abs(candidate(").count();
        assert!(asserts >= 4, "{}: {asserts} asserts", p.task_id);
        let solution = p.canonical_solution.as_deref().unwrap_or("");
        let lines = solution.lines().filter(|l| !l.trim().is_empty()).count();
        assert!(
            (1..=4).contains(&lines),
            "{}: {lines} lines in its solution",
            p.task_id
        );
    }
}

/// The verdicts of `completion(problem)` for every problem of the set.
async fn verdicts(completion: impl Fn(&Problem) -> String) -> Vec<(String, bool, String)> {
    let problems = easy();
    let samples: Vec<Sample> = problems
        .iter()
        .map(|p| Sample {
            task_id: p.task_id.clone(),
            completion: completion(p),
            fields: serde_json::Map::new(),
        })
        .collect();
    let options = EvalOptions {
        workers: 2,
        timeout: Duration::from_secs(3),
        ..EvalOptions::default()
    };
    let results = eval::evaluate(
        &Sandbox::probe(&codeloop::exec::SandboxOptions::from_env()),
        &problems,
        &samples,
        &options,
        None,
        CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(results.len(), problems.len());
    results
        .into_iter()
        .map(|r| (r.task_id, r.passed, r.result))
        .collect()
}

#[tokio::test]
async fn every_canonical_solution_passes_and_an_empty_body_fails_every_problem() {
    let canonical = verdicts(|p| p.canonical_solution.clone().unwrap()).await;
    let failing: Vec<_> = canonical.iter().filter(|(_, passed, _)| !passed).collect();
    assert!(failing.is_empty(), "{failing:?}");
    let empty = verdicts(|_| "    pass\n".to_string()).await;
    let passing: Vec<_> = empty.iter().filter(|(_, passed, _)| *passed).collect();
    assert!(passing.is_empty(), "{passing:?}");
}

#[test]
fn the_proving_ground_script_parses_and_says_how_it_is_used() {
    let script = repo("scripts/proving_ground.sh");
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        syntax.status.success(),
        "{}",
        String::from_utf8_lossy(&syntax.stderr)
    );
    let help = Command::new("bash")
        .arg(&script)
        .arg("--help")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success(), "{text}");
    for option in ["--servers", "--configs", "--limit", "--out", "--page"] {
        assert!(
            text.contains(option),
            "--help does not say {option}: {text}"
        );
    }
    // A wrong option is refused before anything is built or started.
    let wrong = Command::new("bash")
        .arg(&script)
        .args(["--configs", "fast"])
        .output()
        .unwrap();
    assert_eq!(wrong.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("unknown configuration fast"),
        "{}",
        String::from_utf8_lossy(&wrong.stderr)
    );
}
