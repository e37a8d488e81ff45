//! Where no tmpfs of the quota's size holds the working directory (the
//! reduced sandbox: no mount namespace), the disk quota is the parent's to
//! keep. Polling alone lets a fast writer overshoot by what it writes in a
//! poll interval; inotify wakes the parent at each write, create or
//! truncate in the working directory, so the size is measured at once.
//!
//! No mechanism an unprivileged process has gives a byte total across
//! files at the syscall without a mount namespace (or a delegated cgroup,
//! which counts memory, not files): RLIMIT_FSIZE holds per file, and this
//! keeps the overshoot of the total to what is written between a write and
//! the parent's measurement after it.

use std::collections::HashSet;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use tokio::io::unix::AsyncFd;

use super::sys;

/// What is watched in each directory: anything that can grow a file or
/// add one.
const EVENTS: u32 =
    libc::IN_MODIFY | libc::IN_CREATE | libc::IN_MOVED_TO | libc::IN_CLOSE_WRITE | libc::IN_ATTRIB;
/// Directories watched at most (each watch costs kernel memory, and the
/// user's inotify limit is shared with the user's other programs).
const MAX_WATCHES: usize = 4096;

pub(crate) struct DiskWatch {
    fd: AsyncFd<OwnedFd>,
    watched: HashSet<PathBuf>,
    buf: Vec<u8>,
}

impl DiskWatch {
    /// Watch `root` and every directory under it; `None` where inotify is
    /// not available (the poll still keeps the quota).
    pub(crate) fn new(root: &Path) -> Option<DiskWatch> {
        let owned = sys::inotify().ok()?;
        let mut watch = DiskWatch {
            fd: sys::async_fd(owned)?,
            watched: HashSet::new(),
            buf: vec![0u8; 64 << 10],
        };
        watch.add_tree(root);
        Some(watch)
    }

    fn add(&mut self, dir: &Path) {
        if self.watched.len() >= MAX_WATCHES || self.watched.contains(dir) {
            return;
        }
        let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
            return;
        };
        if sys::inotify_watch(
            self.fd.get_ref(),
            &c,
            EVENTS | libc::IN_ONLYDIR | libc::IN_DONT_FOLLOW,
        )
        .is_ok()
        {
            self.watched.insert(dir.to_path_buf());
        }
    }

    fn add_tree(&mut self, root: &Path) {
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            self.add(&dir);
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(entry.path());
                }
            }
        }
    }

    /// Wait until something changed in the watched directories; new
    /// directories (found under `root`) are watched from then on.
    pub(crate) async fn changed(&mut self, root: &Path) {
        loop {
            let Ok(mut ready) = self.fd.readable().await else {
                return std::future::pending().await;
            };
            let mut new_dirs = false;
            let mut any = false;
            while let Some(n) = sys::read_some(ready.get_inner(), &mut self.buf) {
                any = true;
                new_dirs |= created_a_directory(&self.buf[..n]);
            }
            ready.clear_ready();
            if new_dirs {
                self.add_tree(root);
            }
            if any {
                return;
            }
        }
    }
}

/// Whether these inotify events include a directory made or moved in.
fn created_a_directory(events: &[u8]) -> bool {
    const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
    let mut at = 0;
    while at + HEADER <= events.len() {
        // The kernel writes whole events.
        let Some(event) = sys::inotify_event(&events[at..]) else {
            break;
        };
        if event.mask & libc::IN_ISDIR != 0
            && event.mask & (libc::IN_CREATE | libc::IN_MOVED_TO) != 0
        {
            return true;
        }
        at += HEADER + event.len as usize;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_write_in_a_directory_made_during_the_run_wakes_the_watch() {
        let dir = tempfile::tempdir().unwrap();
        let mut watch = DiskWatch::new(dir.path()).unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        let guard = Duration::from_secs(60);
        tokio::time::timeout(guard, watch.changed(dir.path()))
            .await
            .unwrap();
        assert!(watch.watched.contains(&dir.path().join("a/b")));
        std::fs::write(dir.path().join("a/b/f"), b"x").unwrap();
        tokio::time::timeout(guard, watch.changed(dir.path()))
            .await
            .expect("a write two directories down went unseen");
    }
}
