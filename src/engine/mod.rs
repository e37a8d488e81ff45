//! The repair loop. Emits `Event`s, takes `Command`s; no terminal code.
//!
//! The contract with the views (TUI, headless runner):
//! `start(setup) -> EngineHandle`; the handle's `events` receiver yields every
//! `Record` the engine appended to the tape, in order; `commands` takes steering
//! commands; `done` resolves to the final result when the session ends.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::exec::Sandbox;
use crate::llm::ChatModel;
use crate::session::{Command, FinalResult, Record};

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
}

#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Code versions a node may have before it is given up (first try included).
    pub max_iterations: u32,
    /// Nodes run in parallel at most.
    pub workers: usize,
    /// Wall-clock limit of one run, in seconds.
    pub run_timeout_secs: u64,
    /// Tokens the whole session may use (prompt + completion); 0 = no limit.
    pub token_budget: u64,
    pub step_mode: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            max_iterations: 4,
            workers: 2,
            run_timeout_secs: 10,
            token_budget: 0,
            step_mode: false,
        }
    }
}

pub struct EngineHandle {
    pub events: mpsc::Receiver<Record>,
    pub commands: mpsc::Sender<Command>,
    pub done: JoinHandle<anyhow::Result<FinalResult>>,
}

/// Start a session: creates the session folder and its tape, spawns the loop
/// on the current tokio runtime, and returns the handle the views use.
pub fn start(_setup: EngineSetup) -> anyhow::Result<EngineHandle> {
    anyhow::bail!("the engine is not built yet")
}
