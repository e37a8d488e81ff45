//! Running untrusted Python: the sandbox, static checks, the test harness,
//! and turning tracebacks into locations.
//!
//! This module knows nothing of sessions, models or terminals.
//!
//! Architecture Invariant: generated code runs only here, and a sandbox
//! with fewer layers than full is never used silently: refused unless it
//! was chosen (`mode.rs`), then announced on every run. Every child dies
//! with its process group.
//!
//! How a run is contained (`Sandbox::run`): codeloop starts its own binary
//! in helper mode (`helper`), which applies each layer's step of its plan
//! (`layers/`, one module per layer): it unshares fresh mount, pid, net,
//! ipc, uts and cgroup namespaces itself (and a user namespace unless root:
//! `layers/namespaces`), builds a root with only the system directories,
//! the interpreter, five devices, a fresh /proc and one tmpfs of the disk
//! quota's size for the working directory, /tmp and /dev/shm; then sets
//! rlimits, drops to a per-run uid when root, applies Landlock and seccomp
//! and execs Python. Where the kernel refuses those namespaces to codeloop
//! but a system bubblewrap has them, bubblewrap builds the same root.
//! Without namespaces the sandbox is *reduced* (`mode`): runs are refused
//! unless the user chose it, and then seccomp and Landlock are hardened to
//! make up for the host being in view (the host's /dev/shm read-only, so
//! multiprocessing gets its semaphores from `semlock.py`; the process
//! limit is the user's tasks plus the run's share). The parent keeps the
//! wall clock, the output cap and the disk quota, and kills the process
//! group.
//! `Sandbox::probe(&SandboxOptions)` finds out which layers this machine
//! gives; a missing one is reported by `layer_reports`, never skipped
//! silently. `ForkServer` runs many short jobs from one warm interpreter
//! behind the same layers (evaluation). Every `unsafe` system call is in
//! `sys`.

#![deny(unsafe_code)]
#![warn(unreachable_pub)]

mod capture;
pub mod check;
pub mod contained;
mod diskwatch;
mod forkserver;
pub mod harness;
pub mod helper;
mod images;
mod layers;
pub mod locate;
mod mode;
mod packages;
mod plan;
mod policy;
pub mod probes;
pub mod procstatus;
mod run;
mod sandbox;
#[allow(unsafe_code)]
mod sys;
mod usage;

use codeloop_protocol::Stream;
pub use codeloop_protocol::python::{Package, PythonEnvironment};
pub use forkserver::{ForkServer, Prelude};
pub use layers::{Layer, LayerReport};
pub use mode::SandboxMode;
pub use policy::ImportPolicy;
pub use sandbox::{Sandbox, SandboxOptions};
pub use sys::is_root;
pub use usage::Usage;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Resource limits of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub wall: Duration,
    pub cpu_secs: u64,
    pub memory_bytes: u64,
    pub file_size_bytes: u64,
    pub max_processes: u64,
    pub open_files: u64,
    /// Output kept in memory per stream: this many bytes of head and of tail.
    pub output_keep_bytes: usize,
    /// Total bytes the run may write into its working directory (and into
    /// its private /tmp and /dev/shm when namespaces are active).
    pub disk_bytes: u64,
    /// Total bytes of output (both streams) before the run is stopped,
    /// counted as it comes out: invalid UTF-8 as the replacement characters
    /// it becomes.
    pub output_bytes: u64,
    /// Files and directories the run may make (each costs the host kernel
    /// memory, whatever its size): the inode limit of its tmpfs when
    /// namespaces are active, a count of the working directory's entries
    /// otherwise.
    #[serde(default = "default_max_files")]
    pub max_files: u64,
}

/// A run's files and directories at most, by default.
pub const DEFAULT_MAX_FILES: u64 = 16_384;

/// Entries of a run's working directory (or tmpfs) beyond `max_files`:
/// its own directories and the files the run is handed.
pub(crate) const OWN_ENTRIES: u64 = 64;

fn default_max_files() -> u64 {
    DEFAULT_MAX_FILES
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            wall: Duration::from_secs(10),
            cpu_secs: 10,
            memory_bytes: 1 << 30,
            file_size_bytes: 64 << 20,
            max_processes: 64,
            open_files: 256,
            output_keep_bytes: 64 << 10,
            disk_bytes: 256 << 20,
            output_bytes: 16 << 20,
            max_files: DEFAULT_MAX_FILES,
        }
    }
}

/// One run: files to write into a fresh working directory, and the script to start.
#[derive(Debug, Clone, Default)]
pub struct RunSpec {
    /// (relative path, contents), written into the working directory.
    pub files: Vec<(String, String)>,
    /// Files copied into the working directory under their file names.
    pub inputs: Vec<PathBuf>,
    /// The script to run, relative to the working directory.
    pub script: String,
    pub args: Vec<String>,
    pub limits: Limits,
    /// Where to write the full stdout/stderr stream, if anywhere.
    pub log_path: Option<PathBuf>,
    /// Files (relative to the working directory) read back after the run,
    /// e.g. the test harness's JSON report. Each is capped at 1 MiB.
    pub collect: Vec<String>,
    /// Start Python without `site` (`-S`): no site-packages, no `.pth`
    /// hooks, a faster start. For programs that need only the standard
    /// library (evaluation samples).
    pub no_site: bool,
    /// Run without the import policy's guard even where it is enforced:
    /// the sandbox's own programs (the static check, a fork server, which
    /// installs it in each child).
    pub unguarded: bool,
    /// The script installs the import policy's guard itself, once its own
    /// imports are done (the test harness: the policy is the generated
    /// code's, never codeloop's): where the policy is enforced, the guard
    /// is written beside it as `_codeloop_guard.py` and no bootstrap goes
    /// before it.
    pub guards_itself: bool,
    /// Image files (PNG, JPEG, GIF, SVG) the program leaves in its working
    /// directory are read back (`Outcome::images`), bounded.
    pub collect_images: bool,
}

/// A piece of output as it arrived (lossy UTF-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputChunk {
    pub stream: Stream,
    pub text: String,
}

/// Which limit ended a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitHit {
    WallTimeout(Duration),
    CpuTime(u64),
    Memory(u64),
    FileSize(u64),
    Output(u64),
    Disk(u64),
    Processes(u64),
    Files(u64),
}

/// Output kept of one stream: head and tail, with a count of what was dropped between them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Captured {
    pub head: String,
    pub tail: String,
    pub dropped_bytes: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub limit_hit: Option<LimitHit>,
    pub duration: Duration,
    pub stdout: Captured,
    pub stderr: Captured,
    /// Layers active for this run (names as in `LayerReport`).
    pub layers: Vec<String>,
    /// The files named in `RunSpec::collect` that existed after the run.
    pub collected: Vec<(String, Vec<u8>)>,
    /// The image files the program left (`RunSpec::collect_images`): path
    /// relative to the working directory, and the bytes.
    pub images: Vec<(String, Vec<u8>)>,
    /// CPU time and peak memory of the program, where they were measured
    /// (not for a run ended from outside: a wall-clock kill ends its
    /// measurer too).
    pub usage: Option<Usage>,
    /// What a fork server's judge answered for the job
    /// (`ForkServer::submit_judged`); None for every other run, and for a
    /// judged job whose judge had no answer.
    pub judged: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("cannot prepare the run's working directory: {0}")]
    Workdir(std::io::Error),
    #[error("cannot start {interpreter}: {source}")]
    Spawn {
        interpreter: String,
        source: std::io::Error,
    },
    #[error("no Python interpreter found: install python3 or set CODELOOP_PYTHON")]
    NoInterpreter,
    #[error("the run was cancelled")]
    Cancelled,
    #[error("{0}")]
    Refused(String),
    #[error(
        "the sandbox could not be set up: {0}\nRun `codeloop doctor` to see which layers work on this machine."
    )]
    Sandbox(String),
}

impl LimitHit {
    /// The limit in plain words, e.g. "wall-clock timeout of 10 s".
    pub fn describe(&self) -> String {
        match self {
            LimitHit::WallTimeout(d) => format!("wall-clock timeout of {}", seconds(*d)),
            LimitHit::CpuTime(s) => format!("CPU time limit of {s} s"),
            LimitHit::Memory(b) => format!("memory limit of {}", bytes(*b)),
            LimitHit::FileSize(b) => format!("file size limit of {}", bytes(*b)),
            LimitHit::Output(b) => format!("output limit of {}", bytes(*b)),
            LimitHit::Disk(b) => format!("disk quota of {} in the working directory", bytes(*b)),
            LimitHit::Processes(n) => format!("process limit of {n} processes and threads"),
            LimitHit::Files(n) => format!("file limit of {n} files and directories"),
        }
    }
}

fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

fn bytes(b: u64) -> String {
    const MIB: u64 = 1 << 20;
    if b >= MIB && b.is_multiple_of(MIB) {
        format!("{} MiB", b / MIB)
    } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_described_in_plain_words() {
        assert_eq!(
            LimitHit::WallTimeout(Duration::from_secs(10)).describe(),
            "wall-clock timeout of 10 s"
        );
        assert_eq!(
            LimitHit::Memory(1 << 30).describe(),
            "memory limit of 1024 MiB"
        );
        assert_eq!(
            LimitHit::Output(1500).describe(),
            "output limit of 1500 bytes"
        );
    }
}
