//! One sandboxed run: prepare a fresh working directory, start the helper
//! (inside bubblewrap when available), watch it (`watch`: the output, the
//! wall clock, the output cap and the disk quota, the whole group killed),
//! and say how the run ended.

mod watch;
mod workdir;

use std::path::Path;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::watch::{Streams, Watch, Watched};
pub(crate) use self::workdir::{chown_tree, make_removable, prepare_workdir, sweep_shm};
use super::diskwatch::DiskWatch;
use super::helper::{HELPER_ERROR_PREFIX, HELPER_FAILED};
use super::layers::uid::next_run_uid;
use super::plan::StatusPipe;
use super::{Captured, ExecError, LimitHit, Outcome, OutputChunk, RunSpec, Sandbox, Usage};

/// Why codeloop ended the run itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Wall,
    Output,
    Disk,
    Files,
    Cancel,
}

impl Sandbox {
    /// Run one program; output chunks are sent to `output` as they arrive.
    pub async fn run(
        &self,
        spec: RunSpec,
        output: Option<mpsc::Sender<OutputChunk>>,
        cancel: CancellationToken,
    ) -> Result<Outcome, ExecError> {
        let workdir = self.fresh_workdir("codeloop-run-")?;
        let root = workdir.path().to_path_buf();
        prepare_workdir(&root, &spec)?;
        self.import_policy.write_guard_for(&root, &spec)?;
        let run_uid = self.drop_uid().then(next_run_uid);
        if let Some(uid) = run_uid {
            chown_tree(&root, uid).map_err(ExecError::Workdir)?;
        }
        let log = match &spec.log_path {
            Some(p) => Some(workdir::open_log(p)?),
            None => None,
        };
        let (mut cmd, status_pipe) = self.command_reporting_status(&root, &spec, run_uid)?;
        let started = Instant::now();
        let mut child = cmd.spawn().map_err(|source| ExecError::Spawn {
            interpreter: self.interpreter.display().to_string(),
            source,
        })?;
        let mut streams =
            Streams::new(spec.limits.output_keep_bytes, spec.limits.output_bytes, log);
        let watch = self.watch_for(&spec, &root, &child, started, run_uid);
        let watched = watch
            .watch(&mut child, &mut streams, output.as_ref(), &cancel)
            .await?;
        if let Some(uid) = run_uid
            && !self.has_namespaces()
        {
            // No pid namespace: every process of the run's own uid goes.
            self.kill_uid(uid).await;
            sweep_shm(uid);
        }
        // Past the output cap, not even a cut character's replacement more.
        if let Some(tx) = &output
            && watched.stop != Some(Stop::Output)
        {
            for (stream, text) in streams.flush() {
                if !text.is_empty() {
                    let _ = tx.try_send(OutputChunk { stream, text });
                }
            }
        }
        let duration = watched.ended_at.unwrap_or_else(Instant::now) - started;
        let outcome = self.ended(&spec, watched, streams, status_pipe, duration)?;
        let collected = workdir::collect(&root, &spec.collect);
        let images = if spec.collect_images {
            super::images::read_images(&root, &spec.inputs)
        } else {
            Vec::new()
        };
        make_removable(&root);
        Ok(Outcome {
            collected,
            images,
            ..outcome
        })
    }

    /// Before anything of a run (or a fork server) starts: an interpreter,
    /// the sandbox allowed as it is, codeloop's own /proc entries out of
    /// reach, and a fresh directory (named from `prefix`) to work in.
    pub(crate) fn fresh_workdir(&self, prefix: &str) -> Result<tempfile::TempDir, ExecError> {
        if self.interpreter.as_os_str().is_empty() {
            return Err(ExecError::NoInterpreter);
        }
        self.refuse_unless_allowed()?;
        // Runs without a pid namespace share codeloop's uid: its /proc
        // entries (the environment, with API keys) must stay out of reach.
        super::sys::forbid_same_uid_inspection();
        tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .map_err(ExecError::Workdir)
    }

    /// What the started `child` is held to: its group, its wall clock,
    /// the disk watch and /dev/shm where there is no mount namespace.
    fn watch_for<'a>(
        &'a self,
        spec: &'a RunSpec,
        root: &'a Path,
        child: &tokio::process::Child,
        started: Instant,
        run_uid: Option<u32>,
    ) -> Watch<'a> {
        Watch {
            spec,
            root,
            pgid: child.id().map(|id| id as i32),
            // A wall clock too far out for the platform's clock is a year.
            deadline: tokio::time::Instant::from_std(
                started
                    .checked_add(spec.limits.wall)
                    .unwrap_or(started + Duration::from_secs(365 * 86_400)),
            ),
            disk_watch: if self.has_namespaces() {
                None
            } else {
                DiskWatch::new(root)
            },
            shm_uid: run_uid.filter(|_| !self.has_namespaces()),
            interpreter: &self.interpreter,
        }
    }

    /// How a watched run ended: its exit code or signal (as the helper saw
    /// them, where it reported), the limit it hit, its output and usage;
    /// or the error that kept it from running at all (the helper's or
    /// bubblewrap's own failure, cancelling).
    fn ended(
        &self,
        spec: &RunSpec,
        watched: Watched,
        streams: Streams,
        status_pipe: Option<StatusPipe>,
        duration: Duration,
    ) -> Result<Outcome, ExecError> {
        if watched.stop == Some(Stop::Cancel) {
            return Err(ExecError::Cancelled);
        }
        let Some(status) = watched.status else {
            return Err(ExecError::Cancelled);
        };
        let stdout = streams.stdout.finish();
        let stderr = streams.stderr.finish();
        let report = status_pipe.and_then(|p| p.status());
        let usage: Option<Usage> = report.and_then(|(_, usage)| usage).or(watched.wall_usage);
        let (exit_code, signal) = match report.map(|(raw, _)| raw) {
            Some(raw) if libc::WIFSIGNALED(raw) => (None, Some(libc::WTERMSIG(raw))),
            Some(raw) if libc::WIFEXITED(raw) => (Some(libc::WEXITSTATUS(raw)), None),
            _ => self.decode_status(status),
        };
        self.refuse_failed_start(exit_code, &stderr)?;
        let limit_hit = match watched.stop {
            Some(Stop::Wall) => Some(LimitHit::WallTimeout(spec.limits.wall)),
            Some(Stop::Output) => Some(LimitHit::Output(spec.limits.output_bytes)),
            Some(Stop::Disk) => Some(LimitHit::Disk(spec.limits.disk_bytes)),
            Some(Stop::Files) => Some(LimitHit::Files(spec.limits.max_files)),
            Some(Stop::Cancel) | None => classify(exit_code, signal, &stderr.text(), spec),
        };
        Ok(Outcome {
            exit_code,
            signal,
            limit_hit,
            duration,
            stdout,
            stderr,
            layers: self.active_layers(),
            collected: Vec::new(),
            images: Vec::new(),
            usage,
            judged: None,
        })
    }

    /// The helper's or bubblewrap's own failure to start the program, said
    /// as an error rather than as the program's exit.
    fn refuse_failed_start(
        &self,
        exit_code: Option<i32>,
        stderr: &Captured,
    ) -> Result<(), ExecError> {
        if exit_code == Some(HELPER_FAILED)
            && let Some(message) = stderr.head.strip_prefix(HELPER_ERROR_PREFIX)
        {
            return Err(ExecError::Sandbox(message.trim().to_string()));
        }
        if exit_code == Some(1)
            && self.bwrap().is_some()
            && let Some(message) = stderr.head.strip_prefix("bwrap: ")
        {
            return Err(ExecError::Sandbox(format!(
                "bubblewrap failed: {}",
                message.trim()
            )));
        }
        Ok(())
    }
}

/// A limit the kernel enforced, recognised by the signal or by Python's own words.
pub(crate) fn classify(
    exit_code: Option<i32>,
    signal: Option<i32>,
    stderr: &str,
    spec: &RunSpec,
) -> Option<LimitHit> {
    let limits = &spec.limits;
    match signal {
        Some(libc::SIGXCPU) => return Some(LimitHit::CpuTime(limits.cpu_secs)),
        Some(libc::SIGXFSZ) => return Some(LimitHit::FileSize(limits.file_size_bytes)),
        _ => {}
    }
    if exit_code == Some(0) {
        return None;
    }
    let last_lines: Vec<&str> = stderr.lines().rev().take(40).collect();
    let has = |needle: &str| last_lines.iter().any(|l| l.contains(needle));
    if has("MemoryError") || has("Cannot allocate memory") || has("cannot allocate memory") {
        Some(LimitHit::Memory(limits.memory_bytes))
    } else if has("[Errno 27] File too large") {
        Some(LimitHit::FileSize(limits.file_size_bytes))
    } else if has("[Errno 28] No space left on device") {
        // The working directory's tmpfs is the disk quota's size.
        Some(LimitHit::Disk(limits.disk_bytes))
    } else if has("BlockingIOError: [Errno 11]")
        || has("can't start new thread")
        || has("Resource temporarily unavailable")
    {
        Some(LimitHit::Processes(limits.max_processes))
    } else {
        None
    }
}
