//! The subcommands of the `codeloop` binary. Each file owns its clap `Args`
//! and an entry point `run(args, config) -> anyhow::Result<i32>` (the exit code).

pub mod bench;
pub mod docs;
pub mod doctor;
pub mod eval;
pub mod exec;
pub mod export;
pub mod loop_args;
pub mod model;
pub mod models;
pub mod python;
pub mod resume;
pub mod run;
pub mod sessions;
pub mod ui;

use std::io::IsTerminal;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use codeloop_sandbox::{Sandbox, SandboxOptions};

/// The sandbox for a command that runs generated code (`run`, `bench`,
/// `resume`): probed, refused with what to do when only a reduced sandbox
/// nobody chose is available, and announced on stderr (in red on a
/// terminal) whenever it is not full.
pub(crate) fn sandbox_for_generated_code(options: &SandboxOptions) -> anyhow::Result<Sandbox> {
    let sandbox = Sandbox::probe(options);
    if let Some(problem) = sandbox.interpreter_problem() {
        anyhow::bail!("{problem}");
    }
    sandbox.refuse_unless_allowed()?;
    let warning = if std::io::stderr().is_terminal() {
        sandbox.warning_red()
    } else {
        sandbox.warning()
    };
    if let Some(warning) = warning {
        eprintln!("codeloop: {warning}");
    }
    Ok(sandbox)
}

/// The sandbox for a person's own programs (`exec`, `eval`): probed off
/// the async threads, and refused only when it cannot run Python.
pub(crate) async fn probe_for_programs(options: SandboxOptions) -> anyhow::Result<Sandbox> {
    let sandbox = tokio::task::spawn_blocking(move || Sandbox::probe(&options))
        .await
        .context("the sandbox probe did not finish")?;
    if let Some(problem) = sandbox.interpreter_problem() {
        anyhow::bail!("{problem}");
    }
    Ok(sandbox)
}

/// A cancellation Ctrl-C gives, listened for until the handle is aborted.
pub(crate) fn cancel_on_ctrl_c() -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    let listening = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    (cancel, listening)
}

/// A count that must be at least 1 (0 is refused, as everywhere, never
/// quietly made 1).
pub(crate) fn at_least_one(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("it must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}
