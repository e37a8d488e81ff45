//! Opening an input without waiting and without surprises: what no run
//! could read is refused with why and what to do.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why an input file cannot be used, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub path: PathBuf,
    /// What is wrong, e.g. "is a folder, not a file".
    pub why: String,
    /// What the person can do.
    pub todo: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.path.display(), self.why, self.todo)
    }
}

impl std::error::Error for Refusal {}

impl Refusal {
    fn new(path: &Path, why: impl Into<String>, todo: impl Into<String>) -> Refusal {
        Refusal {
            path: path.to_path_buf(),
            why: why.into(),
            todo: todo.into(),
        }
    }

    /// A read that failed after the file was opened.
    pub(crate) fn read(path: &Path, e: &io::Error) -> Refusal {
        Refusal::new(
            path,
            format!("cannot be read ({e})"),
            "check the file (a disk or network error?) or attach a copy of it",
        )
    }
}

/// Refuse `path` (of `size` bytes) when it and the `others` bytes already
/// attached would not fit in a run's working directory, whose disk quota
/// is `quota` bytes: each run gets a copy of every input, and a tenth of
/// the quota is left for what the program writes.
pub fn check_room(path: &Path, size: u64, others: u64, quota: u64) -> Result<(), Refusal> {
    let fits = quota - quota / 10;
    if size + others <= fits {
        return Ok(());
    }
    let with = if others > 0 {
        format!(" ({} with the other inputs)", crate::bytes(size + others))
    } else {
        String::new()
    };
    Err(Refusal::new(
        path,
        format!(
            "is {}{with}: more than a run's working directory holds (each run gets a copy, and its disk quota is {}, {} of it for inputs)",
            crate::bytes(size),
            crate::bytes(quota),
            crate::bytes(fits),
        ),
        format!(
            "attach a sample of it instead (e.g. `head -n 100000 {} > sample`), or split it",
            path.display()
        ),
    ))
}

/// Open `path` for reading if it is a regular file this process may read.
/// A FIFO, a socket or a device is refused from its metadata, before any
/// open; the open itself never waits (O_NONBLOCK).
pub fn open(path: &Path) -> Result<File, Refusal> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => return Err(missing(path, &e)),
    };
    check_type(path, &meta)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| unreadable(path, &meta, &e))?;
    // What was opened is what was looked at (not swapped in between).
    let opened = file.metadata().map_err(|e| Refusal::read(path, &e))?;
    check_type(path, &opened)?;
    Ok(file)
}

fn missing(path: &Path, e: &io::Error) -> Refusal {
    match e.kind() {
        io::ErrorKind::NotFound => {
            let from = std::env::current_dir()
                .map(|d| format!(" (a relative path is read from {})", d.display()))
                .unwrap_or_default();
            Refusal::new(path, "does not exist", format!("check the path{from}"))
        }
        io::ErrorKind::PermissionDenied => Refusal::new(
            path,
            "cannot be reached: a folder on its path may not be entered (permission denied)",
            "ask the folder's owner for access, or copy the file somewhere you can read",
        ),
        _ => Refusal::new(
            path,
            format!("cannot be looked at ({e})"),
            "check the path, or attach a copy of the file",
        ),
    }
}

fn check_type(path: &Path, meta: &std::fs::Metadata) -> Result<(), Refusal> {
    let ft = meta.file_type();
    if ft.is_file() {
        return Ok(());
    }
    let (what, todo) = if ft.is_dir() {
        (
            "is a folder, not a file",
            "attach the files in it one by one (or an archive of them)",
        )
    } else if ft.is_fifo() {
        (
            "is a named pipe (FIFO): reading it would wait for a writer, and a run could not read it again",
            "save what it carries to a regular file and attach that",
        )
    } else if ft.is_socket() {
        (
            "is a socket, not a file",
            "save what it serves to a regular file and attach that",
        )
    } else if ft.is_char_device() || ft.is_block_device() {
        (
            "is a device, not a file",
            "copy the data you need into a regular file and attach that",
        )
    } else {
        ("is not a regular file", "attach a regular file")
    };
    Err(Refusal::new(path, what, todo))
}

fn unreadable(path: &Path, meta: &std::fs::Metadata, e: &io::Error) -> Refusal {
    if e.kind() == io::ErrorKind::PermissionDenied {
        let me = rustix::process::geteuid().as_raw();
        return Refusal::new(
            path,
            format!(
                "is not readable by you (uid {me}): it belongs to uid {} with mode {:o}",
                meta.uid(),
                meta.mode() & 0o7777
            ),
            "make it readable (`chmod u+r` if it is yours, else ask its owner) or attach a copy you can read",
        );
    }
    Refusal::new(
        path,
        format!("cannot be opened ({e})"),
        "check the file, or attach a copy of it",
    )
}
