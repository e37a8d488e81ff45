//! A program of codeloop's own, run as a child under limits, for work on
//! untrusted data that could crash or exhaust the process doing it (an
//! input file described): codeloop's binary re-executed with a mode of its
//! own, in its own session and process group, dying with the thread that
//! started it, under rlimits (address space, CPU time, no file written, no
//! core dump, few descriptors) and a wall clock. Only its standard output
//! comes back, bounded. The worst the data can do is make it fail, and the
//! failure is said in words ([`ContainedError`]).

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::sys;

/// What the child may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainedLimits {
    /// Its address space (RLIMIT_AS), the binary's own mapping included.
    pub address_space: u64,
    pub cpu_secs: u64,
    pub wall: Duration,
    /// Standard output kept, at most; more is a failure.
    pub output_bytes: usize,
}

/// What the child gave back, and what it used. (Its peak memory is for
/// the child to say: `wait4`'s `ru_maxrss` counts the pages a fork copied
/// from the parent before the child's exec.)
#[derive(Debug, Clone)]
pub struct ContainedRun {
    pub stdout: Vec<u8>,
    pub cpu: Duration,
    pub wall: Duration,
}

/// Why the child gave nothing back, said of the child ("its process …").
#[derive(Debug, thiserror::Error)]
pub enum ContainedError {
    #[error("found no codeloop binary to run in: {0}")]
    NoBinary(String),
    #[error("could not be started ({0})")]
    Start(std::io::Error),
    #[error("took longer than the {:.3} s allowed", wall.as_secs_f64())]
    WallClock { wall: Duration },
    #[error("used more than the {secs} s of CPU time allowed")]
    Cpu { secs: u64 },
    #[error("needed more memory than the {mib} MiB allowed")]
    Memory { mib: u64 },
    #[error("crashed ({what})")]
    Crashed { what: String },
    #[error("failed: {message}")]
    Failed { message: String },
    #[error("said more than the {bytes} bytes kept")]
    TooMuchOutput { bytes: usize },
}

/// The binary that runs codeloop's own child programs: this one when it is
/// codeloop, else the sandbox helper found as a run finds it (`explicit`,
/// then a `codeloop` beside a test or bench binary).
pub fn own_binary(explicit: Option<&Path>) -> Result<PathBuf, String> {
    if explicit.is_none() && crate::helper::is_this_binary_the_helper() {
        return std::env::current_exe()
            .map_err(|e| format!("cannot find this program's file ({e})"));
    }
    crate::sandbox::find_helper(explicit)
}

/// Run `program args` under `limits` and return its standard output.
pub fn run(
    program: &Path,
    args: &[&OsStr],
    limits: &ContainedLimits,
) -> Result<ContainedRun, ContainedError> {
    let started = Instant::now();
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    sys::contain_before_exec(
        &mut cmd,
        [
            (libc::RLIMIT_AS, limits.address_space),
            (libc::RLIMIT_CPU, limits.cpu_secs.max(1)),
            (libc::RLIMIT_FSIZE, 0),
            (libc::RLIMIT_CORE, 0),
            (libc::RLIMIT_NOFILE, 32),
        ],
    );
    let mut child = cmd.spawn().map_err(ContainedError::Start)?;
    let pid = child.id() as i32;
    let keep = limits.output_bytes;
    let stdout = child.stdout.take().map(|out| {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let read = out.take(keep as u64 + 1).read_to_end(&mut kept);
            (kept, read.is_ok())
        })
    });
    let stderr = child.stderr.take().map(|err| {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let _ = err.take(8 << 10).read_to_end(&mut kept);
            kept
        })
    });
    let deadline = started + limits.wall;
    let mut pause = Duration::from_micros(200);
    let mut timed_out = false;
    let (status, usage) = loop {
        match sys::wait_pid(pid, true) {
            Ok(Some(done)) => break done,
            Ok(None) => {}
            Err(e) => return Err(ContainedError::Start(e)),
        }
        if Instant::now() >= deadline {
            timed_out = true;
            sys::kill_group(pid);
            match sys::wait_pid(pid, false) {
                Ok(Some(done)) => break done,
                Ok(None) => continue,
                Err(e) => return Err(ContainedError::Start(e)),
            }
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(10));
    };
    let (out, _) = stdout.and_then(|t| t.join().ok()).unwrap_or_default();
    let err = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    let err = String::from_utf8_lossy(&err);
    let cpu = usage.cpu;
    if timed_out {
        return Err(ContainedError::WallClock { wall: limits.wall });
    }
    if let Some(signal) = status.signal {
        let memory = err.contains("memory allocation of") || err.contains("out of memory");
        return Err(if memory {
            ContainedError::Memory {
                mib: limits.address_space >> 20,
            }
        } else if signal == libc::SIGXCPU
            || (signal == libc::SIGKILL && cpu.as_secs() >= limits.cpu_secs)
        {
            ContainedError::Cpu {
                secs: limits.cpu_secs,
            }
        } else if err.contains("has overflowed its stack") {
            ContainedError::Crashed {
                what: "its stack overflowed".into(),
            }
        } else {
            ContainedError::Crashed {
                what: format!("signal {signal}{}", last_line(&err)),
            }
        });
    }
    if status.code != Some(0) {
        return Err(ContainedError::Failed {
            message: format!(
                "exit status {}{}",
                status.code.unwrap_or(-1),
                last_line(&err)
            ),
        });
    }
    if out.len() > keep {
        return Err(ContainedError::TooMuchOutput { bytes: keep });
    }
    Ok(ContainedRun {
        stdout: out,
        cpu,
        wall: started.elapsed(),
    })
}

/// ": " and the last line of a child's standard error, if it said any.
fn last_line(err: &str) -> String {
    match err.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
        Some(l) => format!(
            ": {}",
            codeloop_protocol::sanitize::sanitize(&l.chars().take(200).collect::<String>())
        ),
        None => String::new(),
    }
}
