//! The sandbox helper: codeloop re-executes itself as this helper (inside
//! bubblewrap's namespaces when those are used; `codeloop` dispatches
//! [`HELPER_ARG`] to [`main`], and so does the crate's own binary,
//! `codeloop-sandbox-helper`, which the crate's tests run); it applies
//! each layer's step of its plan (`layers::apply`: descriptors and
//! namespaces, then resource limits and the uid, then Landlock and
//! seccomp), and then execs the interpreter. Doing this in a fresh
//! single-threaded process (rather than a `pre_exec` closure of a tokio
//! process) keeps the restrictions off codeloop itself and off any of its
//! threads.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

use serde::{Deserialize, Serialize};

use super::layers::namespaces::enter::report_status;
use super::layers::{self, Child, Layer, Stage};
use super::sys;

/// The first argument that turns the `codeloop` binary into the helper.
pub const HELPER_ARG: &str = "__codeloop-sandbox-helper";

/// Whether this process was started as the helper (its first argument is
/// [`HELPER_ARG`]): checked by a binary's `main` before anything else runs.
pub fn started_as_helper() -> bool {
    std::env::args_os().nth(1).is_some_and(|a| a == HELPER_ARG)
}

/// Set by the `codeloop` binary's `main` (and the helper binaries'): the
/// running program is the helper, whatever its file is called (a renamed
/// or copied binary too).
/// Test and bench binaries leave it unset: run with `HELPER_ARG` they would
/// not act as the helper.
static THIS_BINARY_IS_THE_HELPER: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Called by the `codeloop` binary before anything else runs.
pub fn this_binary_is_the_helper() {
    THIS_BINARY_IS_THE_HELPER.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether `this_binary_is_the_helper` was called.
pub fn is_this_binary_the_helper() -> bool {
    THIS_BINARY_IS_THE_HELPER.load(std::sync::atomic::Ordering::Relaxed)
}

/// Exit code of the helper when it could not set the sandbox up; its stderr
/// then starts with [`HELPER_ERROR_PREFIX`].
pub const HELPER_FAILED: i32 = 125;
pub const HELPER_ERROR_PREFIX: &str = "codeloop sandbox helper: ";

/// What the helper does before it execs `argv`: each layer's step
/// (`layers::LayerImpl::plan`), applied stage by stage.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HelperPlan {
    pub workdir: PathBuf,
    pub argv: Vec<OsString>,
    /// Each layer's step, as its `plan` wrote it, in the registry's order.
    pub steps: Vec<(Layer, serde_json::Value)>,
    /// Where the program's raw wait status and its figures (`Usage`) are
    /// written for codeloop (bubblewrap's init reports a kill as 128 +
    /// signal, and only the program's parent can measure it): by the
    /// namespace's init, or by the helper, which then forks and waits.
    #[serde(default)]
    pub status_fd: Option<i32>,
}

/// Entry point when the binary was started with [`HELPER_ARG`]: never
/// returns on success (the process becomes the interpreter).
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    match args.get(2).and_then(|a| a.to_str()) {
        Some("--probe") => {
            println!("codeloop sandbox helper {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Some("--kill-uid") => {
            return match args.get(3).and_then(|a| a.to_str()).map(str::parse::<u32>) {
                Some(Ok(uid)) if uid != 0 => match kill_uid(uid) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => fail(&e),
                },
                _ => fail("--kill-uid needs a non-zero uid"),
            };
        }
        _ => {}
    }
    let plan = match args.get(2).map(|a| a.clone().into_encoded_bytes()) {
        Some(json) => match serde_json::from_slice::<HelperPlan>(&json) {
            Ok(p) => p,
            Err(e) => return fail(&format!("the plan is not valid JSON: {e}")),
        },
        None => return fail("no plan given (this mode is started by codeloop itself)"),
    };
    match apply_and_exec(&plan) {
        Ok(never) => match never {},
        Err(message) => fail(&message),
    }
}

/// Become `uid` and kill every process of that uid: a run's leftovers when
/// there is no pid namespace to end them.
fn kill_uid(uid: u32) -> Result<(), String> {
    sys::switch_to(uid)?;
    // kill(-1) reaches every process this uid may signal: the run's own.
    // Repeat while a fork bomb may still be producing new ones.
    for _ in 0..50 {
        if !sys::kill_every_reachable() {
            return Ok(());
        }
    }
    Ok(())
}

fn fail(message: &str) -> ExitCode {
    eprintln!("{HELPER_ERROR_PREFIX}{message}");
    ExitCode::from(HELPER_FAILED as u8)
}

enum Never {}

fn apply_and_exec(plan: &HelperPlan) -> Result<Never, String> {
    let mut child = Child {
        workdir: plan.workdir.clone(),
        status_fd: plan.status_fd,
    };
    // Descriptors, namespaces: may return in a forked process, the one
    // that is to become the program.
    layers::apply(Stage::Enter, &plan.steps, &mut child)?;
    if let Some(fd) = child.status_fd.take() {
        // No layer's init reports the status: this process forks, waits for
        // the program and reports; returns in the program's process.
        report_status(fd)?;
    }
    std::env::set_current_dir(&child.workdir)
        .map_err(|e| format!("cannot enter {}: {e}", child.workdir.display()))?;
    layers::apply(Stage::Limit, &plan.steps, &mut child)?;
    // Die with codeloop (set after the uid change, which clears it).
    sys::die_with_parent();
    sys::no_new_privs().map_err(|e| format!("cannot set no_new_privs: {e}"))?;
    layers::apply(Stage::Confine, &plan.steps, &mut child)?;
    let Some((program, args)) = plan.argv.split_first() else {
        return Err("nothing to run".into());
    };
    let err = std::process::Command::new(program).args(args).exec();
    Err(format!("cannot start {}: {err}", program.to_string_lossy()))
}
