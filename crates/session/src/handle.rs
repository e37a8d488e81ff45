//! A live session as its views hold it: the engine's records as it writes
//! them, the commands a person sends back, and its end. The engine makes
//! one (`codeloop_engine::start`, `resume`, `fork`); the workbench and the
//! headless runner read from it, so a view needs the session's types and
//! this handle, never the engine itself.

use std::path::PathBuf;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::event::{Command, FinalResult, Record};

/// The contract between the engine and a view of its live session.
pub struct EngineHandle {
    /// Every record the engine appended to the tape, in order.
    pub events: mpsc::Receiver<Record>,
    /// Steering commands (bounded: a full channel says so to the sender).
    pub commands: mpsc::Sender<Command>,
    /// The final result once the session ends (its error, if it failed).
    pub done: JoinHandle<anyhow::Result<FinalResult>>,
    /// The session's folder.
    pub session_dir: PathBuf,
}
