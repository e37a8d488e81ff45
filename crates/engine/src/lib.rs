//! The repair loop. Emits `Event`s, takes `Command`s; no terminal code.
//!
//! The contract with the views (TUI, headless runner):
//! `start(setup) -> EngineHandle`; the handle's `events` receiver yields every
//! `Record` the engine appended to the tape, in order; `commands` takes steering
//! commands; `done` resolves to the final result when the session ends.
//!
//! Architecture Invariant: the engine keeps no state of its own beside the
//! tape: every decision reads the `State` folded from the events it has
//! recorded (step mode, call and run ids, notices given, nodes queued to
//! run again, failures, the program's repairs), so what it does is exactly
//! what a view of the tape shows. What it holds besides is plumbing that wakes
//! tasks (a gate's hand-off, a cancel token, notifications), never a fact.
//!
//! The files, by step:
//! - `context`: `Core`, the context every step shares (the tape, the model,
//!   the sandbox, the prompts, the options); creating and running an engine.
//! - `recorder`: the tape's one writer, on its own thread, fed through a
//!   bounded channel: decides, appends, folds and hands each event to the views.
//! - `schedule`: the session from start to end; each pass over the DAG
//!   (dependencies first, a worker limit, blocked dependents); re-runs.
//! - `steering`: the person's commands, and the step-mode gate.
//! - `resume`: time travel: a recorded session resumed on its own tape,
//!   forked at a record into a new one, or rewound by a node's iteration.
//! - `node`: one node's life in a pass: tests, code, check, run, repair.
//! - `review`: the review before running: a model call that reads a node's
//!   code against the task, spec and tests; its verdict, its pause, and a
//!   serious finding sent to a repair unrun.
//! - `consensus`: functional consensus: a node's first code written N
//!   times, each run on its tests' inputs, the one most others agree with kept.
//! - `testfix`: the model's fix of a node's tests when its reflection blames
//!   them: the verdict, the rules a fix keeps, the step-mode gate.
//! - `examples`: the examples a task states, ground truth for the tests.
//! - `suspect`: a test the reflection blames, said and paused before.
//! - `calls`: model calls: budget, gate, streamed onto the tape, asked again
//!   without code; a looping reply stopped, a failed call's tokens counted.
//! - `tag`: a call's tag (`plan`, `tests/NAME`, `repair/NAME/3`, ...),
//!   written and read back by one type.
//! - `schemas`: the JSON schema of each reply read as data, and the reply
//!   limit of each kind of call.
//! - `plan`: the plan given, cached or asked for, and a spec edit, validated as a DAG.
//! - `generate`: a node's tests and first code, and the context every
//!   prompt about a node is written from.
//! - `repair`: what follows a failure: which kind of attempt, the repair's
//!   prompt, call and reply (code, or the tests blamed), a fresh start.
//! - `conversation`: a repair as the next turn of the conversation that
//!   wrote the code; its prompt fitted to the context window.
//! - `looped`: a reflection that repeats itself, cut, marked and not fed on.
//! - `execute`: the static check and a sandboxed run, recorded.
//! - `output`: a run's output on its way to the tape, the pieces that come
//!   within a frame's time gathered into one record.
//! - `runs`: what a run executes, derived from the state, and how its result is judged.
//! - `entry`: what the assembled program calls run as a program.
//! - `finish`: the assembled program, its run (a failure repaired in the node
//!   it belongs to), its entry point's output, the export, the report, the cache.
//! - `extract`: code and plans out of a model's reply.
//! - `prompts`: the prompt templates and their overrides.
//! - `cache`: the cache of solved tasks.
#![warn(unreachable_pub)]

mod arity;
mod blame;
mod cache;
mod calls;
mod cases;
pub use cases::TestsFormat;
mod consensus;
mod context;
mod conversation;
mod decide;
mod entry;
mod examples;
mod execute;
pub mod extract;
mod finish;
mod generate;
pub mod inputs;
mod looped;
mod named;
mod node;
pub mod output;
mod pictures;
mod plan;
mod prompts;
mod recorder;
mod repair;
mod repeat;
mod resume;
mod review;
pub mod runs;
mod schedule;
mod schemas;
mod steering;
mod suspect;
mod tag;
mod testfix;
mod tidy;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::mpsc;

use codeloop_llm::ChatModel;
use codeloop_sandbox::Sandbox;
use codeloop_session::{FunctionSpec, RunRecord, State};

pub use codeloop_session::EngineHandle;
pub use codeloop_session::RepairPolicy;
pub use codeloop_session::story::rewind_point;
pub use context::EngineError;
pub use resume::{
    ContinueSetup, ResumeError, fork, fork_noting, nothing_left, resume, rewind, segment_options,
};

/// Everything a session needs to start.
pub struct EngineSetup {
    pub task: String,
    /// Files attached to the task.
    pub inputs: Vec<PathBuf>,
    pub model: Arc<dyn ChatModel>,
    pub sandbox: Arc<Sandbox>,
    pub options: EngineOptions,
    /// The session's folder (tape, code of every iteration, full output logs).
    pub session_dir: PathBuf,
    /// Folder of user prompt overrides (templates there replace those in prompts/).
    pub prompt_overrides: Option<PathBuf>,
    /// A plan and tests given with the task (a benchmark problem): no plan or
    /// test generation, the model writes and repairs the code only.
    pub given: Option<GivenPlan>,
}

/// A plan fixed in advance.
#[derive(Debug, Clone, Default)]
pub struct GivenPlan {
    pub specs: Vec<FunctionSpec>,
    /// Tests per node.
    pub tests: BTreeMap<String, String>,
    /// Code every version of a node starts with unless it already contains it
    /// (a benchmark prompt's imports and helpers).
    pub preludes: BTreeMap<String, String>,
    /// The tests are run but never shown to the model (a benchmark's hidden
    /// tests); it sees only the localized failures.
    pub hidden_tests: bool,
}

#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Code versions a node may have before it is given up (first try included).
    pub max_iterations: u32,
    /// Nodes run in parallel at most.
    pub workers: usize,
    /// Wall-clock limit of one run, in seconds.
    pub run_timeout_secs: u64,
    /// Memory limit of one run, MiB.
    pub memory_mb: u64,
    /// Tokens the whole session may use (prompt + completion); 0 = no limit.
    pub token_budget: u64,
    pub step_mode: bool,
    /// Stay alive after the session finished, for re-runs and edits (the workbench).
    pub keep_alive: bool,
    /// Where solved tasks are cached; None = no cache.
    pub cache_dir: Option<PathBuf>,
    /// Where the program, its tests and the report go; None = `out/` in the session folder.
    pub output_dir: Option<PathBuf>,
    /// What the loop does after a failure: fresh starts, their asks and
    /// temperatures, program repairs, runtime values, review
    /// (`codeloop_session::policy`); recorded whole on the tape.
    pub policy: RepairPolicy,
    /// Candidates of a node's first code, voted on by functional consensus
    /// (`consensus.rs`); 1 = none (the model's one reply).
    pub candidates: u32,
    /// How a node's tests are asked for: as cases under a JSON schema, or
    /// as a test file (`cases.rs`).
    pub tests: TestsFormat,
    /// A code call's answer starts at the function's `def` line, and a
    /// tests call's at a test function calling it, where the server can go
    /// on from a start.
    pub prefill: bool,
    /// The temperature of each function's first code and of its tests when
    /// the model's settings name none: 0, its likeliest answer (SmolLM2-135M
    /// at its server's default of 0.8 wrote garbage where at 0 it wrote the
    /// body). Repairs, fresh starts and further candidates keep the
    /// settings' (or the server's) temperature, for variety.
    pub first_temperature: Option<f32>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            max_iterations: 4,
            workers: 2,
            run_timeout_secs: 10,
            memory_mb: 1024,
            token_budget: 0,
            step_mode: false,
            keep_alive: false,
            cache_dir: None,
            output_dir: None,
            policy: RepairPolicy::default(),
            candidates: 1,
            tests: TestsFormat::default(),
            prefill: false,
            first_temperature: None,
        }
    }
}

/// Records buffered between the engine and a slow view before the engine waits.
const VIEW_BUFFER: usize = 4096;
/// Commands buffered before the sender waits.
const COMMAND_BUFFER: usize = 64;

/// Start a session: creates the session folder and its tape, spawns the loop
/// on the current tokio runtime, and returns the handle the views use.
pub fn start(setup: EngineSetup) -> anyhow::Result<EngineHandle> {
    let (events_tx, events_rx) = mpsc::channel(VIEW_BUFFER);
    let (commands_tx, commands_rx) = mpsc::channel(COMMAND_BUFFER);
    let session_dir = setup.session_dir.clone();
    let engine = context::Engine::create(setup, events_tx)?;
    let done = tokio::spawn(engine.run(commands_rx));
    Ok(EngineHandle {
        events: events_rx,
        commands: commands_tx,
        done,
        session_dir,
    })
}

/// A new, unique session folder under `base` (not yet created).
pub fn new_session_dir(base: &Path) -> PathBuf {
    let now = time::OffsetDateTime::now_utc();
    let stamp = now
        .format(time::macros::format_description!(
            "[year][month][day]-[hour][minute][second]"
        ))
        .unwrap_or_else(|_| "session".to_string());
    let mut n = now.nanosecond() % 0x10000;
    loop {
        let dir = base.join(format!("{stamp}-{n:04x}"));
        if !dir.exists() {
            return dir;
        }
        n = (n + 1) % 0x10000;
    }
}

/// Re-execute exactly the code a recorded run ran (as of `state`, the tape
/// folded up to that run) and return the new record: `replay --live`
/// compares it with the recorded one.
pub async fn rerun(sandbox: &Sandbox, state: &State, run_id: u64) -> anyhow::Result<RunRecord> {
    let run = state
        .runs
        .get(&run_id)
        .ok_or_else(|| anyhow::anyhow!("run {run_id} is not on the tape"))?;
    let limits = execute::limits_of(state.config.timeout_secs, 1024);
    let prepared = match &run.node {
        Some(node) => runs::node_run(state, node, Some(run.iteration), limits)
            .map_err(|e| anyhow::anyhow!("cannot rebuild run {run_id}: {e}"))?,
        None => {
            let program = state
                .program
                .as_ref()
                .ok_or_else(|| anyhow::anyhow!("the tape has no assembled program"))?;
            runs::program_run(state, &program.code, limits)
        }
    };
    let outcome = sandbox
        .run(
            prepared.spec.clone(),
            None,
            tokio_util::sync::CancellationToken::new(),
        )
        .await?;
    Ok(runs::judge(&outcome, &prepared).0)
}
