//! The tape on disk: append-only JSON Lines, one `Record` a line.
//!
//! Architecture Invariant: one writer. A live tape is appended to by one
//! `TapeWriter` only, which holds an flock on the file (a second writer,
//! in this process or another, is refused), from one thread (the engine's
//! recorder); everything else reads.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Opened neither through a symbolic link nor waiting on a FIFO.
const NO_LINK: i32 =
    rustix::fs::OFlags::NOFOLLOW.bits() as i32 | rustix::fs::OFlags::NONBLOCK.bits() as i32;

use super::event::{Event, Record};
use super::tape_read::{LineReader, damage_report};

#[derive(Debug, thiserror::Error)]
pub enum TapeError {
    #[error("cannot open tape {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write to tape {path}: {source} (is the disk full?)")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read tape {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} holds no readable codeloop event (line {line}: {message}): it is not a codeloop tape, or it is damaged throughout"
    )]
    Corrupt {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error(
        "{path} was written by a newer codeloop (tape format {found}; this codeloop reads format {supported} and older): upgrade codeloop to open it"
    )]
    NewerVersion {
        path: PathBuf,
        found: u64,
        supported: u32,
    },
    #[error("{path} is empty: it holds no events")]
    Empty { path: PathBuf },
    #[error(
        "{path} holds no whole event: its only line ({line}) was cut off after {bytes} bytes (the session was stopped while writing it), so there is nothing to read"
    )]
    CutOff {
        path: PathBuf,
        line: usize,
        bytes: usize,
    },
    #[error(
        "{path} is refused: its record {seq} {what}. A session codeloop recorded never holds that: it was changed, or made to write or read files where whoever opens it did not ask (a session handed over by someone else?). Do not open it; ask for the session again, or if you edited the tape yourself, undo that"
    )]
    Unsafe {
        path: PathBuf,
        seq: u64,
        what: String,
    },
    #[error(
        "{path} is being written by another codeloop (the session is live there): wait for it to end, or cancel it there, then try again"
    )]
    Busy { path: PathBuf },
}

/// Appends records to a tape file, numbering and timing them.
pub struct TapeWriter {
    path: PathBuf,
    out: BufWriter<File>,
    next_seq: u64,
    started: Instant,
    /// Offset added to the clock, so a reopened tape keeps counting time.
    base_ms: u64,
}

impl TapeWriter {
    /// Create a new tape (fails if it exists, so nothing is overwritten).
    pub fn create(path: &Path) -> Result<Self, TapeError> {
        // Private whatever the umask, and never through a link.
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(crate::session_fs::PRIVATE_FILE)
            .custom_flags(NO_LINK)
            .open(path)
            .map_err(|source| TapeError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        // Held while the writer lives (the process, if it is killed), so a
        // resume cannot append to a tape a live session is writing. A file
        // system without locks goes without.
        lock(&file);
        let _ = file.set_permissions(std::fs::Permissions::from_mode(
            crate::session_fs::PRIVATE_FILE,
        ));
        Ok(TapeWriter {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
            next_seq: 0,
            started: Instant::now(),
            base_ms: 0,
        })
    }

    /// Open an existing tape to append a new segment to it. `contents` is
    /// what `read_tape` found in it: a last line cut off mid-write is cut
    /// away first (it would be damage in the middle once more lines follow),
    /// numbering goes on after the last record and the clock from its time.
    pub fn reopen(path: &Path, contents: &TapeContents) -> Result<Self, TapeError> {
        let open_err = |source| TapeError::Open {
            path: path.to_path_buf(),
            source,
        };
        // A tape planted as a link (to another of the person's files) or
        // a FIFO in a session folder handed over is not appended to.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(NO_LINK)
            .open(path)
            .map_err(open_err)?;
        if !file.metadata().map_err(open_err)?.is_file() {
            return Err(open_err(std::io::Error::other(
                "it is not a regular file: remove it, or open the session's tape itself",
            )));
        }
        if !lock(&file) {
            return Err(TapeError::Busy {
                path: path.to_path_buf(),
            });
        }
        let mut len = file.metadata().map_err(open_err)?.len();
        if let Some((_, bytes)) = contents.truncated_tail {
            len = len.saturating_sub(bytes as u64);
            file.set_len(len).map_err(open_err)?;
        }
        let mut out = BufWriter::new(file);
        out.seek(SeekFrom::Start(len)).map_err(open_err)?;
        let ends_in_newline = len == 0 || {
            let mut last = [0u8];
            let f = out.get_mut();
            f.seek(SeekFrom::Start(len - 1)).map_err(open_err)?;
            f.read_exact(&mut last).map_err(open_err)?;
            last[0] == b'\n'
        };
        if !ends_in_newline {
            // The last record was written but not its line end.
            out.write_all(b"\n").map_err(|source| TapeError::Write {
                path: path.to_path_buf(),
                source,
            })?;
        }
        let last = contents.records.last();
        Ok(TapeWriter {
            path: path.to_path_buf(),
            out,
            next_seq: last.map_or(0, |r| r.seq + 1),
            started: Instant::now(),
            base_ms: last.map_or(0, |r| r.t_ms),
        })
    }

    /// Go on counting time from `t_ms` (records copied from another tape keep theirs).
    pub fn continue_clock(&mut self, t_ms: u64) {
        self.base_ms = t_ms;
        self.started = Instant::now();
    }

    /// Stamp an event with the next sequence number and the time since start,
    /// append it, and return the record.
    pub fn append(&mut self, event: Event) -> Result<Record, TapeError> {
        let t_ms = self.base_ms + self.started.elapsed().as_millis() as u64;
        let record = Record {
            seq: self.next_seq,
            t_ms,
            event,
        };
        self.write_record(&record)?;
        Ok(record)
    }

    /// Append a record as it is (replays keep their original numbering and timing).
    pub fn write_record(&mut self, record: &Record) -> Result<(), TapeError> {
        let line = serde_json::to_string(record).map_err(|e| TapeError::Write {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        let err = |source| TapeError::Write {
            path: self.path.clone(),
            source,
        };
        self.out.write_all(line.as_bytes()).map_err(err)?;
        self.out.write_all(b"\n").map_err(err)?;
        self.next_seq = record.seq + 1;
        // Streamed pieces are flushed in batches; everything else ends a
        // step and is flushed at once, so a crash loses at most the pieces
        // of the step under way.
        if !record.event.facts().streamed {
            self.flush()?;
        }
        Ok(())
    }

    /// Push everything buffered to the file.
    pub fn flush(&mut self) -> Result<(), TapeError> {
        self.out.flush().map_err(|source| TapeError::Write {
            path: self.path.clone(),
            source,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TapeWriter {
    fn drop(&mut self) {
        let _ = self.out.flush();
    }
}

/// Take the tape's advisory lock (the standard library's, an exclusive
/// `flock` on Linux), held until the file is closed (or its process dies).
/// False only when another writer holds it; a file system without locks
/// goes without.
fn lock(file: &File) -> bool {
    !matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock))
}

/// Whether a process holds the writer's lock of the tape at `path` (a
/// session writing it now). Asked with a shared lock, let go at once; a
/// tape that cannot be opened, or a file system without locks, is not in use.
pub(crate) fn in_use(path: &Path) -> bool {
    File::open(path)
        .map(|f| matches!(f.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock)))
        .unwrap_or(false)
}

/// What reading a tape found.
#[derive(Debug, Clone, PartialEq)]
pub struct TapeContents {
    pub records: Vec<Record>,
    /// The last line was cut off mid-write: its 1-based line number and how many bytes it had.
    pub truncated_tail: Option<(usize, usize)>,
    /// Lines before the last that could not be read, skipped (damage from
    /// an editor, a disk error, or a newer codeloop's event).
    pub skipped: Vec<SkippedLine>,
}

/// A line of a tape that was not a readable event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedLine {
    /// 1-based.
    pub line: usize,
    /// Why it could not be read.
    pub message: String,
}

impl std::fmt::Display for SkippedLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl TapeContents {
    /// The session recorded its end (a `finished` event). A tape without one
    /// is of a session that was killed, or crashed, before it finished: it
    /// opens marked "did not finish".
    pub fn finished(&self) -> bool {
        self.records
            .iter()
            .any(|r| matches!(r.event, Event::Finished(_)))
    }

    /// One line for the person opening the tape about what could not be
    /// read, or None when every line was read.
    pub fn damage_report(&self) -> Option<String> {
        damage_report(&self.skipped, self.truncated_tail)
    }
}

/// Read a whole tape. A last line cut off mid-write is reported in
/// `truncated_tail`, an unreadable line before it in `skipped`; everything
/// readable is kept. A tape written by a newer codeloop (a higher format
/// version) is refused: its events may not mean what this one thinks.
pub fn read_tape(path: &Path) -> Result<TapeContents, TapeError> {
    let mut bytes = Vec::new();
    open_to_read(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|source| TapeError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    let contents = parse_records(&bytes, path)?;
    checked(&contents.records, path, path.parent())?;
    Ok(contents)
}

/// A tape opened to read: a regular file, not reached through a symbolic
/// link at its last step (a session folder handed over may hold
/// `tape.jsonl` as a link to another of the reader's files), and a FIFO
/// never waited on.
pub(crate) fn open_to_read(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(NO_LINK)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                std::io::Error::other(
                    "it is a symbolic link, which codeloop does not follow to a tape: name the tape it points to",
                )
            } else {
                e
            }
        })?;
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(std::io::Error::other("it is not a regular file"))
    }
}

/// `records` as `tape_check` finds them; `dir`: the folder they were read from.
pub(crate) fn checked(
    records: &[Record],
    path: &Path,
    dir: Option<&Path>,
) -> Result<(), TapeError> {
    crate::tape_check::check(records, dir).map_err(|u| TapeError::Unsafe {
        path: path.to_path_buf(),
        seq: u.seq,
        what: u.what,
    })
}

/// Parse a tape held in memory (e.g. a bundled demo); `label` names it in
/// errors. Its names are checked as a read tape's are (no folder to look at).
pub fn parse_tape(bytes: &[u8], label: &Path) -> Result<TapeContents, TapeError> {
    let contents = parse_records(bytes, label)?;
    checked(&contents.records, label, None)?;
    Ok(contents)
}

fn parse_records(bytes: &[u8], label: &Path) -> Result<TapeContents, TapeError> {
    let mut lines = LineReader::new(label);
    // Room for about as many records as the first lines say there are (a
    // record is a few hundred bytes: a long tape's list is not copied as it grows).
    let sample = &bytes[..bytes.len().min(64 << 10)];
    let per_sample = sample.iter().filter(|&&b| b == b'\n').count().max(1);
    let mut records = Vec::with_capacity(bytes.len() / sample.len().max(1) * per_sample);
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        if let Some(r) = lines.line(line)? {
            records.push(r);
        }
    }
    let end = lines.finish()?;
    Ok(TapeContents {
        records,
        truncated_tail: end.truncated_tail,
        skipped: end.skipped,
    })
}
