//! `codeloop bench`: the repair loop on a HumanEval-format problem set. Each
//! problem is one session (a tape you can open): the model writes the
//! function, the problem's own `check` runs in the sandbox, and on failure the
//! localized error goes back for reflection and repair, up to N iterations.
//! The tests are never shown to the model; it sees only the localized
//! failures, which do reveal what a failing assertion compared.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use serde::Serialize;

use super::model::{ModelArgs, select_model};
use crate::config::Config;
use crate::engine::{self, EngineOptions, EngineSetup, GivenPlan};
use crate::eval::{self, Problem};
use crate::exec::Sandbox;
use crate::protocol::Location;
use crate::session::{FunctionSpec, State};

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

/// One problem's outcome, as written to the results file.
#[derive(Debug, Serialize)]
struct BenchResult {
    task_id: String,
    passed_first: bool,
    passed_final: bool,
    /// Code versions written (1 = the first try only).
    iterations: u32,
    /// The first failure, localized.
    first_failure: Option<Location>,
    summary: String,
    tape: String,
}

/// The problem's code before its function: imports and helpers the function may use.
fn prelude_of(problem: &Problem) -> String {
    let def = format!("def {}(", problem.entry_point);
    match problem.prompt.find(&def) {
        Some(i) => problem.prompt[..i].to_string(),
        None => String::new(),
    }
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
            tests: BTreeMap::from([(name.clone(), problem.test.clone())]),
            preludes: BTreeMap::from([(name, prelude_of(problem))]),
            hidden_tests: true,
        }),
    }
}

async fn solve(problem: Problem, setup: EngineSetup) -> anyhow::Result<BenchResult> {
    let tape = setup.session_dir.join("tape.jsonl");
    let mut handle = engine::start(setup)?;
    let mut state = State::default();
    while let Some(r) = handle.events.recv().await {
        state.apply(&r);
    }
    let result = handle.done.await.context("a bench session stopped")??;
    let node = state.nodes.get(&problem.entry_point);
    let first_run = state
        .run_order
        .iter()
        .filter_map(|id| state.runs.get(id))
        .find(|r| r.node.is_some());
    let first_failure = state.history.iter().find_map(|h| match h {
        crate::session::state::HistoryEntry::Failure { location, .. } => Some(location.clone()),
        _ => None,
    });
    Ok(BenchResult {
        task_id: problem.task_id,
        passed_first: first_run
            .and_then(|r| r.record.as_ref())
            .is_some_and(|r| r.passed),
        passed_final: result.passed,
        iterations: node.map(|n| n.iteration()).unwrap_or(0),
        first_failure,
        summary: result.summary,
        tape: tape.to_string_lossy().into_owned(),
    })
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
    let sandbox = Sandbox::probe();
    if let Some(problem) = sandbox.interpreter_problem() {
        anyhow::bail!("{problem}");
    }
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
    eprintln!(
        "codeloop bench: {} problems, model: {}\n  sessions in {}",
        problems.len(),
        selected.description,
        base.display()
    );
    let mut file = std::fs::File::create(&out)
        .with_context(|| format!("cannot write the results file {}", out.display()))?;
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
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await;
            (i, solve(problem, setup).await)
        });
    }
    let mut results: Vec<Option<BenchResult>> = (0..problems.len()).map(|_| None).collect();
    while let Some(joined) = tasks.join_next().await {
        let (i, result) = joined.context("a bench task failed")?;
        let result = result?;
        eprintln!(
            "  {:<16} first try {:<4} after repair {:<4} ({} iteration{})",
            result.task_id,
            if result.passed_first { "pass" } else { "FAIL" },
            if result.passed_final { "pass" } else { "FAIL" },
            result.iterations,
            if result.iterations == 1 { "" } else { "s" }
        );
        results[i] = Some(result);
    }
    let results: Vec<BenchResult> = results.into_iter().flatten().collect();
    for r in &results {
        writeln!(file, "{}", serde_json::to_string(r)?)?;
    }
    let n = results.len();
    let first = results.iter().filter(|r| r.passed_first).count();
    let fin = results.iter().filter(|r| r.passed_final).count();
    let pct = |k: usize| 100.0 * k as f64 / n as f64;
    println!("pass@1 first try:    {:.1}% ({first}/{n})", pct(first));
    println!("pass@1 after repair: {:.1}% ({fin}/{n})", pct(fin));
    println!("results: {}", out.display());
    Ok(0)
}
