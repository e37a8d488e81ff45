//! A session's input files at its start: each described by what it is
//! (`codeloop-inputs`, bounded reads), and refused, before any model is
//! asked, when no run could read it or hold it: every run gets a copy in
//! its working directory, whose disk quota the inputs must fit.
//!
//! A file is described where a parser's crash cannot take codeloop down:
//! in a child process, codeloop's own binary started with
//! [`DESCRIBE_ARG`] under rlimits and a wall clock
//! (`codeloop_sandbox::contained`). The worst a file can do is not be
//! described: it is attached and copied all the same, and its description
//! says why ("could not be described: ...") and what to do. What no run
//! could read (missing, a folder, a FIFO ...) is refused here first, from
//! its metadata.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use codeloop_inputs::{InputDescription, Refusal};
use codeloop_sandbox::contained::{self, ContainedLimits, ContainedRun};
use codeloop_session::InputFile;
use serde::{Deserialize, Serialize};

/// The first argument that makes the `codeloop` binary describe the file
/// named after it and print the description as JSON (the child's side).
pub const DESCRIBE_ARG: &str = "__codeloop-describe";

/// The children codeloop starts of its own binary: the sandbox's helper
/// (`codeloop_sandbox::helper::HELPER_ARG`) and the describer of an input
/// file ([`DESCRIBE_ARG`]). `Some` with the exit code when this process is
/// one of them: a binary's `main` asks first, before anything else runs
/// (`codeloop`'s, and the engine's own `codeloop-engine-child`, which the
/// engine's tests run).
pub fn child_main() -> Option<ExitCode> {
    if codeloop_sandbox::helper::started_as_helper() {
        return Some(codeloop_sandbox::helper::main());
    }
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == DESCRIBE_ARG)
    {
        return Some(describe_main());
    }
    None
}

/// What describing one file may use: the parsers keep to a few MB
/// (`cargo bench --bench inputs`); the address space holds the binary's
/// own mapping besides.
pub fn describe_limits() -> ContainedLimits {
    ContainedLimits {
        address_space: 256 << 20,
        cpu_secs: 5,
        wall: Duration::from_secs(15),
        output_bytes: 1 << 20,
    }
}

/// What the child prints.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    Described {
        description: InputDescription,
        /// The child's own peak resident memory (its VmHWM, KiB), read
        /// just before it answers.
        peak_rss_kib: Option<u64>,
    },
    Refused {
        why: String,
        todo: String,
    },
}

/// This process's peak resident memory (VmHWM), in KiB.
fn own_peak_kib() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The child's side: describe the file named on the command line and print
/// the answer as JSON on standard output.
pub fn describe_main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(2) else {
        eprintln!("{DESCRIBE_ARG} needs a file (this mode is started by codeloop itself)");
        return ExitCode::from(2);
    };
    let answer = match codeloop_inputs::describe(Path::new(&path)) {
        Ok(description) => Answer::Described {
            description,
            peak_rss_kib: own_peak_kib(),
        },
        Err(r) => Answer::Refused {
            why: r.why,
            todo: r.todo,
        },
    };
    let Ok(json) = serde_json::to_vec(&answer) else {
        return ExitCode::from(2);
    };
    let mut out = std::io::stdout().lock();
    if out.write_all(&json).and_then(|()| out.flush()).is_err() {
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

/// What describing a file in its child cost (`cargo bench --bench inputs`).
#[derive(Debug, Clone)]
pub struct DescribeCost {
    /// The child's peak resident memory, as it said (0 when it did not).
    pub peak_rss_bytes: u64,
    pub cpu: Duration,
    pub wall: Duration,
}

/// `path` described in a child under `limits`: the description, or one
/// that says why there is none; a refusal for what no run could read.
pub fn describe_contained(
    path: &Path,
    limits: &ContainedLimits,
) -> Result<(InputDescription, Option<DescribeCost>), Refusal> {
    let file = codeloop_inputs::open(path)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    drop(file);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "input".into());
    let failed = |why: String| (InputDescription::undescribed(name.clone(), size, why), None);
    let explicit = codeloop_sandbox::SandboxOptions::from_env().helper;
    let binary = match contained::own_binary(explicit.as_deref()) {
        Ok(b) => b,
        Err(e) => {
            return Ok(failed(format!(
                "found no codeloop binary to describe it in: {e}"
            )));
        }
    };
    let args = [OsStr::new(DESCRIBE_ARG), path.as_os_str()];
    let run: ContainedRun = match contained::run(&binary, &args, limits) {
        Ok(run) => run,
        Err(e) => return Ok(failed(format!("its describing process {e}"))),
    };
    match serde_json::from_slice::<Answer>(&run.stdout) {
        Ok(Answer::Described {
            description: mut d,
            peak_rss_kib,
        }) => {
            // The name as codeloop sees it, not as the child said.
            d.name = name;
            let cost = DescribeCost {
                peak_rss_bytes: peak_rss_kib.unwrap_or(0) * 1024,
                cpu: run.cpu,
                wall: run.wall,
            };
            Ok((d, Some(cost)))
        }
        Ok(Answer::Refused { why, todo }) => Err(Refusal {
            path: path.to_path_buf(),
            why,
            todo,
        }),
        Err(e) => Ok(failed(format!(
            "its describing process gave no description ({e})"
        ))),
    }
}

/// What a run's working directory holds (its disk quota): the inputs
/// together must fit in it, with room to spare for what the program writes.
pub fn room() -> u64 {
    codeloop_sandbox::Limits::default().disk_bytes
}

/// Refuse `path` (of `size` bytes) when it and the `others` bytes already
/// attached would not fit in a run's working directory.
pub fn check_room(path: &Path, size: u64, others: u64) -> Result<(), Refusal> {
    codeloop_inputs::check_room(path, size, others, room())
}

/// The input files of a new session, described; the first that no run
/// could read or hold is refused.
pub fn describe_all(paths: &[std::path::PathBuf]) -> Result<Vec<InputFile>, Refusal> {
    let mut files: Vec<InputFile> = Vec::new();
    for path in paths {
        let file = describe(path)?;
        let others = files.iter().map(|f| f.size_bytes).sum();
        check_room(path, file.size_bytes, others)?;
        files.push(file);
    }
    Ok(files)
}

pub use codeloop_inputs::UNDESCRIBED_TODO;

/// An input file described by what it is, reading only what the
/// description needs (never the whole file), in a child process
/// ([`describe_contained`]).
pub fn describe(path: &Path) -> Result<InputFile, Refusal> {
    let (description, _) = describe_contained(path, &describe_limits())?;
    input_file(path, description)
}

/// The tape's `InputFile` of `path` and its description: where it was read
/// from, its size, and its first lines as sessions before descriptions had
/// them.
pub(crate) fn input_file(path: &Path, description: InputDescription) -> Result<InputFile, Refusal> {
    let abs = std::fs::canonicalize(path).map_err(|e| Refusal {
        path: path.to_path_buf(),
        why: format!("cannot be resolved to a full path ({e})"),
        todo: "check the path, or attach a copy of the file".into(),
    })?;
    // The first lines, as sessions before descriptions had them (a
    // template override may still show them): 2 KB read, no more.
    let mut head = Vec::with_capacity(2048);
    let read = std::fs::File::open(path).and_then(|f| f.take(2048).read_to_end(&mut head));
    let preview = match std::str::from_utf8(&head) {
        Ok(text) if read.is_ok() && !head.contains(&0) => {
            text.lines().take(8).collect::<Vec<_>>().join("\n")
        }
        _ => format!("(binary, {} bytes)", description.size_bytes),
    };
    Ok(InputFile {
        name: description.name.clone(),
        source_path: abs.to_string_lossy().into_owned(),
        size_bytes: description.size_bytes,
        preview,
        description: Some(description),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_larger_than_a_run_holds_are_refused_with_what_to_do() {
        let p = Path::new("/data/big.csv");
        assert!(check_room(p, 1 << 20, 0).is_ok());
        let r = check_room(p, 2 << 30, 0).unwrap_err();
        assert!(
            r.why
                .contains("is 2.0 GB: more than a run's working directory holds"),
            "{r}"
        );
        assert!(r.todo.contains("head -n 100000 /data/big.csv"), "{r}");
        let r = check_room(p, 200 << 20, 200 << 20).unwrap_err();
        assert!(r.why.contains("(400.0 MB with the other inputs)"), "{r}");
    }
}
