//! The uid: an ordinary user's runs keep the user's uid; codeloop as root
//! drops each run to an unprivileged uid of its own (no capabilities), so
//! the process limit counts only that run and its leftovers can be found.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use futures_util::future::BoxFuture;

use super::{
    Child, Layer, LayerImpl, LayerReport, RunPlan, Stage, helper_missing, read_step, step,
};
use crate::probes::{ProbeResult, marker_probe, run};
use crate::{Sandbox, SandboxOptions, sys};

pub(crate) struct Uid;

const SIGNAL_PARENT: &str = r#"import os, sys
try:
    os.kill(int(sys.argv[1]), 0)
    print("ESCAPED could signal codeloop")
except OSError as e:
    print(f"CONTAINED: {type(e).__name__}: {e.strerror}")
"#;

impl Sandbox {
    /// Root drops each run to a uid of its own: possible with the helper,
    /// and either namespaces (the interpreter is bind-mounted in reach) or
    /// an interpreter every user can reach.
    pub(crate) fn drop_uid(&self) -> bool {
        self.is_root
            && self.helper.is_some()
            && (self.has_namespaces() || self.probed(Layer::Uid).is_ok())
    }
}

impl LayerImpl for Uid {
    /// Whether a uid of the run's own can start the interpreter without
    /// namespaces (root only; an ordinary user's runs keep their uid).
    fn probe(&self, sandbox: &mut Sandbox, _options: &SandboxOptions) -> Result<(), String> {
        if !sandbox.is_root {
            return Ok(());
        }
        if let Some(missing) = helper_missing(sandbox) {
            return Err(missing);
        }
        if world_reachable(&sandbox.interp.paths) {
            Ok(())
        } else {
            Err("codeloop runs as root and the interpreter is not readable by other users, so runs stay root".into())
        }
    }

    fn report(&self, sandbox: &Sandbox) -> LayerReport {
        if !sandbox.is_root {
            LayerReport {
                name: "uid".into(),
                active: true,
                detail: "runs as the unprivileged user that runs codeloop".into(),
                advice: None,
            }
        } else if sandbox.drop_uid() {
            LayerReport {
                name: "uid".into(),
                active: true,
                detail: "codeloop runs as root: each run drops to its own unprivileged uid, with no capabilities".into(),
                advice: None,
            }
        } else {
            LayerReport {
                name: "uid".into(),
                active: false,
                detail: sandbox.probed(Layer::Uid).err().unwrap_or_default().to_string(),
                advice: Some("install bubblewrap (the interpreter is then mounted where an unprivileged uid reaches it), or set CODELOOP_PYTHON to a system interpreter such as /usr/bin/python3".into()),
            }
        }
    }

    fn stage(&self) -> Stage {
        Stage::Limit
    }

    fn plan(&self, _sandbox: &Sandbox, run: &RunPlan) -> Option<serde_json::Value> {
        run.run_uid.and_then(|uid| step(&uid))
    }

    fn apply(&self, step: &serde_json::Value, _child: &mut Child) -> Result<(), String> {
        sys::switch_to(read_step(Layer::Uid, step)?)
    }

    fn doctor<'a>(&'a self, sandbox: &'a Sandbox) -> BoxFuture<'a, Vec<ProbeResult>> {
        Box::pin(async move {
            let me = std::process::id().to_string();
            vec![marker_probe(
                "signal codeloop",
                run(sandbox, SIGNAL_PARENT, vec![me]).await,
                true,
            )]
        })
    }
}

/// True when an unprivileged user can reach every path (o+x on each ancestor).
fn world_reachable(paths: &[PathBuf]) -> bool {
    !paths.is_empty()
        && paths.iter().all(|p| {
            p.ancestors().skip(1).all(|dir| {
                std::fs::metadata(dir)
                    .map(|m| m.permissions().mode() & 0o001 != 0)
                    .unwrap_or(false)
            })
        })
}

/// Uids handed to runs when codeloop is root: one per run, so that the
/// process limit counts only that run's processes and its leftovers can be
/// found and killed. Far above the ranges distributions give to users.
pub(crate) fn next_run_uid() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const BASE: u32 = 1_900_000_000;
    let n = NEXT.fetch_add(1, Ordering::Relaxed) % 100_000;
    BASE + (std::process::id() % 1000) * 100_000 + n
}
