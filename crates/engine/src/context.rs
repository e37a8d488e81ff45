//! The shared context of one session's engine (`Core`), how an engine is
//! created and run, and the small helpers every step uses: reading the folded
//! state, recording an event, a status or a notice.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use super::cache;
use super::prompts::{PromptError, Prompts};
use super::recorder::Recorder;
use super::steering::{GateAnswer, Steering};
use super::{EngineOptions, EngineSetup, GivenPlan};
use codeloop_llm::ChatModel;
use codeloop_sandbox::Sandbox;
use codeloop_session::session_fs::Folder;
use codeloop_session::{
    Command, ConfigSummary, Event, FinalResult, InputFile, NodeStatus, NodeStatusEvent,
    NoticeEvent, NoticeLevel, Record, SessionStartedEvent, State, TAPE_VERSION, TapeError,
};

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
    /// An input file no run could read (missing, a folder, not readable,
    /// a FIFO or a device): refused before the first model call.
    #[error("the input file {0}")]
    Input(codeloop_inputs::Refusal),
    /// The session ended (its end is on the tape) but its results could
    /// not be written where they were to go: the result is not whole.
    #[error("{0}")]
    Output(String),
    /// A part of codeloop stopped on a bug of its own (a task panicked):
    /// the session stops, what happened before is on the tape.
    #[error(
        "codeloop stopped on an internal error ({0}): this is a bug; what happened before it is on the tape, and `codeloop resume` goes on from there"
    )]
    Internal(String),
}

/// A task that ends with the scope that holds it: when that scope ends,
/// by returning or by a panic's unwinding, the task is aborted, so nothing
/// it holds (the session's core, its tape) outlives it.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Why a step gave nothing to work with.
pub(crate) enum Stop {
    Skipped,
    /// The session was cancelled (its token is cancelled).
    Cancelled,
    Budget,
    /// The step failed: no reply that could be used (no code, asked
    /// again; cut off; a template that gave nothing), or no context for it.
    Failed,
    /// The model call itself failed after its retries (HTTP, the server's
    /// error): another call of the same kind would meet the same server,
    /// so no fallback that asks again follows (said in a notice).
    Model,
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

/// What every step of a session shares. Everything the engine decides on is
/// read from the state folded from the tape (`read`); the rest is its tools
/// and the plumbing that wakes tasks.
pub(crate) struct Core {
    pub(crate) tape: Recorder,
    pub(crate) model: Arc<dyn ChatModel>,
    pub(crate) sandbox: Arc<Sandbox>,
    pub(crate) prompts: Prompts,
    pub(crate) opts: EngineOptions,
    pub(crate) given: Option<GivenPlan>,
    /// The session's folder.
    pub(crate) dir: PathBuf,
    /// Stops model calls and runs under way. A `Cancel` command is on the tape;
    /// the token is how it reaches work already in flight, and how a failed
    /// tape or a departed workbench (which the tape cannot tell) stops the session.
    pub(crate) cancel: CancellationToken,
    pub(crate) steering: Steering,
    /// Wakes nodes waiting for their dependencies when a node ends its part of a pass.
    pub(crate) node_done: Notify,
}

/// What a session opens with: built when the engine is created (so a bad
/// input file or prompt override fails `start`), recorded when it runs.
pub(crate) enum Opening {
    /// A new session.
    Fresh {
        started: Event,
        /// Where a solved task is cached; None when this session is not cached.
        cache_key: Option<String>,
    },
    /// A recorded session going on (see `resume`).
    Continued {
        resumed: Event,
        /// The person's changes, acted on before any work (as if typed at once).
        commands: Vec<Command>,
    },
}

pub(crate) struct Engine {
    pub(super) core: Arc<Core>,
    pub(super) opening: Opening,
}

impl Engine {
    pub(crate) fn create(
        setup: EngineSetup,
        views: mpsc::Sender<Record>,
    ) -> Result<Engine, EngineError> {
        let dir = setup.session_dir.clone();
        make_session_dir(&dir)?;
        let inputs = super::inputs::describe_all(&setup.inputs).map_err(EngineError::Input)?;
        let mut prompts = Prompts::load(setup.prompt_overrides.as_deref())?;
        let started = session_started(&setup, &dir, inputs);
        if let Event::SessionStarted(SessionStartedEvent { config, .. }) = &started {
            prompts.set_python(config.python.as_deref().filter(|p| p.chosen));
        }
        let opening = Opening::Fresh {
            started,
            cache_key: cache_key(&setup, &prompts),
        };
        let tape = Recorder::create(&dir, views)?;
        Ok(Engine {
            core: Arc::new(Core {
                tape,
                model: setup.model,
                sandbox: setup.sandbox,
                prompts,
                opts: setup.options,
                given: setup.given,
                dir,
                cancel: CancellationToken::new(),
                steering: Steering::default(),
                node_done: Notify::new(),
            }),
            opening,
        })
    }

    pub(crate) async fn run(
        self,
        mut commands: mpsc::Receiver<Command>,
    ) -> anyhow::Result<FinalResult> {
        let core = self.core;
        let steer = core.clone();
        let steering = AbortOnDrop(tokio::spawn(async move {
            while let Some(cmd) = commands.recv().await {
                steer.steer(cmd).await;
            }
            // The workbench that steered this session is gone.
            if steer.opts.keep_alive {
                steer.cancel.cancel();
                steer.steering.release(GateAnswer::Cancel);
            }
        }));
        let result = core.session(self.opening).await;
        drop(steering);
        core.tape.flush().await?;
        Ok(result?)
    }
}

impl Core {
    pub(crate) async fn record(&self, event: Event) -> Result<Record, TapeError> {
        self.tape.append(event).await
    }

    /// `name`'s tests came with a given plan (a benchmark's): the model
    /// never rewrites them. Tests it wrote for a plan the person gave, it may.
    pub(crate) fn tests_given(&self, name: &str) -> bool {
        self.given
            .as_ref()
            .is_some_and(|g| g.tests.contains_key(name))
    }

    /// Read the state folded from the tape so far.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        self.tape.read(f)
    }

    /// Record `node`'s status, unless it already has it.
    pub(crate) async fn status(&self, node: &str, status: NodeStatus) -> Result<(), TapeError> {
        let node = node.to_string();
        self.tape
            .append_with(move |s| {
                let changed = s.nodes.get(&node).map(|n| n.status) != Some(status);
                let events = if changed {
                    vec![Event::NodeStatus(NodeStatusEvent { node, status })]
                } else {
                    Vec::new()
                };
                (events, ())
            })
            .await
            .map(|_| ())
    }

    pub(crate) async fn notice(
        &self,
        level: NoticeLevel,
        message: String,
    ) -> Result<(), TapeError> {
        self.record(Event::Notice(NoticeEvent { level, message }))
            .await
            .map(|_| ())
    }

    /// Give a notice unless one beginning with `opening` was given already.
    pub(crate) async fn notice_once(
        &self,
        level: NoticeLevel,
        opening: &'static str,
        message: String,
    ) -> Result<(), TapeError> {
        self.tape
            .append_with(move |s| {
                let events = if s.noticed(opening) {
                    Vec::new()
                } else {
                    vec![Event::Notice(NoticeEvent { level, message })]
                };
                (events, ())
            })
            .await
            .map(|_| ())
    }
}

fn session_started(setup: &EngineSetup, dir: &Path, inputs: Vec<InputFile>) -> Event {
    Event::SessionStarted(SessionStartedEvent {
        version: TAPE_VERSION,
        session_id: session_id_of(dir),
        started_at: now_rfc3339(),
        task: setup.task.clone(),
        inputs,
        config: config_summary(&setup.model, &setup.sandbox, &setup.options),
    })
}

/// What a session (or a segment of one) runs with, as the tape keeps it.
pub(crate) fn config_summary(
    model: &Arc<dyn ChatModel>,
    sandbox: &Sandbox,
    options: &EngineOptions,
) -> ConfigSummary {
    ConfigSummary {
        provider: model.provider().to_string(),
        model: model.model_name().to_string(),
        endpoint: model.endpoint().to_string(),
        max_iterations: options.max_iterations,
        workers: options.workers as u32,
        timeout_secs: options.run_timeout_secs,
        sandbox_layers: sandbox.active_layers(),
        step_mode: options.step_mode,
        // One probe of the interpreter's packages, for the prompts and the tape.
        python: sandbox.python_environment().ok().map(Box::new),
        policy: Some(options.policy.clone()),
    }
}

/// Create a session folder and its subfolders (logs, code, tests), each
/// private (0700, whatever the umask); one that is a link is refused
/// (`session_fs`).
pub(crate) fn make_session_dir(dir: &Path) -> Result<(), EngineError> {
    let err = |source| EngineError::SessionDir {
        path: dir.to_path_buf(),
        source,
    };
    let folder = Folder::create(dir).map_err(err)?;
    for sub in ["logs", "code", "tests"] {
        folder.sub(sub, true).map_err(err)?;
    }
    Ok(())
}

/// A session's id: the name of its folder.
pub(crate) fn session_id_of(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

pub(crate) fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn cache_key(setup: &EngineSetup, prompts: &Prompts) -> Option<String> {
    setup.options.cache_dir.as_ref()?;
    let model = &setup.model;
    // Scripted and demo replies are the point of a demo: never cached.
    if setup.given.is_some() || model.provider() != "openai-compatible" {
        return None;
    }
    let name = format!("{}@{}", model.model_name(), model.endpoint());
    Some(cache::key(
        &setup.task,
        &setup.inputs,
        &name,
        prompts.digest(),
    ))
}
