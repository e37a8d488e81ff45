//! The TUI entry points: the workbench (default), `open` and `replay`.

use std::path::PathBuf;

use crate::config::Config;

/// How the workbench starts.
#[derive(Debug, Clone)]
pub enum UiMode {
    /// The live workbench; optionally with a task to start at once.
    Live { task: Option<String> },
    /// Review a saved tape read-only.
    Open { tape: PathBuf },
    /// Play a recorded tape back.
    Replay {
        tape: PathBuf,
        speed: f64,
        live: bool,
        paused: bool,
    },
}

pub async fn run(_mode: UiMode, _config: Config) -> anyhow::Result<i32> {
    anyhow::bail!("the workbench is not built yet")
}
