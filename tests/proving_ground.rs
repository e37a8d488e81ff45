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
use codeloop_sandbox::Sandbox;
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
        &Sandbox::probe(&codeloop_sandbox::SandboxOptions::from_env()),
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

use codeloop_testkit::prompt_server;
use prompt_server::PromptServer;

/// The stand-in's answers for the first two easy problems: `add` right,
/// `max_of_three` wrong whatever is asked (so it fails after its repairs).
fn easy_reply(prompt: &str) -> &'static str {
    if prompt.contains("def max_of_three(") {
        "```python\ndef max_of_three(a: int, b: int, c: int) -> int:\n    return a\n```"
    } else {
        "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```"
    }
}

/// The script against a server already running, given by its variable, and
/// a codeloop binary given by its: it starts no server and builds nothing,
/// runs bench in each configuration asked with the model the server lists,
/// and writes the page from the results (its table, each run's chart and
/// files). The server is a stand-in at the wire (the real model is too
/// slow for the suite); the binary, bench, python3 and the page are real.
#[test]
fn the_proving_ground_runs_against_a_server_already_running_and_writes_its_page() {
    let server = PromptServer::start(easy_reply);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    let page = dir.path().join("BENCHMARKS.md");
    let url = server.base_url.trim_end_matches("/v1").to_string();
    let output = Command::new("bash")
        .arg(repo("scripts/proving_ground.sh"))
        .args(["--configs", "base,candidates", "--limit", "2"])
        .arg("--out")
        .arg(&out)
        .arg("--page")
        .arg(&page)
        .env("PROVING_GROUND_BIN", env!("CARGO_BIN_EXE_codeloop"))
        .env("PROVING_GROUND_LLAMA_SERVER_URL", &url)
        .env_remove("PROVING_GROUND_LLAMA_CPP_PYTHON_URL")
        .env_remove("PROVING_GROUND_MODEL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // Nothing built, installed or started: the server given was used.
    assert!(
        !stderr.contains("building codeloop") && !stderr.contains(" is up at "),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("llama-server at {url}/v1, model loopback-coder")),
        "{stderr}"
    );
    let text = std::fs::read_to_string(&page).unwrap();
    // One row per configuration, on the one server given; add passes at
    // once, max_of_three never.
    for config in ["base", "candidates"] {
        assert!(
            text.contains(&format!(
                "| llama-server | {config} | 50.0% (1/2) | 50.0% (1/2) |"
            )),
            "{config}: {text}"
        );
        for file in ["svg", "html", "jsonl"] {
            let path = dir
                .path()
                .join("benchmarks")
                .join(format!("llama-server-{config}.{file}"));
            assert!(path.exists(), "{}", path.display());
        }
    }
    assert!(!text.contains("llama-cpp-python |"), "{text}");
    assert!(
        text.contains(&format!("- llama-server: already running at {url}/v1")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "--base-url {url}/v1 --model loopback-coder --workers 1 --limit 2 --candidates 3"
        )),
        "{text}"
    );
    assert!(
        text.contains("on the first 2 of the 30 problems of `assets/easy/problems.jsonl`"),
        "{text}"
    );
    assert!(
        text.contains(
            "![pass@1 by repair round, llama-server, base](benchmarks/llama-server-base.svg)"
        ),
        "{text}"
    );
    // The figures per problem, as bench wrote them.
    assert!(text.contains("| Easy/0 | passed | 1 |"), "{text}");
    assert!(text.contains("| Easy/1 | failed | - |"), "{text}");
    // And the command it ran, with the variables it read.
    assert!(
        text.contains(&format!("PROVING_GROUND_LLAMA_SERVER_URL={url}")),
        "{text}"
    );
}

/// A server given that does not answer is said, with what to do, before
/// any run; and the script never starts one in its place.
#[test]
fn a_server_given_that_does_not_answer_is_said() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new("bash")
        .arg(repo("scripts/proving_ground.sh"))
        .arg("--llama-cpp-python-url")
        .arg(format!("http://127.0.0.1:{port}"))
        .arg("--bin")
        .arg(env!("CARGO_BIN_EXE_codeloop"))
        .arg("--out")
        .arg(dir.path().join("runs"))
        .arg("--page")
        .arg(dir.path().join("BENCHMARKS.md"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "no llama-cpp-python answered at http://127.0.0.1:{port}/v1/models"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains(" is up at "), "{stderr}");
    assert!(!dir.path().join("BENCHMARKS.md").exists());
}
