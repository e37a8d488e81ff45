//! One sandboxed run: prepare a fresh working directory, start the helper
//! (inside bubblewrap when available), stream and bound the output, enforce
//! the wall clock, the output cap and the disk quota, kill the whole group,
//! and classify how the run ended.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::capture::{HeadTail, Utf8Chunker};
use super::diskwatch::DiskWatch;
use super::helper::{HELPER_ERROR_PREFIX, HELPER_FAILED};
use super::layers::uid::next_run_uid;
use super::{ExecError, LimitHit, Outcome, OutputChunk, RunSpec, Sandbox, Stream};

/// Each collected file is read up to this size.
const COLLECT_CAP: u64 = 1 << 20;
/// How often the working directory's size is measured while a run lasts.
const DISK_POLL: Duration = Duration::from_millis(100);
/// The least time between two measurements that inotify asks for.
const DISK_WATCH_GAP: Duration = Duration::from_millis(2);
/// After the program exits, how long its pipes may stay open (orphans).
const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// The working directory is never walked past this many entries.
const DISK_WALK_MAX_ENTRIES: u64 = 100_000;

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
        if self.interpreter.as_os_str().is_empty() {
            return Err(ExecError::NoInterpreter);
        }
        self.refuse_unless_allowed()?;
        // Runs without a pid namespace share codeloop's uid: its /proc
        // entries (the environment, with API keys) must stay out of reach.
        super::sys::forbid_same_uid_inspection();
        let workdir = tempfile::Builder::new()
            .prefix("codeloop-run-")
            .tempdir()
            .map_err(ExecError::Workdir)?;
        let root = workdir.path().to_path_buf();
        prepare_workdir(&root, &spec)?;
        let run_uid = self.drop_uid().then(next_run_uid);
        if let Some(uid) = run_uid {
            chown_tree(&root, uid).map_err(ExecError::Workdir)?;
        }
        let mut log = match &spec.log_path {
            Some(p) => Some(open_log(p)?),
            None => None,
        };
        let (mut cmd, status_pipe) = self.command_reporting_status(&root, &spec, run_uid)?;
        let started = Instant::now();
        let mut child = cmd.spawn().map_err(|source| ExecError::Spawn {
            interpreter: self.interpreter.display().to_string(),
            source,
        })?;
        let pgid = child.id().map(|id| id as i32);

        let (chunk_tx, mut chunk_rx) = mpsc::channel::<(Stream, Vec<u8>)>(32);
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(tokio::spawn(pump(out, Stream::Stdout, chunk_tx.clone())));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(tokio::spawn(pump(err, Stream::Stderr, chunk_tx.clone())));
        }
        drop(chunk_tx);

        let keep = spec.limits.output_keep_bytes;
        let mut stdout = HeadTail::new(keep);
        let mut stderr = HeadTail::new(keep);
        let mut decoders = [Utf8Chunker::default(), Utf8Chunker::default()];
        let mut total_output: u64 = 0;
        // A wall clock too far out for the platform's clock is a year.
        let deadline = tokio::time::Instant::from_std(
            started
                .checked_add(spec.limits.wall)
                .unwrap_or(started + Duration::from_secs(365 * 86_400)),
        );
        // Without a tmpfs of the quota's size (no mount namespace), every
        // change in the working directory has its size measured at once.
        let mut disk_watch = if self.has_namespaces() {
            None
        } else {
            DiskWatch::new(&root)
        };
        // Without namespaces a run of its own uid may write the host's
        // /dev/shm: what it makes there counts as its files too.
        let shm_uid = run_uid.filter(|_| !self.has_namespaces());
        let mut last_measured = Instant::now();
        let mut disk_tick = tokio::time::interval(DISK_POLL);
        disk_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        disk_tick.reset();

        let mut stop: Option<Stop> = None;
        let mut wall_usage = None;
        let mut status: Option<std::process::ExitStatus> = None;
        let mut ended_at: Option<Instant> = None;
        let mut streams_open = true;
        let mut drain_deadline = tokio::time::Instant::now() + Duration::from_secs(3600);
        let kill = |pgid: Option<i32>| {
            if let Some(pg) = pgid {
                super::sys::kill_group(pg);
            }
        };

        loop {
            if status.is_some() && !streams_open {
                break;
            }
            tokio::select! {
                biased;
                _ = cancel.cancelled(), if stop.is_none() && status.is_none() => {
                    stop = Some(Stop::Cancel);
                    kill(pgid);
                }
                _ = tokio::time::sleep_until(deadline), if stop.is_none() && status.is_none() => {
                    stop = Some(Stop::Wall);
                    // Its measurer goes with it: what it used so far, first.
                    wall_usage = pgid.and_then(super::usage::of_tree);
                    kill(pgid);
                }
                st = child.wait(), if status.is_none() => {
                    ended_at = Some(Instant::now());
                    // Orphans left in the group go with the program.
                    kill(pgid);
                    status = Some(st.map_err(|source| ExecError::Spawn {
                        interpreter: self.interpreter.display().to_string(),
                        source,
                    })?);
                    drain_deadline = tokio::time::Instant::now() + DRAIN_GRACE;
                }
                chunk = chunk_rx.recv(), if streams_open => {
                    let Some((stream, bytes)) = chunk else {
                        streams_open = false;
                        continue;
                    };
                    let idx = match stream {
                        Stream::Stdout => { stdout.push(&bytes); 0 }
                        Stream::Stderr => { stderr.push(&bytes); 1 }
                    };
                    if let Some(file) = log.as_mut() {
                        // The log is a convenience: a full disk must not end the run.
                        let _ = file.write_all(&bytes);
                    }
                    // Counted as it comes out: an invalid byte becomes a
                    // three-byte replacement character, and the cap holds
                    // what a reader is handed (cut at a character).
                    let mut text = decoders[idx].decode(&bytes);
                    let budget = spec.limits.output_bytes.saturating_sub(total_output);
                    total_output += (text.len() as u64).max(bytes.len() as u64);
                    if text.len() as u64 > budget {
                        let mut cut = usize::try_from(budget).unwrap_or(usize::MAX);
                        while !text.is_char_boundary(cut) {
                            cut -= 1;
                        }
                        text.truncate(cut);
                    }
                    if let Some(tx) = &output
                        && !text.is_empty()
                    {
                        tokio::select! {
                            _ = tx.send(OutputChunk { stream, text }) => {}
                            _ = tokio::time::sleep_until(deadline) => {}
                            _ = cancel.cancelled() => {}
                        }
                    }
                    // Past the cap even after the program ended (its last
                    // output still draining): what was cut is said.
                    if total_output > spec.limits.output_bytes && stop.is_none() {
                        stop = Some(Stop::Output);
                        if status.is_none() {
                            kill(pgid);
                        }
                    }
                }
                _ = async {
                    match disk_watch.as_mut() {
                        Some(w) => w.changed(&root).await,
                        None => std::future::pending().await,
                    }
                }, if stop.is_none() && status.is_none() => {
                    // A burst of writes is measured every DISK_WATCH_GAP at
                    // most; its end is the poll's.
                    if last_measured.elapsed() >= DISK_WATCH_GAP {
                        last_measured = Instant::now();
                        if let Some(over) = over_quota(&root, &spec.limits, shm_uid) {
                            stop = Some(over);
                            kill(pgid);
                        }
                    }
                }
                _ = disk_tick.tick(), if stop.is_none() && status.is_none() => {
                    if let Some(over) = over_quota(&root, &spec.limits, shm_uid) {
                        stop = Some(over);
                        kill(pgid);
                    }
                }
                _ = tokio::time::sleep_until(drain_deadline), if status.is_some() && streams_open => {
                    // Something outside the group still holds the pipes open.
                    for r in &readers {
                        r.abort();
                    }
                    streams_open = false;
                }
            }
        }
        if let Some(uid) = run_uid
            && !self.has_namespaces()
        {
            // No pid namespace: every process of the run's own uid goes.
            self.kill_uid(uid).await;
            sweep_shm(uid);
        }
        let duration = ended_at.unwrap_or_else(Instant::now) - started;
        // Past the output cap, not even a cut character's replacement more.
        if let Some(tx) = &output
            && stop != Some(Stop::Output)
        {
            for (idx, stream) in [(0, Stream::Stdout), (1, Stream::Stderr)] {
                let text = decoders[idx].flush();
                if !text.is_empty() {
                    let _ = tx.try_send(OutputChunk { stream, text });
                }
            }
        }
        if stop == Some(Stop::Cancel) {
            return Err(ExecError::Cancelled);
        }
        let Some(status) = status else {
            return Err(ExecError::Cancelled);
        };
        let stdout = stdout.finish();
        let stderr = stderr.finish();
        let report = status_pipe.and_then(|p| p.status());
        let usage = report.and_then(|(_, usage)| usage).or(wall_usage);
        let (exit_code, signal) = match report.map(|(raw, _)| raw) {
            Some(raw) if libc::WIFSIGNALED(raw) => (None, Some(libc::WTERMSIG(raw))),
            Some(raw) if libc::WIFEXITED(raw) => (Some(libc::WEXITSTATUS(raw)), None),
            _ => self.decode_status(status),
        };
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
        let limit_hit = match stop {
            Some(Stop::Wall) => Some(LimitHit::WallTimeout(spec.limits.wall)),
            Some(Stop::Output) => Some(LimitHit::Output(spec.limits.output_bytes)),
            Some(Stop::Disk) => Some(LimitHit::Disk(spec.limits.disk_bytes)),
            Some(Stop::Files) => Some(LimitHit::Files(spec.limits.max_files)),
            Some(Stop::Cancel) | None => classify(exit_code, signal, &stderr.text(), &spec),
        };
        let collected = collect(&root, &spec.collect);
        let images = if spec.collect_images {
            super::images::read_images(&root)
        } else {
            Vec::new()
        };
        make_removable(&root);
        Ok(Outcome {
            exit_code,
            signal,
            limit_hit,
            duration,
            stdout,
            stderr,
            layers: self.active_layers(),
            collected,
            images,
            usage,
        })
    }
}

fn bad_path(path: &str, why: &str) -> ExecError {
    ExecError::Workdir(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{path:?} {why}"),
    ))
}

/// A path relative to the working directory that stays inside it.
fn checked_relative(path: &str) -> Result<PathBuf, ExecError> {
    let p = Path::new(path);
    if path.is_empty() {
        return Err(bad_path(path, "is an empty file name"));
    }
    for c in p.components() {
        match c {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(bad_path(
                    path,
                    "must be a relative path inside the working directory",
                ));
            }
        }
    }
    Ok(p.to_path_buf())
}

pub(crate) fn prepare_workdir(root: &Path, spec: &RunSpec) -> Result<(), ExecError> {
    std::fs::create_dir(root.join(".tmp")).map_err(ExecError::Workdir)?;
    for (name, contents) in &spec.files {
        let rel = checked_relative(name)?;
        let dest = root.join(rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(ExecError::Workdir)?;
        }
        std::fs::write(&dest, contents).map_err(ExecError::Workdir)?;
    }
    for input in &spec.inputs {
        let Some(name) = input.file_name() else {
            return Err(bad_path(&input.display().to_string(), "has no file name"));
        };
        std::fs::copy(input, root.join(name)).map_err(|e| {
            ExecError::Workdir(std::io::Error::new(
                e.kind(),
                format!("cannot copy the input {}: {e}", input.display()),
            ))
        })?;
    }
    checked_relative(&spec.script)?;
    Ok(())
}

/// Remove what a run's own uid left in the host's /dev/shm (POSIX
/// semaphores and shared memory of multiprocessing), where there is no
/// private one.
pub(crate) fn sweep_shm(uid: u32) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    for entry in entries.flatten() {
        if entry.metadata().is_ok_and(|m| m.uid() == uid) {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                make_removable(&path);
                let _ = std::fs::remove_dir_all(&path);
            } else {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

/// Give every directory under `dir` back its owner's rights (a run may
/// have left one at mode 000), so the whole run folder can be removed.
pub(crate) fn make_removable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            make_removable(&entry.path());
        }
    }
}

pub(crate) fn chown_tree(dir: &Path, uid: u32) -> std::io::Result<()> {
    std::os::unix::fs::lchown(dir, Some(uid), Some(uid))?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let ft = entry.file_type()?;
        if ft.is_dir() {
            chown_tree(&entry.path(), uid)?;
        } else {
            std::os::unix::fs::lchown(entry.path(), Some(uid), Some(uid))?;
        }
    }
    Ok(())
}

fn open_log(path: &Path) -> Result<std::fs::File, ExecError> {
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent).map_err(ExecError::Workdir)?;
    }
    std::fs::File::create(path).map_err(|e| {
        ExecError::Workdir(std::io::Error::new(
            e.kind(),
            format!("cannot create the output log {}: {e}", path.display()),
        ))
    })
}

async fn pump(
    mut reader: impl tokio::io::AsyncRead + Unpin,
    stream: Stream,
    tx: mpsc::Sender<(Stream, Vec<u8>)>,
) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if tx.send((stream, buf[..n].to_vec())).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Which quota the working directory is past, if any: its files and
/// directories (with those of `shm_uid` in the host's /dev/shm; the walk
/// stops there), or the bytes in its files (symlinks not followed).
fn over_quota(dir: &Path, limits: &super::Limits, shm_uid: Option<u32>) -> Option<Stop> {
    let most = limits
        .max_files
        .saturating_add(super::OWN_ENTRIES)
        .min(DISK_WALK_MAX_ENTRIES);
    let mut total = 0u64;
    let mut entries = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    if let Some(uid) = shm_uid
        && let Ok(rd) = std::fs::read_dir("/dev/shm")
    {
        use std::os::unix::fs::MetadataExt;
        for entry in rd.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.uid() != uid {
                continue;
            }
            entries += 1;
            if entries > most {
                return Some(Stop::Files);
            }
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in rd.flatten() {
            entries += 1;
            if entries > most {
                return Some(Stop::Files);
            }
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                use std::os::unix::fs::MetadataExt;
                total += meta.len().max(meta.blocks() * 512);
            }
        }
    }
    (total > limits.disk_bytes).then_some(Stop::Disk)
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

/// Read back the files a run left for the caller: regular files only, never
/// through a symlink, each up to `COLLECT_CAP` bytes.
fn collect(root: &Path, names: &[String]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for name in names {
        let Ok(rel) = checked_relative(name) else {
            continue;
        };
        let mut path = root.to_path_buf();
        let mut through_symlink = false;
        for c in rel.components() {
            path.push(c);
            if std::fs::symlink_metadata(&path)
                .map(|m| m.file_type().is_symlink())
                .unwrap_or(false)
            {
                through_symlink = true;
                break;
            }
        }
        if through_symlink {
            continue;
        }
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
        else {
            continue;
        };
        let Ok(meta) = file.metadata() else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let mut data = Vec::new();
        use std::io::Read;
        if file.take(COLLECT_CAP).read_to_end(&mut data).is_ok() {
            out.push((name.clone(), data));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_leave_the_working_directory_are_refused() {
        assert!(checked_relative("a/b.py").is_ok());
        assert!(checked_relative("../x").is_err());
        assert!(checked_relative("/etc/passwd").is_err());
        assert!(checked_relative("").is_err());
    }
}
