//! Resource limits: CPU time, address space, file size, open files, no
//! core dumps, and the process count where it holds (`process_limit_holds`).

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::{Child, Layer, LayerImpl, LayerReport, RunPlan, Stage, read_step, step};
use crate::probes::{ProbeResult, cpu_probe, limit_probe, run, run_within};
use crate::{LimitHit, Limits, Sandbox, SandboxOptions, sys};

pub(crate) struct Rlimits;

/// The limits the helper sets.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Plan {
    pub cpu_secs: u64,
    pub address_space: u64,
    pub file_size: u64,
    pub open_files: u64,
    /// `None` where the count would include processes outside the run
    /// (root without a uid to drop to): then it is left as it is.
    pub processes: Option<u64>,
}

const FORK_BOMB: &str = "import os\nwhile True:\n    os.fork()\n";
const MEMORY_BOMB: &str = "x = []\nwhile True:\n    x.append(bytearray(32 << 20))\n";
const CPU_SPIN: &str = "import resource\nprint('CPU limit', resource.getrlimit(resource.RLIMIT_CPU)[0], flush=True)\nwhile True:\n    pass\n";

impl Sandbox {
    /// RLIMIT_NPROC counts every process of the uid (of the user namespace,
    /// with namespaces), and root ignores it: it bounds a run that has a
    /// uid or a user namespace of its own to the run's processes; for an
    /// ordinary user without namespaces it is set to the user's processes
    /// when the run starts plus the run's share, which bounds the user's
    /// total (a fork bomb stops there).
    pub fn process_limit_holds(&self) -> bool {
        !self.is_root || self.drop_uid()
    }
}

/// The limits of one run.
pub(crate) fn for_run(sandbox: &Sandbox, limits: &Limits) -> Plan {
    Plan {
        cpu_secs: limits.cpu_secs.max(1),
        address_space: limits.memory_bytes,
        file_size: limits.file_size_bytes,
        open_files: limits.open_files,
        processes: if sandbox.is_root {
            sandbox.drop_uid().then_some(limits.max_processes)
        } else if sandbox.has_namespaces() {
            Some(limits.max_processes)
        } else {
            // RLIMIT_NPROC counts every task of the user: allow what the
            // user runs now, and the run's share on top of it. One more:
            // the helper's process that waits for the program and measures it.
            Some(
                tasks_of_uid(sys::uid())
                    .saturating_add(limits.max_processes)
                    .saturating_add(1),
            )
        },
    }
}

impl LayerImpl for Rlimits {
    fn probe(&self, _sandbox: &mut Sandbox, _options: &SandboxOptions) -> Result<(), String> {
        Ok(())
    }

    fn report(&self, sandbox: &Sandbox) -> LayerReport {
        let nproc_holds = sandbox.process_limit_holds();
        LayerReport {
            name: "rlimits".into(),
            active: true,
            detail: if nproc_holds && !sandbox.is_root && !sandbox.has_namespaces() {
                "CPU time, address space, file size, open files, no core dumps; the process count is your user's processes when a run starts plus the run's share (without a user namespace the kernel counts every process of your user)".into()
            } else if nproc_holds {
                "CPU time, address space, file size, open files, process count, no core dumps"
                    .into()
            } else {
                "CPU time, address space, file size, open files, no core dumps; the process count does NOT hold (running as root without a uid to drop to)".into()
            },
            advice: (!nproc_holds).then(|| "install bubblewrap so the process limit holds".into()),
        }
    }

    fn stage(&self) -> Stage {
        Stage::Limit
    }

    fn plan(&self, sandbox: &Sandbox, run: &RunPlan) -> Option<serde_json::Value> {
        step(&for_run(sandbox, run.limits))
    }

    fn apply(&self, step: &serde_json::Value, _child: &mut Child) -> Result<(), String> {
        set_rlimits(&read_step(Layer::Rlimits, step)?)
    }

    fn doctor<'a>(&'a self, sandbox: &'a Sandbox) -> BoxFuture<'a, Vec<ProbeResult>> {
        Box::pin(async move {
            let mut results = Vec::new();
            if sandbox.process_limit_holds() {
                results.push(limit_probe(
                    "fork bomb",
                    run(sandbox, FORK_BOMB, vec![]).await,
                    |h| matches!(h, LimitHit::Processes(_)),
                ));
            } else {
                // Unbounded, it would exhaust this machine until the wall clock.
                results.push(ProbeResult {
                    name: "fork bomb".into(),
                    hostile: true,
                    ok: false,
                    detail: "not tried: no process limit holds here, so nothing would contain it"
                        .into(),
                });
            }
            // Filling a run's memory (1 GiB by default) is page faults, CPU
            // time that a loaded machine stretches past the probes' 2 s
            // (measured: "stopped by the CPU time limit instead" with the
            // load at 6): time enough that only the memory limit stops it.
            let filling = |l: &mut Limits| {
                l.cpu_secs = 8;
                l.wall = std::time::Duration::from_secs(16);
            };
            results.push(limit_probe(
                "memory bomb",
                run_within(sandbox, MEMORY_BOMB, vec![], filling).await,
                |h| matches!(h, LimitHit::Memory(_)),
            ));
            results.push(cpu_probe(run(sandbox, CPU_SPIN, vec![]).await));
            results
        })
    }
}

fn set_rlimits(r: &Plan) -> Result<(), String> {
    // The CPU soft limit sends SIGXCPU (which ends Python); the hard limit a
    // second later is the SIGKILL backstop.
    let limits = [
        (
            libc::RLIMIT_CPU,
            r.cpu_secs,
            r.cpu_secs.saturating_add(1),
            "CPU time",
        ),
        (
            libc::RLIMIT_AS,
            r.address_space,
            r.address_space,
            "address space",
        ),
        (libc::RLIMIT_FSIZE, r.file_size, r.file_size, "file size"),
        (
            libc::RLIMIT_NOFILE,
            r.open_files,
            r.open_files,
            "open files",
        ),
        (libc::RLIMIT_CORE, 0, 0, "core dumps"),
    ];
    let nproc = r.processes.map(|n| (libc::RLIMIT_NPROC, n, n, "processes"));
    for (resource, soft, hard, what) in limits.into_iter().chain(nproc) {
        // An ordinary user cannot raise a hard limit: never ask for more
        // than the current one.
        let hard = (hard as libc::rlim_t).min(sys::hard_rlimit(resource));
        sys::set_rlimit(resource, (soft as libc::rlim_t).min(hard), hard)
            .map_err(|e| format!("cannot limit {what}: {e}"))?;
    }
    Ok(())
}

/// Tasks (threads included, as RLIMIT_NPROC counts them) whose real uid is
/// `uid`, among those this process can see.
fn tasks_of_uid(uid: u32) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut tasks = 0u64;
    for entry in entries.flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        let Some(status) = crate::procstatus::ProcStatus::read(&entry.path()) else {
            continue;
        };
        if status.number("Uid:") == Some(u64::from(uid)) {
            tasks += status.number("Threads:").unwrap_or(1);
        }
    }
    tasks
}
