//! A started program watched until it ends and its pipes close: its output
//! kept, decoded, capped and logged as it comes; the wall clock, the disk
//! and file quotas and cancelling enforced, by killing its whole group.

use std::io::Write;
use std::path::Path;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::Stop;
use crate::capture::{HeadTail, Utf8Chunker};
use crate::diskwatch::DiskWatch;
use crate::{ExecError, OutputChunk, RunSpec, Stream, Usage};

/// How often the working directory's size is measured while a run lasts.
const DISK_POLL: Duration = Duration::from_millis(100);
/// The least time between two measurements that inotify asks for.
const DISK_WATCH_GAP: Duration = Duration::from_millis(2);
/// After the program exits, how long its pipes may stay open (orphans).
const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// The working directory is never walked past this many entries.
const DISK_WALK_MAX_ENTRIES: u64 = 100_000;

/// The program's output as it comes: the head and tail kept of each
/// stream, decoded for a live reader, counted against the cap, copied to
/// the log.
pub(super) struct Streams {
    pub(super) stdout: HeadTail,
    pub(super) stderr: HeadTail,
    decoders: [Utf8Chunker; 2],
    total: u64,
    cap: u64,
    log: Option<std::fs::File>,
}

impl Streams {
    pub(super) fn new(keep: usize, cap: u64, log: Option<std::fs::File>) -> Streams {
        Streams {
            stdout: HeadTail::new(keep),
            stderr: HeadTail::new(keep),
            decoders: [Utf8Chunker::default(), Utf8Chunker::default()],
            total: 0,
            cap,
            log,
        }
    }

    /// Take one chunk; the text a live reader is handed for it (cut at a
    /// character where it passes the cap).
    fn take(&mut self, stream: Stream, bytes: &[u8]) -> String {
        let idx = match stream {
            Stream::Stdout => {
                self.stdout.push(bytes);
                0
            }
            Stream::Stderr => {
                self.stderr.push(bytes);
                1
            }
        };
        if let Some(file) = self.log.as_mut() {
            // The log is a convenience: a full disk must not end the run.
            let _ = file.write_all(bytes);
        }
        // Counted as it comes out: an invalid byte becomes a three-byte
        // replacement character, and the cap holds what a reader is handed.
        let mut text = self.decoders[idx].decode(bytes);
        let budget = self.cap.saturating_sub(self.total);
        self.total += (text.len() as u64).max(bytes.len() as u64);
        if text.len() as u64 > budget {
            let mut cut = usize::try_from(budget).unwrap_or(usize::MAX);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        text
    }

    fn over_cap(&self) -> bool {
        self.total > self.cap
    }

    /// What the decoders still hold (an incomplete character at the end).
    pub(super) fn flush(&mut self) -> [(Stream, String); 2] {
        [
            (Stream::Stdout, self.decoders[0].flush()),
            (Stream::Stderr, self.decoders[1].flush()),
        ]
    }
}

/// What watching a run found: why codeloop stopped it (if it did), how it
/// exited, when, and what it had used when the wall clock stopped it.
#[derive(Default)]
pub(super) struct Watched {
    pub(super) stop: Option<Stop>,
    pub(super) status: Option<ExitStatus>,
    pub(super) ended_at: Option<Instant>,
    pub(super) wall_usage: Option<Usage>,
}

/// One started program and what it is held to.
pub(super) struct Watch<'a> {
    pub(super) spec: &'a RunSpec,
    pub(super) root: &'a Path,
    /// The program's process group (its pid), killed whole.
    pub(super) pgid: Option<i32>,
    pub(super) deadline: tokio::time::Instant,
    /// Without a tmpfs of the quota's size (no mount namespace), every
    /// change in the working directory has its size measured at once.
    pub(super) disk_watch: Option<DiskWatch>,
    /// Without namespaces a run of its own uid may write the host's
    /// /dev/shm: what it makes there counts as its files too.
    pub(super) shm_uid: Option<u32>,
    pub(super) interpreter: &'a Path,
}

impl Watch<'_> {
    fn kill(&self) {
        if let Some(pg) = self.pgid {
            crate::sys::kill_group(pg);
        }
    }

    /// Watch `child` until it has exited and its pipes are closed (or
    /// left behind by something outside its group).
    pub(super) async fn watch(
        mut self,
        child: &mut tokio::process::Child,
        streams: &mut Streams,
        output: Option<&mpsc::Sender<OutputChunk>>,
        cancel: &CancellationToken,
    ) -> Result<Watched, ExecError> {
        let (chunk_tx, mut chunk_rx) = mpsc::channel::<(Stream, Vec<u8>)>(32);
        let mut readers: Vec<JoinHandle<()>> = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(tokio::spawn(pump(out, Stream::Stdout, chunk_tx.clone())));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(tokio::spawn(pump(err, Stream::Stderr, chunk_tx.clone())));
        }
        drop(chunk_tx);
        let mut w = Watched::default();
        let mut last_measured = Instant::now();
        let mut disk_tick = tokio::time::interval(DISK_POLL);
        disk_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        disk_tick.reset();
        let mut disk_watch = self.disk_watch.take();
        let root = self.root;
        let mut streams_open = true;
        let mut drain_deadline = tokio::time::Instant::now() + Duration::from_secs(3600);
        while w.status.is_none() || streams_open {
            let running = w.stop.is_none() && w.status.is_none();
            tokio::select! {
                biased;
                _ = cancel.cancelled(), if running => {
                    w.stop = Some(Stop::Cancel);
                    self.kill();
                }
                _ = tokio::time::sleep_until(self.deadline), if running => {
                    w.stop = Some(Stop::Wall);
                    // Its measurer goes with it: what it used so far, first.
                    w.wall_usage = self.pgid.and_then(crate::usage::of_tree);
                    self.kill();
                }
                st = child.wait(), if w.status.is_none() => {
                    w.ended_at = Some(Instant::now());
                    // Orphans left in the group go with the program.
                    self.kill();
                    w.status = Some(st.map_err(|source| ExecError::Spawn {
                        interpreter: self.interpreter.display().to_string(),
                        source,
                    })?);
                    drain_deadline = tokio::time::Instant::now() + DRAIN_GRACE;
                }
                chunk = chunk_rx.recv(), if streams_open => match chunk {
                    Some((stream, bytes)) => self.on_chunk(&mut w, streams, stream, &bytes, output, cancel).await,
                    None => streams_open = false,
                },
                _ = async {
                    match disk_watch.as_mut() {
                        Some(d) => d.changed(root).await,
                        None => std::future::pending().await,
                    }
                }, if running => {
                    // A burst of writes is measured every DISK_WATCH_GAP at
                    // most; its end is the poll's.
                    if last_measured.elapsed() >= DISK_WATCH_GAP {
                        last_measured = Instant::now();
                        self.measure(&mut w);
                    }
                }
                _ = disk_tick.tick(), if running => self.measure(&mut w),
                _ = tokio::time::sleep_until(drain_deadline), if w.status.is_some() && streams_open => {
                    // Something outside the group still holds the pipes open.
                    for r in &readers {
                        r.abort();
                    }
                    streams_open = false;
                }
            }
        }
        Ok(w)
    }

    /// One chunk of output: kept, handed to the live reader, and past the
    /// cap the run is stopped (even after it ended, its last output still
    /// draining: what was cut is said).
    async fn on_chunk(
        &self,
        w: &mut Watched,
        streams: &mut Streams,
        stream: Stream,
        bytes: &[u8],
        output: Option<&mpsc::Sender<OutputChunk>>,
        cancel: &CancellationToken,
    ) {
        let text = streams.take(stream, bytes);
        if let Some(tx) = output
            && !text.is_empty()
        {
            tokio::select! {
                _ = tx.send(OutputChunk { stream, text }) => {}
                _ = tokio::time::sleep_until(self.deadline) => {}
                _ = cancel.cancelled() => {}
            }
        }
        if streams.over_cap() && w.stop.is_none() {
            w.stop = Some(Stop::Output);
            if w.status.is_none() {
                self.kill();
            }
        }
    }

    /// Measure the working directory; past a quota, stop the run.
    fn measure(&self, w: &mut Watched) {
        if let Some(over) = over_quota(self.root, &self.spec.limits, self.shm_uid) {
            w.stop = Some(over);
            self.kill();
        }
    }
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
fn over_quota(dir: &Path, limits: &crate::Limits, shm_uid: Option<u32>) -> Option<Stop> {
    let most = limits
        .max_files
        .saturating_add(crate::OWN_ENTRIES)
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
