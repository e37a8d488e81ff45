//! The sessions on disk: finding them, summarizing them, and resolving what a
//! person types (an id, a unique prefix of one, a folder, a tape, or `last`)
//! to one session's tape.
//!
//! A summary is folded from the whole tape once and kept beside it in
//! `summary.json`, stamped with the tape's size and modification time; a later
//! listing reads only that small file while the tape is unchanged, so listing
//! many sessions stays fast.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

use super::outcome::Outcome;
use super::state::State;
use super::tape::{TapeError, read_tape};

/// A session's tape, inside its folder.
pub(crate) const TAPE_FILE: &str = "tape.jsonl";
/// The cached summary, beside the tape.
pub const SUMMARY_FILE: &str = "summary.json";
/// Bump when `SessionSummary` changes meaning: older caches are then refolded
/// (3: what a tape's reading skipped is told; 4: a cancel after `Finished`
/// no longer makes a session cancelled, and a session without a plan is
/// `no_plan`, not `failed`).
const SUMMARY_FORMAT: u32 = 4;

/// How a session ended, as far as its tape tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionResult {
    /// Every function and the assembled program passed their tests.
    Passed,
    /// The session finished without everything passing.
    Failed,
    /// It finished without a plan to work from (the model gave none).
    NoPlan,
    /// The person stopped it.
    Cancelled,
    /// The tape ends without a `finished` event: killed or crashed (or
    /// still running, where its lock could not be asked).
    DidNotFinish,
    /// The tape ends without a `finished` event and a process holds its
    /// writer's lock: the session is running now. Never cached: the
    /// listing asks the lock each time.
    Running,
}

impl SessionResult {
    pub fn label(self) -> &'static str {
        match self {
            SessionResult::Passed => "passed",
            SessionResult::Failed => "failed",
            SessionResult::NoPlan => "no plan",
            SessionResult::Cancelled => "cancelled",
            SessionResult::DidNotFinish => "did not finish",
            SessionResult::Running => "running",
        }
    }

    /// What the tape of a session folded into says.
    pub fn of(state: &State) -> SessionResult {
        match Outcome::of(state) {
            Outcome::Passed => SessionResult::Passed,
            Outcome::Failed => SessionResult::Failed,
            Outcome::NoPlan => SessionResult::NoPlan,
            Outcome::Cancelled => SessionResult::Cancelled,
            Outcome::Working => SessionResult::DidNotFinish,
        }
    }
}

/// One line of the session list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// The folder's name, which is the session id on its tape.
    pub id: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub task: String,
    pub model: String,
    pub provider: String,
    pub result: SessionResult,
    /// Repair iterations (code versions beyond each function's first).
    pub iterations: u32,
    pub tokens: u64,
    /// The session this one was forked from; None until forks exist.
    pub parent: Option<String>,
    pub events: u64,
    /// The session's folder.
    pub dir: PathBuf,
}

impl SessionSummary {
    /// The summary of a session folded from its tape.
    pub fn of(state: &State, dir: &Path) -> SessionSummary {
        SessionSummary {
            id: match id_of(dir) {
                id if id.is_empty() => state.session_id.clone(),
                id => id,
            },
            started_at: state.started_at.clone(),
            task: state.task.clone(),
            model: state.config.model.clone(),
            provider: state.config.provider.clone(),
            result: SessionResult::of(state),
            iterations: state.repair_iterations(),
            tokens: state.usage.total(),
            parent: state
                .parent
                .as_ref()
                .map(|p| format!("{}@{}", p.session_id, p.at_seq)),
            events: state.events_applied,
            dir: dir.to_path_buf(),
        }
    }

    pub fn tape(&self) -> PathBuf {
        self.dir.join(TAPE_FILE)
    }
}

/// A session's id: its folder's name.
fn id_of(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What `summary.json` holds: the summary and the tape it was folded from.
#[derive(Debug, Serialize, Deserialize)]
struct Cached {
    format: u32,
    tape_bytes: u64,
    tape_modified_ns: u128,
    summary: SessionSummary,
    /// What of the tape could not be read (`TapeContents::damage_report`).
    #[serde(default)]
    damage: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("cannot read the sessions folder {path}: {source}")]
    ReadDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Tape(#[from] TapeError),
    #[error(
        "`{arg}` matches {} sessions: {}; give more of the id",
        .candidates.len(),
        .candidates.join(", ")
    )]
    Ambiguous {
        arg: String,
        candidates: Vec<String>,
    },
    #[error("{} is a folder without a tape.jsonl: give a session folder or a tape file", .0.display())]
    NoTapeInFolder(PathBuf),
    #[error("`{arg}` is neither a tape file, a session folder, nor a bundled demo, and no session id starts with it; {}", existing(.sessions_dir, .newest))]
    NotFound {
        arg: String,
        sessions_dir: PathBuf,
        /// Ids of the newest sessions, newest first.
        newest: Vec<String>,
    },
    #[error("there is no last session: {} holds none yet (`codeloop run` makes one)", .0.display())]
    NoSessions(PathBuf),
}

fn existing(dir: &Path, newest: &[String]) -> String {
    if newest.is_empty() {
        return format!("{} holds no sessions yet", dir.display());
    }
    format!(
        "the newest in {} are {}; list them all with `codeloop sessions`",
        dir.display(),
        newest.join(", ")
    )
}

/// Sessions found under a folder, and the folders that could not be read.
#[derive(Debug, Default)]
pub struct Listing {
    /// Newest first.
    pub sessions: Vec<SessionSummary>,
    /// Folders with a tape that could not be summarized, and why.
    pub skipped: Vec<(PathBuf, String)>,
    /// Sessions listed whose tapes had lines that could not be read, and
    /// what was skipped.
    pub damaged: Vec<(PathBuf, String)>,
}

/// Every session under `sessions_dir`, newest first. A missing folder is an
/// empty list. Summaries are read from `summary.json` where it is as new as
/// the tape, and written there when not (a read-only folder only loses the
/// cache).
pub fn list(sessions_dir: &Path) -> Result<Listing, IndexError> {
    let mut listing = Listing::default();
    for dir in session_dirs(sessions_dir)? {
        match summary_and_damage(&dir) {
            Ok((mut s, damage)) => {
                // A tape without its end whose writer holds its lock is live.
                if s.result == SessionResult::DidNotFinish && super::tape::in_use(&s.tape()) {
                    s.result = SessionResult::Running;
                }
                if let Some(damage) = damage {
                    listing.damaged.push((dir, damage));
                }
                listing.sessions.push(s);
            }
            Err(e) => listing.skipped.push((dir, e.to_string())),
        }
    }
    listing
        .sessions
        .sort_by(|a, b| (time_key(&b.started_at), &b.id).cmp(&(time_key(&a.started_at), &a.id)));
    Ok(listing)
}

/// An RFC 3339 UTC time that sorts as text: the fraction of a second padded
/// to nine digits, so `…:29.5Z` comes after `…:29.25Z`.
fn time_key(rfc3339: &str) -> String {
    let Some((seconds, rest)) = rfc3339.split_once('.') else {
        return rfc3339.trim_end_matches('Z').to_string();
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    format!("{seconds}.{digits:0<9}")
}

/// Session folders (those holding a tape) directly under `sessions_dir`.
fn session_dirs(sessions_dir: &Path) -> Result<Vec<PathBuf>, IndexError> {
    let entries = match std::fs::read_dir(sessions_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(IndexError::ReadDir {
                path: sessions_dir.to_path_buf(),
                source,
            });
        }
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.join(TAPE_FILE).is_file())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// A session's summary and what of its tape could not be read.
fn summary_and_damage(dir: &Path) -> Result<(SessionSummary, Option<String>), IndexError> {
    let tape = dir.join(TAPE_FILE);
    let meta = std::fs::metadata(&tape).map_err(|source| TapeError::Read {
        path: tape.clone(),
        source,
    })?;
    let tape_bytes = meta.len();
    let tape_modified_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let cache = dir.join(SUMMARY_FILE);
    if let Some(cached) = std::fs::read(&cache)
        .ok()
        .and_then(|b| serde_json::from_slice::<Cached>(&b).ok())
        && cached.format == SUMMARY_FORMAT
        && cached.tape_bytes == tape_bytes
        && cached.tape_modified_ns == tape_modified_ns
    {
        // A folder moved or renamed keeps its cache: where it is now wins.
        return Ok((
            SessionSummary {
                id: id_of(dir),
                dir: dir.to_path_buf(),
                ..cached.summary
            },
            cached.damage,
        ));
    }
    let contents = read_tape(&tape)?;
    let summary = SessionSummary::of(&State::from_records(&contents.records), dir);
    let cached = Cached {
        format: SUMMARY_FORMAT,
        tape_bytes,
        tape_modified_ns,
        summary,
        damage: contents.damage_report(),
    };
    if let Ok(bytes) = serde_json::to_vec(&cached) {
        // Written aside and renamed, so a concurrent listing never reads
        // half a file; private, and never through a link planted there.
        let _ = crate::session_fs::Folder::open(dir)
            .and_then(|d| d.write(SUMMARY_FILE, &bytes, crate::session_fs::PRIVATE_FILE));
    }
    Ok((cached.summary, cached.damage))
}

/// The tape a person means by `arg`: a tape file, a session folder, `last`
/// (the newest session), a session id, or a unique prefix of one. Ids are
/// looked up in `sessions_dir`. `Ok(None)` when nothing matches and `arg`
/// could still name something else (the caller may know bundled demos);
/// `IndexError::NotFound` is then the error to give.
pub fn resolve(sessions_dir: &Path, arg: &str) -> Result<Option<PathBuf>, IndexError> {
    let path = Path::new(arg);
    if path.is_dir() {
        let tape = path.join(TAPE_FILE);
        if !tape.is_file() {
            return Err(IndexError::NoTapeInFolder(path.to_path_buf()));
        }
        return Ok(Some(tape));
    }
    if path.is_file() {
        return Ok(Some(path.to_path_buf()));
    }
    let dirs = session_dirs(sessions_dir)?;
    if arg == "last" {
        let listing = list(sessions_dir)?;
        return match listing.sessions.first() {
            Some(s) => Ok(Some(s.tape())),
            None => Err(IndexError::NoSessions(sessions_dir.to_path_buf())),
        };
    }
    if let Some(exact) = dirs.iter().find(|d| id_of(d) == arg) {
        return Ok(Some(exact.join(TAPE_FILE)));
    }
    // A path with separators names a file, never an id.
    if arg.is_empty() || arg.contains(std::path::MAIN_SEPARATOR) {
        return Ok(None);
    }
    let matches: Vec<&PathBuf> = dirs.iter().filter(|d| id_of(d).starts_with(arg)).collect();
    match matches.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.join(TAPE_FILE))),
        many => Err(IndexError::Ambiguous {
            arg: arg.to_string(),
            candidates: many.iter().map(|d| id_of(d)).collect(),
        }),
    }
}

/// The error for an argument that names nothing: what exists, and how to list it.
pub fn not_found(sessions_dir: &Path, arg: &str) -> IndexError {
    let newest = list(sessions_dir)
        .map(|l| l.sessions.iter().take(5).map(|s| s.id.clone()).collect())
        .unwrap_or_default();
    IndexError::NotFound {
        arg: arg.to_string(),
        sessions_dir: sessions_dir.to_path_buf(),
        newest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_sort_by_their_value_whatever_their_digits() {
        let mut times = vec![
            "2026-11-23T04:41:29.5Z",
            "2026-11-23T04:41:29.25Z",
            "2026-11-23T04:41:29Z",
            "2026-11-23T04:41:30.000000001Z",
        ];
        times.sort_by_key(|t| time_key(t));
        assert_eq!(
            times,
            [
                "2026-11-23T04:41:29Z",
                "2026-11-23T04:41:29.25Z",
                "2026-11-23T04:41:29.5Z",
                "2026-11-23T04:41:30.000000001Z",
            ]
        );
    }

    #[test]
    fn a_session_that_never_got_a_plan_is_listed_as_no_plan() {
        let finished = crate::event::Event::Finished(crate::event::FinishedEvent {
            result: crate::event::FinalResult {
                passed: false,
                nodes_passed: 0,
                nodes_total: 0,
                iterations: 0,
                usage: Default::default(),
                summary: "no usable plan".into(),
                output_dir: None,
            },
        });
        let state = State::from_records(&[crate::event::Record {
            seq: 0,
            t_ms: 0,
            event: finished,
        }]);
        assert_eq!(SessionResult::of(&state), SessionResult::NoPlan);
        assert_eq!(SessionResult::NoPlan.label(), "no plan");
    }
}
