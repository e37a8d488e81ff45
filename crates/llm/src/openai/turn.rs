//! One request at a time across processes: a server that serves one
//! request at a time (llama-cpp-python) cuts a running stream when a second
//! request arrives, from this process or another (a `bench` beside the
//! workbench). Within a process a semaphore keeps the turn; across
//! processes, a lock file per server in the temporary directory, held with
//! `flock` for the length of each request.

use std::fs::{File, OpenOptions};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::Semaphore;

use super::OpenAiClient;

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

/// The lock file of the server at `base_url` for this user.
fn lock_path(base_url: &str) -> PathBuf {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    base_url.hash(&mut hasher);
    let user = std::env::var("USER").unwrap_or_default();
    user.hash(&mut hasher);
    std::env::temp_dir().join(format!("codeloop-server-{:016x}.lock", hasher.finish()))
}

/// Wait for the server's turn; the turn is held until the file is dropped.
/// None when no lock file can be had (then only this process's semaphore
/// keeps the turn).
pub(super) async fn take(base_url: &str) -> Option<File> {
    let path = lock_path(base_url);
    tokio::task::spawn_blocking(move || {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .ok()?;
        file.lock().ok()?;
        Some(file)
    })
    .await
    .ok()
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_turn_is_held_until_dropped() {
        let url = format!("http://127.0.0.1:9/v1/test-{}", std::process::id());
        let first = take(&url).await.unwrap();
        let path = lock_path(&url);
        let other = OpenOptions::new().write(true).open(&path).unwrap();
        assert!(other.try_lock().is_err(), "a second holder got the turn");
        drop(first);
        assert!(other.try_lock().is_ok());
        let _ = std::fs::remove_file(path);
    }
}
