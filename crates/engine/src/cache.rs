//! The cache of solved tasks: a task solved once with the same model and the
//! same prompts replays at once (plan, tests and code from the cache, then
//! run again for real, so a cached answer is still verified).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use codeloop_session::FunctionSpec;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Solved {
    pub(crate) specs: Vec<FunctionSpec>,
    pub(crate) tests: BTreeMap<String, String>,
    pub(crate) code: BTreeMap<String, String>,
}

/// The key of a task: its text, the attached files' contents, the model and
/// the prompts.
pub(crate) fn key(task: &str, inputs: &[PathBuf], model: &str, prompts_digest: &str) -> String {
    let mut h = Sha256::new();
    for part in [task, model, prompts_digest] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    for path in inputs {
        h.update(
            path.file_name()
                .map(|n| n.as_encoded_bytes())
                .unwrap_or(b""),
        );
        // An unreadable input makes the key unique, so it never hits.
        // Streamed: a large input is hashed, never held in memory.
        let mut file_hash = Sha256::new();
        match std::fs::File::open(path).and_then(|mut f| std::io::copy(&mut f, &mut file_hash)) {
            Ok(_) => h.update(file_hash.finalize()),
            Err(e) => h.update(e.to_string().as_bytes()),
        }
    }
    hex::encode(h.finalize())
}

fn path_of(dir: &Path, key: &str) -> PathBuf {
    dir.join("solved").join(format!("{key}.json"))
}

/// A cached solution, if there is a readable one.
pub(crate) fn load(dir: &Path, key: &str) -> Option<Solved> {
    let bytes = std::fs::read(path_of(dir, key)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Store a solution (written to a temporary file and renamed, so a reader
/// never sees half of one), private, never through a link (`session_fs`).
pub(crate) fn store(dir: &Path, key: &str, solved: &Solved) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(solved).map_err(std::io::Error::other)?;
    let rel = Path::new("solved").join(format!("{key}.json"));
    codeloop_session::session_fs::write_inside(
        dir,
        &rel,
        &text,
        codeloop_session::session_fs::PRIVATE_FILE,
    )
}
