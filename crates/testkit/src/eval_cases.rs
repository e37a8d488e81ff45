//! Samples evaluated for the eval tests: each case a name, a task and a
//! completion, through `eval::evaluate` (forked or fresh), or through
//! `codeloop eval` as an ordinary user in both modes.

use std::time::Duration;

use codeloop_eval::{self as eval, EvalOptions, Problem, Sample};
use codeloop_sandbox::Sandbox;
use tokio_util::sync::CancellationToken;

use crate::ordinary_user;

/// (name, task_id, completion).
pub type Case<'a> = (&'a str, &'a str, &'a str);

/// Each case's (name, passed, result).
pub type Verdicts = Vec<(String, bool, String)>;

pub fn problem(id: &str, prompt: &str, test: &str, entry: &str) -> Problem {
    Problem {
        task_id: id.into(),
        prompt: prompt.into(),
        canonical_solution: None,
        test: test.into(),
        entry_point: entry.into(),
    }
}

pub fn sample(task_id: &str, completion: &str) -> Sample {
    Sample {
        task_id: task_id.into(),
        completion: completion.into(),
        fields: serde_json::Map::new(),
    }
}

/// A problem whose check uses a builtin (`abs`).
pub fn double() -> Problem {
    problem(
        "t/0",
        "def double(x):\n",
        "def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(5) == 10\n    assert abs(candidate(2) - 4) < 1e-9\n",
        "double",
    )
}

/// HumanEval's problems of the given ids, from the copy in assets.
pub fn humaneval(ids: &[&str]) -> Vec<Problem> {
    let all = all_of_humaneval();
    ids.iter()
        .map(|id| all.iter().find(|p| p.task_id == *id).unwrap().clone())
        .collect()
}

/// HumanEval's 164 problems, from the copy in assets.
pub fn all_of_humaneval() -> Vec<Problem> {
    let path = crate::workspace().join("assets/humaneval/HumanEval.jsonl.gz");
    eval::read_problems(&path).unwrap()
}

/// Each sample's result, through `eval::evaluate` with 2 workers.
pub async fn evaluate(
    problems: &[Problem],
    samples: &[Sample],
    fork_server: bool,
    timeout: Duration,
) -> Vec<eval::SampleResult> {
    let options = EvalOptions {
        workers: 2,
        timeout,
        fork_server,
        ..EvalOptions::default()
    };
    eval::evaluate(
        &Sandbox::probe(&codeloop_sandbox::SandboxOptions::from_env()),
        problems,
        samples,
        &options,
        None,
        CancellationToken::new(),
    )
    .await
    .unwrap()
}

/// Each case's (name, passed, result), in order (3 s a sample).
pub async fn verdicts(problems: &[Problem], cases: &[Case<'_>], fork_server: bool) -> Verdicts {
    let samples: Vec<Sample> = cases.iter().map(|(_, t, c)| sample(t, c)).collect();
    let results = evaluate(problems, &samples, fork_server, Duration::from_secs(3)).await;
    named(cases, results.into_iter().map(|r| (r.passed, r.result)))
}

fn named(cases: &[Case<'_>], results: impl Iterator<Item = (bool, String)>) -> Verdicts {
    cases
        .iter()
        .zip(results)
        .map(|((name, _, _), (passed, result))| (name.to_string(), passed, result))
        .collect()
}

/// `codeloop eval --workers 2` (`codeloop`: the test's
/// `env!("CARGO_BIN_EXE_codeloop")`) run as an ordinary user (in the full
/// sandbox when the user gets one, else the reduced one, chosen), forked
/// and `--fresh-process`: each mode's verdicts; None (said why) where no
/// ordinary user can be had.
pub fn as_ordinary_user(
    tag: &str,
    codeloop: &std::path::Path,
    problems: &[Problem],
    cases: &[Case<'_>],
) -> Option<Vec<(&'static str, Verdicts)>> {
    use std::os::unix::fs::PermissionsExt;
    let (_turn, python, dir, bin) = ordinary_user::ordinary_user(tag, codeloop)?;
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::os::unix::fs::chown(&work, Some(ordinary_user::user_uid()), None).unwrap();
    let write = |name: &str, lines: Vec<String>| {
        let path = work.join(name);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        path
    };
    let problems = write(
        "problems.jsonl",
        problems
            .iter()
            .map(|p| {
                serde_json::json!({"task_id": p.task_id, "prompt": p.prompt, "test": p.test, "entry_point": p.entry_point}).to_string()
            })
            .collect(),
    );
    let samples = write(
        "samples.jsonl",
        cases
            .iter()
            .map(|(_, t, c)| serde_json::json!({"task_id": t, "completion": c}).to_string())
            .collect(),
    );
    let mut all = Vec::new();
    for (mode, fresh) in [("forked", false), ("fresh", true)] {
        let eval = |sandbox: Option<&str>| {
            let mut cmd = std::process::Command::new("runuser");
            cmd.args(["-u", ordinary_user::USER, "--"]).arg(&bin);
            if let Some(s) = sandbox {
                cmd.args(["--sandbox", s]);
            }
            cmd.args(["eval", "--quiet", "--workers", "2", "--ignore-incomplete"]);
            if fresh {
                cmd.arg("--fresh-process");
            }
            cmd.arg(&problems)
                .arg(&samples)
                .env("CODELOOP_PYTHON", python)
                .env("CODELOOP_CONFIG", work.join("none.toml"))
                .env("HOME", &work)
                .env_remove("CODELOOP_SANDBOX")
                .current_dir(&work)
                .output()
                .unwrap()
        };
        let mut o = eval(None);
        if String::from_utf8_lossy(&o.stderr).contains("--sandbox reduced") {
            println!("the user gets the reduced sandbox here");
            o = eval(Some("reduced"));
        }
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let results = eval::read_results(&work.join("samples.jsonl_results.jsonl")).unwrap();
        all.push((
            mode,
            named(cases, results.into_iter().map(|(_, p, r)| (p, r))),
        ));
    }
    Some(all)
}
