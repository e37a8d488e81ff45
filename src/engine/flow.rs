//! The loop itself: plan, tests first, code, check, run, localize, reflect
//! and repair, assemble. Nodes run in parallel as far as their dependencies
//! and the worker limit allow; step mode pauses before every model call and
//! every run; steering commands arrive at any time.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::{Mutex, Notify, Semaphore, mpsc, oneshot};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::cache::{self, Solved};
use super::extract;
use super::prompts::{PromptError, Prompts};
use super::recorder::Recorder;
use super::runs::{self, PreparedRun};
use super::{EngineOptions, EngineSetup, GivenPlan};
use crate::exec::check::{self, CheckInput};
use crate::exec::{ExecError, Limits, Sandbox};
use crate::llm::{ChatModel, ChatRequest, LlmError};
use crate::protocol::{ChatMessage, Location, Role};
use crate::session::*;

/// Output of one run recorded on the tape at most; the rest is in the run's log file.
const OUTPUT_ON_TAPE: usize = 1 << 20;
/// Streamed reply text is recorded in pieces of about this size or age.
const DELTA_BYTES: usize = 256;
const DELTA_AGE: Duration = Duration::from_millis(50);
/// Plans asked for before giving up on an unusable one.
const PLAN_ATTEMPTS: u32 = 3;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Tape(#[from] TapeError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error("cannot create the session folder {path}: {source}")]
    SessionDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the input file {path} cannot be read: {source}")]
    Input {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Why a model call gave nothing to work with.
enum Stop {
    Skipped,
    Cancelled,
    Budget,
    Failed,
    /// A prompt template (a user override) does not render.
    Prompt(PromptError),
    Tape(TapeError),
}

impl From<PromptError> for Stop {
    fn from(e: PromptError) -> Self {
        Stop::Prompt(e)
    }
}

impl From<TapeError> for Stop {
    fn from(e: TapeError) -> Self {
        Stop::Tape(e)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GateAnswer {
    Go,
    Skip,
    Cancel,
}

pub struct Engine {
    core: Arc<Core>,
}

struct Core {
    rec: Mutex<Recorder>,
    model: Arc<dyn ChatModel>,
    sandbox: Arc<Sandbox>,
    prompts: Prompts,
    opts: EngineOptions,
    dir: PathBuf,
    given: Option<GivenPlan>,
    task: String,
    inputs: Vec<InputFile>,
    input_paths: Vec<PathBuf>,
    next_call: AtomicU64,
    next_run: AtomicU64,
    step_mode: AtomicBool,
    budget_noticed: AtomicBool,
    estimate_noticed: AtomicBool,
    gate_turn: Mutex<()>,
    gate_waiter: std::sync::Mutex<Option<oneshot::Sender<GateAnswer>>>,
    cancel: CancellationToken,
    /// Nodes to run again once the current pass is over.
    queued: std::sync::Mutex<BTreeSet<String>>,
    work: Notify,
    /// Nodes of the current pass that have not finished it.
    active: std::sync::Mutex<BTreeSet<String>>,
    node_done: Notify,
}

/// Limits of one run from the session's settings.
pub fn limits_of(timeout_secs: u64, memory_mb: u64) -> Limits {
    Limits {
        wall: Duration::from_secs(timeout_secs.max(1)),
        cpu_secs: timeout_secs.max(1) + 1,
        memory_bytes: memory_mb.max(64) << 20,
        ..Limits::default()
    }
}

fn describe_input(path: &Path) -> Result<InputFile, EngineError> {
    let err = |source| EngineError::Input {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::read(path).map_err(err)?;
    let abs = std::fs::canonicalize(path).map_err(err)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "input".into());
    let head = &bytes[..bytes.len().min(2048)];
    let preview = match std::str::from_utf8(head) {
        Ok(text) if !head.contains(&0) => text.lines().take(8).collect::<Vec<_>>().join("\n"),
        _ => format!("(binary, {} bytes)", bytes.len()),
    };
    Ok(InputFile {
        name,
        source_path: abs.to_string_lossy().into_owned(),
        size_bytes: bytes.len() as u64,
        preview,
    })
}

impl Engine {
    pub fn create(setup: EngineSetup, views: mpsc::Sender<Record>) -> Result<Engine, EngineError> {
        let dir = setup.session_dir.clone();
        for sub in ["", "logs", "code", "tests"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|source| EngineError::SessionDir {
                path: dir.clone(),
                source,
            })?;
        }
        let inputs = setup
            .inputs
            .iter()
            .map(|p| describe_input(p))
            .collect::<Result<Vec<_>, _>>()?;
        let prompts = Prompts::load(setup.prompt_overrides.as_deref())?;
        let rec = Recorder::create(&dir, views)?;
        let step_mode = setup.options.step_mode;
        Ok(Engine {
            core: Arc::new(Core {
                rec: Mutex::new(rec),
                model: setup.model,
                sandbox: setup.sandbox,
                prompts,
                opts: setup.options,
                dir,
                given: setup.given,
                task: setup.task,
                inputs,
                input_paths: setup.inputs,
                next_call: AtomicU64::new(1),
                next_run: AtomicU64::new(1),
                step_mode: AtomicBool::new(step_mode),
                budget_noticed: AtomicBool::new(false),
                estimate_noticed: AtomicBool::new(false),
                gate_turn: Mutex::new(()),
                gate_waiter: std::sync::Mutex::new(None),
                cancel: CancellationToken::new(),
                queued: std::sync::Mutex::new(BTreeSet::new()),
                work: Notify::new(),
                active: std::sync::Mutex::new(BTreeSet::new()),
                node_done: Notify::new(),
            }),
        })
    }

    pub async fn run(self, mut commands: mpsc::Receiver<Command>) -> anyhow::Result<FinalResult> {
        let core = self.core;
        let steer = core.clone();
        let steering = tokio::spawn(async move {
            while let Some(cmd) = commands.recv().await {
                steer.steer(cmd).await;
            }
            // The workbench that steered this session is gone.
            if steer.opts.keep_alive {
                steer.cancel.cancel();
                steer.release(GateAnswer::Cancel);
            }
        });
        let result = core.session().await;
        steering.abort();
        let mut rec = core.rec.lock().await;
        rec.flush()?;
        Ok(result?)
    }
}

/// A dependency as the prompts show it.
#[derive(Serialize)]
struct DepCtx {
    name: String,
    purpose: String,
    code: String,
}

#[derive(Serialize)]
struct HistoryCtx {
    iteration: u32,
    error: String,
}

impl Core {
    // ---- recording and reading the state -------------------------------------------

    async fn record(&self, event: Event) -> Result<Record, TapeError> {
        self.rec.lock().await.append(event).await
    }

    async fn read<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        let rec = self.rec.lock().await;
        f(rec.state())
    }

    async fn status(&self, node: &str, status: NodeStatus) -> Result<(), TapeError> {
        let current = self.read(|s| s.nodes.get(node).map(|n| n.status)).await;
        if current != Some(status) {
            self.record(Event::NodeStatus {
                node: node.to_string(),
                status,
            })
            .await?;
        }
        Ok(())
    }

    async fn notice(&self, level: NoticeLevel, message: String) -> Result<(), TapeError> {
        self.record(Event::Notice { level, message })
            .await
            .map(|_| ())
    }

    fn limits(&self) -> Limits {
        limits_of(self.opts.run_timeout_secs, self.opts.memory_mb)
    }

    // ---- steering --------------------------------------------------------------------

    async fn steer(&self, cmd: Command) {
        if self
            .record(Event::Steer {
                command: cmd.clone(),
            })
            .await
            .is_err()
        {
            self.cancel.cancel();
            return;
        }
        match cmd {
            Command::SetStepMode { on } => {
                self.step_mode.store(on, Ordering::SeqCst);
                if !on {
                    self.release(GateAnswer::Go);
                }
            }
            Command::Approve => self.release(GateAnswer::Go),
            Command::Skip => self.release(GateAnswer::Skip),
            Command::Cancel => {
                self.cancel.cancel();
                self.release(GateAnswer::Cancel);
            }
            // Folded into the state by the Steer event; later prompts read them.
            Command::EditTask { .. } | Command::EditSpec { .. } | Command::Hint { .. } => {}
            Command::EditCode { node, code } => {
                let next = self
                    .read(|s| s.nodes.get(&node).map(|n| n.iteration() + 1))
                    .await;
                if let Some(iteration) = next {
                    let event = Event::Code {
                        node: node.clone(),
                        iteration,
                        code,
                        source: CodeSource::Edit,
                    };
                    if self.record(event).await.is_err() {
                        self.cancel.cancel();
                        return;
                    }
                    self.queue_unless_active(&node);
                }
            }
            Command::EditTests { node, .. } => self.queue_unless_active(&node),
            Command::RerunNode { node } => self.queue(&node),
        }
    }

    /// A node in the current pass picks up edits by itself; others run again.
    fn queue_unless_active(&self, node: &str) {
        let active = self
            .active
            .lock()
            .map(|a| a.contains(node))
            .unwrap_or(false);
        if !active {
            self.queue(node);
        }
    }

    fn queue(&self, node: &str) {
        if let Ok(mut q) = self.queued.lock() {
            q.insert(node.to_string());
        }
        self.work.notify_one();
    }

    fn release(&self, answer: GateAnswer) {
        let waiter = self.gate_waiter.lock().ok().and_then(|mut w| w.take());
        if let Some(tx) = waiter {
            let _ = tx.send(answer);
        }
    }

    /// In step mode, wait for the person's word before `step`.
    async fn gate(&self, step: Step) -> GateAnswer {
        if self.cancel.is_cancelled() {
            return GateAnswer::Cancel;
        }
        if !self.step_mode.load(Ordering::SeqCst) {
            return GateAnswer::Go;
        }
        // One pause at a time: parallel nodes queue up here.
        let _turn = self.gate_turn.lock().await;
        if !self.step_mode.load(Ordering::SeqCst) {
            return GateAnswer::Go;
        }
        let (tx, rx) = oneshot::channel();
        if let Ok(mut w) = self.gate_waiter.lock() {
            *w = Some(tx);
        }
        if self.record(Event::Paused { step }).await.is_err() {
            return GateAnswer::Cancel;
        }
        tokio::select! {
            answer = rx => answer.unwrap_or(GateAnswer::Cancel),
            _ = self.cancel.cancelled() => GateAnswer::Cancel,
        }
    }

    // ---- the session -------------------------------------------------------------------

    async fn session(self: &Arc<Self>) -> Result<FinalResult, EngineError> {
        let config = ConfigSummary {
            provider: self.model.provider().to_string(),
            model: self.model.model_name().to_string(),
            endpoint: self.model.endpoint().to_string(),
            max_iterations: self.opts.max_iterations,
            workers: self.opts.workers as u32,
            timeout_secs: self.opts.run_timeout_secs,
            sandbox_layers: self.sandbox.active_layers(),
            step_mode: self.opts.step_mode,
        };
        let started_at = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let session_id = self
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.record(Event::SessionStarted {
            version: TAPE_VERSION,
            session_id,
            started_at,
            task: self.task.clone(),
            inputs: self.inputs.clone(),
            config,
        })
        .await?;
        if self.model.provider() == "demo" {
            self.notice(
                NoticeLevel::Info,
                "demo model: its replies are authored fixtures, played back offline; the runs, failures and repairs are real".into(),
            )
            .await?;
        }
        let cache_key = self.cache_key();
        if !self.plan(cache_key.as_deref()).await? {
            return self.finish(cache_key.as_deref()).await;
        }
        let mut todo = self.read(|s| order_of(s, None)).await;
        loop {
            self.pass(&todo).await?;
            let queued = self.take_queue();
            if !queued.is_empty() && !self.cancel.is_cancelled() {
                todo = self.read(|s| order_of(s, Some(&queued))).await;
                continue;
            }
            let result = self.finish(cache_key.as_deref()).await?;
            if !self.opts.keep_alive || self.cancel.is_cancelled() {
                return Ok(result);
            }
            tokio::select! {
                _ = self.work.notified() => {}
                _ = self.cancel.cancelled() => return Ok(result),
            }
            let queued = self.take_queue();
            todo = self.read(|s| order_of(s, Some(&queued))).await;
        }
    }

    fn take_queue(&self) -> BTreeSet<String> {
        self.queued
            .lock()
            .map(|mut q| std::mem::take(&mut *q))
            .unwrap_or_default()
    }

    fn cache_key(&self) -> Option<String> {
        self.opts.cache_dir.as_ref()?;
        // Scripted and demo replies are the point of a demo: never cached.
        if self.given.is_some() || self.model.provider() != "openai-compatible" {
            return None;
        }
        let model = format!("{}@{}", self.model.model_name(), self.model.endpoint());
        Some(cache::key(
            &self.task,
            &self.input_paths,
            &model,
            self.prompts.digest(),
        ))
    }

    /// The plan: given, cached, or asked for. False when there is none.
    async fn plan(&self, cache_key: Option<&str>) -> Result<bool, EngineError> {
        if let Some(given) = &self.given {
            self.record(Event::Plan {
                specs: given.specs.clone(),
            })
            .await?;
            for (node, code) in &given.tests {
                self.record(Event::Tests {
                    node: node.clone(),
                    code: code.clone(),
                    source: CodeSource::Given,
                })
                .await?;
            }
            return Ok(true);
        }
        if let (Some(dir), Some(key)) = (&self.opts.cache_dir, cache_key)
            && let Some(solved) = cache::load(dir, key)
            && Dag::new(solved.specs.clone()).is_ok()
        {
            self.notice(
                        NoticeLevel::Info,
                        "this task was solved before with the same model and prompts: replaying the cached solution (its tests run again)".into(),
                    )
                    .await?;
            self.record(Event::Plan {
                specs: solved.specs.clone(),
            })
            .await?;
            for (node, code) in solved.tests {
                self.record(Event::Tests {
                    node,
                    code,
                    source: CodeSource::Cache,
                })
                .await?;
            }
            for (node, code) in solved.code {
                self.record(Event::Code {
                    node,
                    iteration: 1,
                    code,
                    source: CodeSource::Cache,
                })
                .await?;
            }
            return Ok(true);
        }
        let mut error: Option<String> = None;
        for attempt in 1..=PLAN_ATTEMPTS {
            match self.may_ask(&Purpose::Plan).await {
                Ok(()) => {}
                Err(Stop::Tape(e)) => return Err(e.into()),
                Err(_) => return Ok(false),
            }
            let prompt = self.prompts.render(
                "plan.md",
                minijinja::context! {
                    task => self.read(|s| s.task.clone()).await,
                    inputs => &self.inputs,
                    error => &error,
                },
            )?;
            let tag = if attempt == 1 {
                "plan".to_string()
            } else {
                format!("plan/{attempt}")
            };
            let reply = match self
                .call(Purpose::Plan, tag, self.messages(prompt)?, None)
                .await
            {
                Ok(r) => r,
                Err(Stop::Tape(e)) => return Err(e.into()),
                Err(Stop::Prompt(e)) => return Err(e.into()),
                Err(_) => return Ok(false),
            };
            let checked = extract::extract_plan(&reply).and_then(|specs| {
                Dag::new(specs.clone())
                    .map(|_| specs)
                    .map_err(|e| e.to_string())
            });
            match checked {
                Ok(specs) => {
                    self.record(Event::Plan { specs }).await?;
                    return Ok(true);
                }
                Err(message) => {
                    self.record(Event::PlanError {
                        message: message.clone(),
                    })
                    .await?;
                    error = Some(message);
                }
            }
        }
        Ok(false)
    }

    fn messages(&self, user: String) -> Result<Vec<ChatMessage>, PromptError> {
        Ok(vec![
            ChatMessage {
                role: Role::System,
                content: self.prompts.render("system.md", ())?,
            },
            ChatMessage {
                role: Role::User,
                content: user,
            },
        ])
    }

    /// Run the nodes of `todo` (topological order): each waits for those of
    /// its dependencies that are in the pass, at most `workers` at a time.
    async fn pass(self: &Arc<Self>, todo: &[String]) -> Result<(), EngineError> {
        for name in todo {
            self.status(name, NodeStatus::Pending).await?;
        }
        if let Ok(mut a) = self.active.lock() {
            *a = todo.iter().cloned().collect();
        }
        let workers = Arc::new(Semaphore::new(self.opts.workers.max(1)));
        let mut tasks = JoinSet::new();
        for name in todo {
            let core = self.clone();
            let name = name.clone();
            let workers = workers.clone();
            tasks.spawn(async move {
                let result = core.node_when_ready(&name, workers).await;
                if let Ok(mut a) = core.active.lock() {
                    a.remove(&name);
                }
                core.node_done.notify_waiters();
                result
            });
        }
        let mut first_err = None;
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    self.cancel.cancel();
                    first_err.get_or_insert(e);
                }
                Err(join) => {
                    self.cancel.cancel();
                    first_err.get_or_insert(EngineError::Tape(TapeError::Write {
                        path: self.dir.join("tape.jsonl"),
                        source: std::io::Error::other(format!("a node task failed: {join}")),
                    }));
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    async fn node_when_ready(
        &self,
        name: &str,
        workers: Arc<Semaphore>,
    ) -> Result<(), EngineError> {
        let deps = self
            .read(|s| {
                Dag::new(s.specs.clone())
                    .map(|d| d.dependencies(name))
                    .unwrap_or_default()
            })
            .await;
        loop {
            let done = self.node_done.notified();
            let waiting = self
                .active
                .lock()
                .map(|a| deps.iter().any(|d| a.contains(d)))
                .unwrap_or(false);
            if !waiting {
                break;
            }
            tokio::select! {
                _ = done => {}
                _ = self.cancel.cancelled() => return Ok(()),
            }
        }
        let Ok(_permit) = workers.acquire().await else {
            return Ok(());
        };
        match self.node(name, &deps).await {
            Err(Stop::Tape(e)) => Err(e.into()),
            Err(Stop::Prompt(e)) => Err(e.into()),
            Ok(()) | Err(Stop::Cancelled | Stop::Skipped | Stop::Budget | Stop::Failed) => Ok(()),
        }
    }

    /// One node: tests, code, then check, run and repair until it passes, is
    /// given up, or the session is cancelled.
    async fn node(&self, name: &str, deps: &[String]) -> Result<(), Stop> {
        if self.cancel.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        let failed_dep = self
            .read(|s| {
                deps.iter()
                    .find(|d| s.nodes.get(*d).map(|n| n.status) != Some(NodeStatus::Passed))
                    .cloned()
            })
            .await;
        if let Some(dep) = failed_dep {
            self.status(name, NodeStatus::Blocked).await?;
            self.notice(
                NoticeLevel::Warning,
                format!("`{name}` is blocked: it depends on `{dep}`, which did not pass"),
            )
            .await?;
            return Ok(());
        }
        let (has_tests, has_code) = self
            .read(|s| {
                s.nodes
                    .get(name)
                    .map(|n| (n.tests.is_some(), !n.versions.is_empty()))
                    .unwrap_or((false, false))
            })
            .await;
        if !has_tests {
            self.status(name, NodeStatus::Generating).await?;
            match self.write_tests(name, "tests/{name}").await {
                Ok(()) => {}
                Err(Stop::Skipped) => {
                    self.notice(
                        NoticeLevel::Warning,
                        format!(
                            "`{name}` has no tests (skipped): its runs only check that it loads"
                        ),
                    )
                    .await?
                }
                Err(e) => return self.give_up(name, e).await,
            }
        }
        if !has_code {
            self.status(name, NodeStatus::Generating).await?;
            if let Err(e) = self.write_code(name).await {
                return self.give_up(name, e).await;
            }
        }
        let mut tests_rewritten = false;
        loop {
            let iteration = self
                .read(|s| s.nodes.get(name).map(|n| n.iteration()).unwrap_or(0))
                .await;
            self.status(name, NodeStatus::Checking).await?;
            self.check(name, iteration).await?;
            match self
                .gate(Step::Run {
                    node: Some(name.to_string()),
                    iteration,
                })
                .await
            {
                GateAnswer::Go => {}
                GateAnswer::Skip => {
                    self.notice(
                        NoticeLevel::Warning,
                        format!("the run of `{name}` was skipped: it is accepted without running its tests"),
                    )
                    .await?;
                    self.status(name, NodeStatus::Passed).await?;
                    return Ok(());
                }
                GateAnswer::Cancel => return Err(Stop::Cancelled),
            }
            let now = self
                .read(|s| s.nodes.get(name).map(|n| n.iteration()).unwrap_or(0))
                .await;
            if now != iteration {
                continue; // edited while paused: check the new code first
            }
            self.status(name, NodeStatus::Running).await?;
            let prepared = self
                .read(|s| runs::node_run(s, name, None, self.limits()))
                .await;
            let (record, location) = match prepared {
                Ok(p) => {
                    self.execute(Some(name), iteration, RunKind::NodeTests, p)
                        .await?
                }
                Err(message) => {
                    self.notice(
                        NoticeLevel::Error,
                        format!("cannot run `{name}`: {message}"),
                    )
                    .await?;
                    return self.give_up(name, Stop::Failed).await;
                }
            };
            if self.cancel.is_cancelled() {
                return Err(Stop::Cancelled);
            }
            if record.passed {
                self.status(name, NodeStatus::Passed).await?;
                return Ok(());
            }
            let now = self
                .read(|s| s.nodes.get(name).map(|n| n.iteration()).unwrap_or(0))
                .await;
            self.status(name, NodeStatus::Failed).await?;
            let tests_broken = location.as_ref().is_some_and(|l| {
                l.file == crate::exec::harness::tests_file_name(name) && l.test.is_none()
            });
            if let Some(location) = location {
                self.record(Event::Localized {
                    node: name.to_string(),
                    iteration,
                    location,
                })
                .await?;
            }
            if now != iteration {
                continue; // edited while it ran: run the edit
            }
            if tests_broken && !tests_rewritten && self.given.is_none() {
                // The tests themselves do not load: no code change can fix
                // that. Ask for the tests again, once.
                tests_rewritten = true;
                self.notice(
                    NoticeLevel::Warning,
                    format!("the tests of `{name}` do not load: asking for new tests"),
                )
                .await?;
                self.status(name, NodeStatus::Generating).await?;
                match self.write_tests(name, "tests/{name}/2").await {
                    Ok(()) => continue,
                    Err(e) => return self.give_up(name, e).await,
                }
            }
            if iteration >= self.opts.max_iterations {
                self.notice(
                    NoticeLevel::Warning,
                    format!(
                        "`{name}` still fails after {iteration} iteration{} (the limit): given up",
                        if iteration == 1 { "" } else { "s" }
                    ),
                )
                .await?;
                self.status(name, NodeStatus::GaveUp).await?;
                return Ok(());
            }
            if let Err(e) = self.repair(name, iteration).await {
                return self.give_up(name, e).await;
            }
        }
    }

    async fn give_up(&self, name: &str, why: Stop) -> Result<(), Stop> {
        match why {
            Stop::Cancelled | Stop::Tape(_) => Err(why),
            Stop::Prompt(e) => {
                self.notice(NoticeLevel::Error, e.to_string()).await?;
                self.status(name, NodeStatus::GaveUp).await?;
                Ok(())
            }
            Stop::Skipped | Stop::Budget | Stop::Failed => {
                self.status(name, NodeStatus::GaveUp).await?;
                Ok(())
            }
        }
    }

    // ---- model calls ---------------------------------------------------------------------

    /// Whether a model call for `purpose` may be made now: within the token
    /// budget, and (in step mode) approved. Prompts are rendered after this,
    /// so edits and hints given while paused go into the call.
    async fn may_ask(&self, purpose: &Purpose) -> Result<(), Stop> {
        if self.opts.token_budget > 0 {
            let used = self
                .read(|s| s.usage.prompt_tokens + s.usage.completion_tokens)
                .await;
            if used >= self.opts.token_budget {
                if !self.budget_noticed.swap(true, Ordering::SeqCst) {
                    self.notice(
                        NoticeLevel::Warning,
                        format!(
                            "the session's token budget ({} tokens) is spent ({used} used): no more model calls",
                            self.opts.token_budget
                        ),
                    )
                    .await?;
                }
                return Err(Stop::Budget);
            }
        }
        match self
            .gate(Step::ModelCall {
                purpose: purpose.clone(),
            })
            .await
        {
            GateAnswer::Go => {}
            GateAnswer::Skip => return Err(Stop::Skipped),
            GateAnswer::Cancel => return Err(Stop::Cancelled),
        }
        Ok(())
    }

    /// One streamed model call, recorded: request, deltas, reply or error.
    async fn call(
        &self,
        purpose: Purpose,
        tag: String,
        messages: Vec<ChatMessage>,
        temperature: Option<f32>,
    ) -> Result<String, Stop> {
        let call_id = self.next_call.fetch_add(1, Ordering::SeqCst);
        self.record(Event::ModelRequest {
            call_id,
            purpose,
            tag: tag.clone(),
            messages: messages.clone(),
        })
        .await?;
        let (tx, mut rx) = mpsc::channel::<String>(256);
        let forward = async {
            let mut buf = String::new();
            let mut since = Instant::now();
            while let Some(piece) = rx.recv().await {
                buf.push_str(&piece);
                if buf.len() >= DELTA_BYTES || since.elapsed() >= DELTA_AGE {
                    let text = std::mem::take(&mut buf);
                    self.record(Event::ModelDelta { call_id, text }).await?;
                    since = Instant::now();
                }
            }
            if !buf.is_empty() {
                self.record(Event::ModelDelta { call_id, text: buf })
                    .await?;
            }
            Ok::<(), TapeError>(())
        };
        let request = ChatRequest {
            tag,
            messages,
            temperature,
            max_tokens: None,
        };
        let started = Instant::now();
        let model = self.model.clone();
        let ask = async move {
            tokio::select! {
                r = model.stream_chat(request, tx) => r,
                _ = self.cancel.cancelled() => Err(LlmError::Cancelled),
            }
        };
        let (reply, forwarded) = tokio::join!(ask, forward);
        forwarded?;
        match reply {
            Ok(reply) => {
                if reply.usage_estimated && !self.estimate_noticed.swap(true, Ordering::SeqCst) {
                    self.notice(
                        NoticeLevel::Info,
                        "token counts are estimated (about 4 characters a token): the model does not report its usage".into(),
                    )
                    .await?;
                }
                self.record(Event::ModelReply {
                    call_id,
                    text: reply.text.clone(),
                    usage: reply.usage,
                    duration_ms: started.elapsed().as_millis() as u64,
                })
                .await?;
                Ok(reply.text)
            }
            Err(LlmError::Cancelled) => {
                self.record(Event::ModelError {
                    call_id,
                    message: "cancelled".into(),
                })
                .await?;
                Err(Stop::Cancelled)
            }
            Err(e) => {
                self.record(Event::ModelError {
                    call_id,
                    message: e.to_string(),
                })
                .await?;
                self.notice(NoticeLevel::Error, format!("model call failed: {e}"))
                    .await?;
                Err(Stop::Failed)
            }
        }
    }

    /// A call whose reply must hold code: asked once more, plainly, if it has none.
    async fn call_for_code(
        &self,
        purpose: Purpose,
        tag: String,
        mut messages: Vec<ChatMessage>,
        want: Option<&str>,
        temperature: Option<f32>,
    ) -> Result<(String, String), Stop> {
        let reply = self
            .call(purpose.clone(), tag.clone(), messages.clone(), temperature)
            .await?;
        if let Some(code) = extract::extract_code(&reply, want) {
            return Ok((reply, code));
        }
        self.notice(
            NoticeLevel::Warning,
            format!("the reply to {tag} had no code in it; asking once more"),
        )
        .await?;
        messages.push(ChatMessage {
            role: Role::Assistant,
            content: reply,
        });
        messages.push(ChatMessage {
            role: Role::User,
            content: "Your reply had no code. Reply with exactly one ```python block holding the whole code.".into(),
        });
        let retry = format!("{tag}/retry");
        let reply = self
            .call(purpose, retry.clone(), messages, temperature)
            .await?;
        match extract::extract_code(&reply, want) {
            Some(code) => Ok((reply, code)),
            None => {
                self.notice(
                    NoticeLevel::Error,
                    format!("the reply to {retry} had no code either"),
                )
                .await?;
                Err(Stop::Failed)
            }
        }
    }

    /// What the prompts of a node need: its spec, its direct dependencies, the task, its tests.
    async fn node_context(
        &self,
        name: &str,
    ) -> Option<(FunctionSpec, Vec<DepCtx>, String, Option<String>)> {
        self.read(|s| {
            let n = s.nodes.get(name)?;
            let deps = n
                .spec
                .depends_on
                .iter()
                .filter_map(|d| s.nodes.get(d))
                .map(|d| DepCtx {
                    name: d.spec.name.clone(),
                    purpose: d.spec.purpose.clone(),
                    code: d.code().unwrap_or("").to_string(),
                })
                .collect();
            Some((n.spec.clone(), deps, s.task.clone(), n.tests.clone()))
        })
        .await
    }

    /// Ask for `name`'s tests; `tag` is a pattern in which `{name}` is replaced.
    async fn write_tests(&self, name: &str, tag: &str) -> Result<(), Stop> {
        self.may_ask(&Purpose::Tests {
            node: name.to_string(),
        })
        .await?;
        let Some((spec, deps, task, _)) = self.node_context(name).await else {
            return Err(Stop::Failed);
        };
        let prompt = self
            .prompts
            .render("tests.md", minijinja::context! { task, spec, deps })?;
        let messages = self.messages(prompt)?;
        let (_, code) = self
            .call_for_code(
                Purpose::Tests {
                    node: name.to_string(),
                },
                tag.replace("{name}", name),
                messages,
                None,
                None,
            )
            .await?;
        self.record(Event::Tests {
            node: name.to_string(),
            code,
            source: CodeSource::Model,
        })
        .await?;
        Ok(())
    }

    /// The tests as the model may see them.
    fn shown_tests(&self, tests: Option<String>) -> Option<String> {
        if self.given.as_ref().is_some_and(|g| g.hidden_tests) {
            None
        } else {
            tests
        }
    }

    fn with_prelude(&self, name: &str, code: String) -> String {
        match self.given.as_ref().and_then(|g| g.preludes.get(name)) {
            Some(prelude) if !prelude.trim().is_empty() && !code.contains(prelude.trim()) => {
                format!("{}\n{code}", prelude.trim_end())
            }
            _ => code,
        }
    }

    async fn write_code(&self, name: &str) -> Result<(), Stop> {
        self.may_ask(&Purpose::Code {
            node: name.to_string(),
        })
        .await?;
        let Some((spec, deps, task, tests)) = self.node_context(name).await else {
            return Err(Stop::Failed);
        };
        let prompt = self.prompts.render(
            "code.md",
            minijinja::context! { task, spec, deps, inputs => &self.inputs, tests => self.shown_tests(tests) },
        )?;
        let messages = self.messages(prompt)?;
        let (_, code) = self
            .call_for_code(
                Purpose::Code {
                    node: name.to_string(),
                },
                format!("code/{name}/1"),
                messages,
                Some(name),
                None,
            )
            .await?;
        // An edit that arrived while the model wrote wins: keep it.
        let edited = self
            .read(|s| {
                s.nodes
                    .get(name)
                    .map(|n| !n.versions.is_empty())
                    .unwrap_or(false)
            })
            .await;
        if !edited {
            self.record(Event::Code {
                node: name.to_string(),
                iteration: 1,
                code: self.with_prelude(name, code),
                source: CodeSource::Model,
            })
            .await?;
        }
        Ok(())
    }

    /// Reflect on the localized failure of `iteration` and write iteration + 1.
    async fn repair(&self, name: &str, iteration: u32) -> Result<(), Stop> {
        self.may_ask(&Purpose::Reflect {
            node: name.to_string(),
        })
        .await?;
        let ctx = self
            .read(|s| {
                let n = s.nodes.get(name)?;
                let failures: Vec<(u32, Location)> = s
                    .history
                    .iter()
                    .filter_map(|h| match h {
                        crate::session::state::HistoryEntry::Failure {
                            node,
                            iteration,
                            location,
                        } if node == name => Some((*iteration, location.clone())),
                        _ => None,
                    })
                    .collect();
                let output = n
                    .last_run
                    .and_then(|r| s.runs.get(&r))
                    .map(|r| {
                        let all: String = r.chunks.iter().map(|(_, t)| t.as_str()).collect();
                        let lines: Vec<&str> = all.lines().collect();
                        lines[lines.len().saturating_sub(30)..].join("\n")
                    })
                    .unwrap_or_default();
                Some((
                    n.spec.clone(),
                    n.code().unwrap_or("").to_string(),
                    n.tests.clone(),
                    n.hints.clone(),
                    failures,
                    output,
                    s.task.clone(),
                ))
            })
            .await;
        let Some((spec, code, tests, hints, failures, output, task)) = ctx else {
            return Err(Stop::Failed);
        };
        let error = failures
            .last()
            .map(|(_, l)| l.render())
            .unwrap_or_else(|| "the tests failed (no location)".into());
        let signature = |l: &Location| (l.error_type.clone(), l.line, l.test.clone());
        let different_approach = failures.len() >= 2
            && signature(&failures[failures.len() - 1].1)
                == signature(&failures[failures.len() - 2].1);
        let history: Vec<HistoryCtx> = failures
            .iter()
            .take(failures.len().saturating_sub(1))
            .map(|(it, l)| HistoryCtx {
                iteration: *it,
                error: l.to_string(),
            })
            .collect();
        let prompt = self.prompts.render(
            "repair.md",
            minijinja::context! {
                task, spec, iteration, code, error, output, history, hints,
                different_approach, tests => self.shown_tests(tests),
            },
        )?;
        let messages = self.messages(prompt)?;
        if different_approach {
            self.notice(
                NoticeLevel::Info,
                format!("`{name}` failed the same way twice: asking for a different approach"),
            )
            .await?;
        }
        self.status(name, NodeStatus::Generating).await?;
        let next = iteration + 1;
        let (reply, code) = self
            .call_for_code(
                Purpose::Reflect {
                    node: name.to_string(),
                },
                format!("repair/{name}/{next}"),
                messages,
                Some(name),
                different_approach.then_some(0.8),
            )
            .await?;
        self.record(Event::Reflection {
            node: name.to_string(),
            iteration,
            text: extract::prose_before_code(&reply),
        })
        .await?;
        let edited = self
            .read(|s| {
                s.nodes
                    .get(name)
                    .map(|n| n.iteration() != iteration)
                    .unwrap_or(false)
            })
            .await;
        if !edited {
            self.record(Event::Code {
                node: name.to_string(),
                iteration: next,
                code: self.with_prelude(name, code),
                source: CodeSource::Model,
            })
            .await?;
        }
        Ok(())
    }

    // ---- checks and runs -----------------------------------------------------------------

    async fn check(&self, name: &str, iteration: u32) -> Result<(), TapeError> {
        let Some(code) = self
            .read(|s| s.nodes.get(name).and_then(|n| n.code().map(str::to_string)))
            .await
        else {
            return Ok(());
        };
        let spec = check::check_run(&[CheckInput {
            file: format!("{name}.py"),
            code,
            defines: vec![name.to_string()],
        }]);
        let findings = match self
            .sandbox
            .run(spec, None, self.cancel.child_token())
            .await
        {
            Ok(outcome) => match check::parse_findings(&outcome) {
                Ok(f) => f
                    .into_iter()
                    .map(|f| Finding {
                        kind: f.kind,
                        line: f.line,
                        message: f.message,
                    })
                    .collect(),
                Err(message) => vec![Finding {
                    kind: "check".into(),
                    line: None,
                    message,
                }],
            },
            Err(ExecError::Cancelled) => return Ok(()),
            Err(e) => vec![Finding {
                kind: "check".into(),
                line: None,
                message: format!("the static check could not run: {e}"),
            }],
        };
        self.record(Event::Check {
            node: name.to_string(),
            iteration,
            findings,
        })
        .await
        .map(|_| ())
    }

    /// Run a prepared run in the sandbox, recording its start, output and end.
    async fn execute(
        &self,
        node: Option<&str>,
        iteration: u32,
        kind: RunKind,
        prepared: PreparedRun,
    ) -> Result<(RunRecord, Option<Location>), TapeError> {
        let run_id = self.next_run.fetch_add(1, Ordering::SeqCst);
        self.record(Event::RunStarted {
            run_id,
            node: node.map(str::to_string),
            iteration,
            kind,
        })
        .await?;
        let mut spec = prepared.spec.clone();
        let log = self.dir.join("logs").join(format!("run-{run_id}.log"));
        spec.log_path = Some(log.clone());
        let (tx, mut rx) = mpsc::channel(256);
        let forward = async {
            let mut on_tape = 0usize;
            let mut dropped = 0u64;
            while let Some(chunk) = rx.recv().await {
                let chunk: crate::exec::OutputChunk = chunk;
                if on_tape >= OUTPUT_ON_TAPE {
                    dropped += chunk.text.len() as u64;
                    continue;
                }
                on_tape += chunk.text.len();
                self.record(Event::Output {
                    run_id,
                    stream: chunk.stream,
                    text: chunk.text,
                })
                .await?;
            }
            if dropped > 0 {
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "run {run_id} printed {dropped} more bytes than the tape keeps; the whole output is in {}",
                        log.display()
                    ),
                )
                .await?;
            }
            Ok::<(), TapeError>(())
        };
        let run = self.sandbox.run(spec, Some(tx), self.cancel.child_token());
        let (outcome, forwarded) = tokio::join!(run, forward);
        forwarded?;
        let (record, location) = match outcome {
            Ok(outcome) => runs::judge(&outcome, &prepared),
            Err(e) => {
                let (error_type, message) = match &e {
                    ExecError::Cancelled => ("Cancelled", "the run was cancelled".to_string()),
                    other => ("SandboxError", other.to_string()),
                };
                (
                    RunRecord {
                        passed: false,
                        exit_code: None,
                        signal: None,
                        limit_hit: None,
                        duration_ms: 0,
                        dropped_bytes: 0,
                        layers: Vec::new(),
                        tests_passed: None,
                        tests_failed: None,
                    },
                    Some(crate::exec::locate::from_limit(error_type, message)),
                )
            }
        };
        self.record(Event::RunFinished {
            run_id,
            record: record.clone(),
        })
        .await?;
        Ok((record, location))
    }

    // ---- the end ------------------------------------------------------------------------------

    /// Assemble the program, run it against every node's tests when every node
    /// passed, export it, and record the result.
    async fn finish(&self, cache_key: Option<&str>) -> Result<FinalResult, EngineError> {
        let (program, tests, nodes_total, nodes_passed, plan_error) = self
            .read(|s| {
                let passed = s
                    .nodes
                    .values()
                    .filter(|n| n.status == NodeStatus::Passed)
                    .count() as u32;
                (
                    runs::assemble(s).ok(),
                    runs::program_tests(s),
                    s.nodes.len() as u32,
                    passed,
                    s.plan_error.clone(),
                )
            })
            .await;
        let all_nodes_passed = nodes_total > 0 && nodes_passed == nodes_total;
        let mut program_passed = false;
        let mut program_note = String::new();
        if let Some(code) = &program {
            let joined = tests
                .iter()
                .map(|(file, t)| format!("# --- {file} ---\n{t}"))
                .collect::<Vec<_>>()
                .join("\n");
            self.record(Event::Program {
                code: code.clone(),
                tests: joined,
            })
            .await?;
            if all_nodes_passed && !self.cancel.is_cancelled() {
                let prepared = self
                    .read(|s| runs::program_run(s, code, self.limits()))
                    .await;
                let (record, location) = self.execute(None, 0, RunKind::Program, prepared).await?;
                program_passed = record.passed;
                if let Some(l) = location {
                    program_note = format!("; the assembled program failed: {l}");
                } else if let (Some(p), Some(f)) = (record.tests_passed, record.tests_failed) {
                    program_note = if f == 0 {
                        format!("; the assembled program passed all {p} tests")
                    } else {
                        format!("; the assembled program passed {p} tests, {f} failed")
                    };
                }
            }
        }
        let passed = all_nodes_passed && program_passed;
        let output_dir = self.export(program.as_deref(), &tests).await;
        let state = self.read(|s| s.clone()).await;
        if passed && let (Some(dir), Some(key)) = (&self.opts.cache_dir, cache_key) {
            let solved = Solved {
                specs: state.specs.clone(),
                tests: state
                    .nodes
                    .iter()
                    .filter_map(|(k, n)| n.tests.clone().map(|t| (k.clone(), t)))
                    .collect(),
                code: state
                    .nodes
                    .iter()
                    .filter_map(|(k, n)| n.code().map(|c| (k.clone(), c.to_string())))
                    .collect(),
            };
            if let Err(e) = cache::store(dir, key, &solved) {
                self.notice(
                    NoticeLevel::Warning,
                    format!("could not cache the solution in {}: {e}", dir.display()),
                )
                .await?;
            }
        }
        let summary = if self.cancel.is_cancelled() {
            format!("cancelled: {nodes_passed} of {nodes_total} functions passed before it stopped")
        } else if nodes_total == 0 {
            match plan_error {
                Some(e) => format!("no usable plan: {e}"),
                None => "no plan: the model call for the plan did not succeed".to_string(),
            }
        } else if passed && nodes_total == 1 {
            format!("the function passes its tests{program_note}")
        } else if passed {
            format!("all {nodes_total} functions pass their tests{program_note}")
        } else {
            let stuck: Vec<String> = state
                .nodes_in_order()
                .filter(|n| n.status != NodeStatus::Passed)
                .map(|n| format!("{} {}", n.spec.name, n.status.label()))
                .collect();
            format!(
                "{nodes_passed} of {nodes_total} functions pass ({}){program_note}",
                stuck.join(", ")
            )
        };
        let result = FinalResult {
            passed,
            nodes_passed,
            nodes_total,
            iterations: state.repair_iterations(),
            usage: state.usage,
            summary,
            output_dir: output_dir.map(|p| p.to_string_lossy().into_owned()),
        };
        self.record(Event::Finished {
            result: result.clone(),
        })
        .await?;
        self.rec.lock().await.flush()?;
        Ok(result)
    }

    /// The program, its tests (runnable with pytest too) and a report.
    async fn export(&self, program: Option<&str>, tests: &[(String, String)]) -> Option<PathBuf> {
        let program = program?;
        let dir = self
            .opts
            .output_dir
            .clone()
            .unwrap_or_else(|| self.dir.join("out"));
        let report = self.read(report_markdown).await;
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join(format!("{}.py", runs::PROGRAM)), program)?;
            for (file, text) in tests {
                std::fs::write(dir.join(file), text)?;
            }
            std::fs::write(dir.join("report.md"), &report)
        };
        match write() {
            Ok(()) => Some(dir),
            Err(e) => {
                let _ = self
                    .notice(
                        NoticeLevel::Error,
                        format!("could not write the program to {}: {e}", dir.display()),
                    )
                    .await;
                None
            }
        }
    }
}

/// Nodes to process, in topological order: all of them, or `only` and every
/// node that depends on them.
fn order_of(state: &State, only: Option<&BTreeSet<String>>) -> Vec<String> {
    let Ok(dag) = Dag::new(state.specs.clone()) else {
        return Vec::new();
    };
    let Some(only) = only else {
        return dag.topological_order();
    };
    let mut hit: BTreeSet<String> = only
        .iter()
        .filter(|n| state.nodes.contains_key(*n))
        .cloned()
        .collect();
    for n in only {
        if state.nodes.contains_key(n) {
            hit.extend(dag.impact(n));
        }
    }
    dag.topological_order()
        .into_iter()
        .filter(|n| hit.contains(n))
        .collect()
}

/// The session as a short report: each function, its iterations, its failures and reflections.
fn report_markdown(s: &State) -> String {
    use crate::session::state::HistoryEntry;
    let mut out = format!("# codeloop report\n\nTask: {}\n\n", s.task);
    out.push_str(&format!(
        "Model: {} ({}, {})\n\n",
        s.config.model, s.config.provider, s.config.endpoint
    ));
    for n in s.nodes_in_order() {
        out.push_str(&format!(
            "## {} ({}, {} iteration{})\n\n{}\n\n",
            n.spec.name,
            n.status.label(),
            n.iteration(),
            if n.iteration() == 1 { "" } else { "s" },
            n.spec.purpose
        ));
        for h in &s.history {
            match h {
                HistoryEntry::Failure {
                    node,
                    iteration,
                    location,
                } if *node == n.spec.name => {
                    out.push_str(&format!("- iteration {iteration} failed: {location}\n"))
                }
                HistoryEntry::Reflection {
                    node,
                    iteration,
                    text,
                    ..
                } if *node == n.spec.name => out.push_str(&format!(
                    "- reflection on iteration {iteration}: {}\n",
                    text.replace('\n', " ")
                )),
                _ => {}
            }
        }
        out.push('\n');
    }
    if let Some(f) = &s.finished {
        out.push_str(&format!("Result: {}\n", f.summary));
    }
    out
}
