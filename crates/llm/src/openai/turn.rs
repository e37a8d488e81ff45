//! One request at a time across processes: a server that serves one
//! request at a time (llama-cpp-python) cuts a running stream when a second
//! request arrives, from this process or another (a `bench` beside the
//! workbench). Within a process a semaphore keeps the turn; across
//! processes, a lock file per server, held with `flock` for the length of
//! each request.
//!
//! The lock file is in a folder of the user's own (the runtime folder,
//! `$XDG_RUNTIME_DIR/codeloop`, else the cache folder, made 0700), never in
//! the shared temporary folder where another user could plant a FIFO there
//! (an open that hangs), hold its lock (a wait without end) or a symlink to
//! one of the user's files (created empty). It is opened without following
//! a link and without waiting, and used only if it is a regular file of the
//! user's. A wait for the turn is said (`Delta::Status`), and so is a lock
//! file that cannot be used (the turn is then kept within this process).

use std::fs::{File, OpenOptions, TryLockError};
use std::hash::{Hash, Hasher};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::{Semaphore, mpsc};

use super::OpenAiClient;
use crate::Delta;

impl OpenAiClient {
    /// How many requests may be in flight at once; None for no limit.
    pub async fn max_parallel(&self) -> Option<usize> {
        if let Some(n) = self.options.max_parallel {
            return Some(n.max(1));
        }
        if self.options.learn_context {
            return self.server_facts().await.slots;
        }
        None
    }

    /// The permits of the requests in flight.
    pub(super) async fn slots(&self) -> Option<Arc<Semaphore>> {
        self.slots
            .get_or_init(|| async {
                self.max_parallel()
                    .await
                    .map(|n| Arc::new(Semaphore::new(n)))
            })
            .await
            .clone()
    }

    /// The server serves one request at a time (its turn is kept across
    /// processes too).
    pub(super) fn one_slot(&self) -> bool {
        self.facts.get().and_then(|f| f.slots) == Some(1) || self.options.max_parallel == Some(1)
    }
}

/// The folder of this user's lock files: the runtime folder's `codeloop`,
/// else the cache folder's `codeloop/locks`; made 0700 (and made so again
/// if it is the user's and others may enter it), refused unless it is a
/// folder of the user's that only the user may enter.
pub(crate) fn lock_dir() -> Result<PathBuf, String> {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let dir = match var("XDG_RUNTIME_DIR").filter(|d| d.is_dir()) {
        Some(runtime) => runtime.join("codeloop"),
        None => var("XDG_CACHE_HOME")
            .or_else(|| var("HOME").map(|h| h.join(".cache")))
            .ok_or("neither XDG_RUNTIME_DIR, XDG_CACHE_HOME nor HOME is set")?
            .join("codeloop")
            .join("locks"),
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot make {} ({e})", dir.display()))?;
    let look = || {
        std::fs::symlink_metadata(&dir)
            .map_err(|e| format!("cannot look at {} ({e})", dir.display()))
    };
    let mut meta = look()?;
    if meta.is_dir() && meta.uid() == euid() && meta.permissions().mode() & 0o077 != 0 {
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        meta = look()?;
    }
    if !meta.is_dir() || meta.uid() != euid() || meta.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "{} is not a folder of yours that only you may enter",
            dir.display()
        ));
    }
    Ok(dir)
}

/// The effective user id.
fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The lock file of the server at `base_url`, in `dir`.
fn lock_path(dir: &Path, base_url: &str) -> PathBuf {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    base_url.hash(&mut hasher);
    dir.join(format!("server-{:016x}.lock", hasher.finish()))
}

/// The lock file at `path`, opened without following a link and without
/// waiting (a FIFO answers at once), if it is a regular file of the user's.
fn open_lock(path: &Path) -> Result<File, String> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| format!("cannot open {} ({e})", path.display()))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot look at {} ({e})", path.display()))?;
    if !meta.file_type().is_file() || meta.uid() != euid() {
        return Err(format!("{} is not a regular file of yours", path.display()));
    }
    Ok(file)
}

/// Wait for the server's turn; the turn is held until the file is dropped.
/// None when no lock file can be had (then only this process's semaphore
/// keeps the turn); a wait, and a lock file that cannot be used, are said
/// on `deltas`.
pub(super) async fn take(base_url: &str, deltas: &mpsc::Sender<Delta>) -> Option<File> {
    let opened = lock_dir().and_then(|dir| open_lock(&lock_path(&dir, base_url)));
    let file = match opened {
        Ok(file) => file,
        Err(why) => {
            let _ = deltas
                .send(Delta::Status(format!(
                    "the server's turn is kept within this process only: {why}"
                )))
                .await;
            return None;
        }
    };
    match file.try_lock() {
        Ok(()) => return Some(file),
        Err(TryLockError::WouldBlock) => {}
        Err(TryLockError::Error(_)) => return None,
    }
    let _ = deltas
        .send(Delta::Status(
            "waiting for the server's turn: it serves one request at a time, and another codeloop process is using it".into(),
        ))
        .await;
    tokio::task::spawn_blocking(move || file.lock().ok().map(|()| file))
        .await
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_turn_is_held_until_dropped_and_a_wait_is_said() {
        let url = format!("http://127.0.0.1:9/v1/test-{}", std::process::id());
        let (tx, mut rx) = mpsc::channel(8);
        let first = take(&url, &tx).await.unwrap();
        let path = lock_path(&lock_dir().unwrap(), &url);
        let other = OpenOptions::new().write(true).open(&path).unwrap();
        assert!(other.try_lock().is_err(), "a second holder got the turn");
        let waiting = tokio::spawn(async move { take(&url, &tx).await.is_some() });
        let said = rx.recv().await.unwrap();
        assert!(
            matches!(&said, Delta::Status(s) if s.contains("waiting for the server's turn")),
            "{said:?}"
        );
        drop(first);
        assert!(waiting.await.unwrap());
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn the_lock_folder_is_the_users_own() {
        let dir = lock_dir().unwrap();
        assert!(
            !dir.starts_with(std::env::temp_dir()) || std::env::var_os("XDG_RUNTIME_DIR").is_some()
        );
        let meta = std::fs::symlink_metadata(&dir).unwrap();
        assert_eq!(meta.uid(), euid());
        assert_eq!(
            meta.permissions().mode() & 0o077,
            0,
            "{:o}",
            meta.permissions().mode()
        );
    }

    #[test]
    fn a_fifo_or_a_link_in_its_place_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.lock");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let why = open_lock(&fifo).unwrap_err();
        assert!(why.contains("not a regular file of yours"), "{why}");
        let victim = dir.path().join("victim");
        let link = dir.path().join("link.lock");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(open_lock(&link).is_err());
        assert!(!victim.exists(), "the link was followed");
    }
}
