//! The session's own events: its start, a fork, a resume, its end; notices,
//! pauses and steering; and what they carry (the inputs, the configuration,
//! the result).

use serde::{Deserialize, Serialize};

use super::{About, Delivers, Facts, PauseChange, Payload};

use codeloop_protocol::Usage;

use super::{Command, Step};

/// `Event::SessionStarted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionStartedEvent {
    pub version: u32,
    pub session_id: String,
    /// RFC 3339 wall-clock time the session started.
    pub started_at: String,
    pub task: String,
    #[serde(default)]
    pub inputs: Vec<InputFile>,
    pub config: ConfigSummary,
}

impl Payload for SessionStartedEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "session_started",
            about: About::SESSION,
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// `Event::Paused`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PausedEvent {
    pub step: Step,
}

impl Payload for PausedEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "paused",
            about: About::SESSION,
            streamed: false,
            pause: PauseChange::Before(&self.step),
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// `Event::Steer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteerEvent {
    pub command: Command,
}

impl Payload for SteerEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "steer",
            about: About::SESSION,
            streamed: false,
            pause: self.command.pause_change(),
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// `Event::Notice`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoticeEvent {
    pub level: NoticeLevel,
    pub message: String,
}

impl Payload for NoticeEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "notice",
            about: About::SESSION,
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// `Event::Finished`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinishedEvent {
    pub result: FinalResult,
}

impl Payload for FinishedEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "finished",
            about: About::SESSION,
            streamed: false,
            pause: PauseChange::Ends,
            delivers: Delivers::All,
            uses: Delivers::Nothing,
        }
    }
}

/// `Event::Forked`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForkedEvent {
    pub parent_id: String,
    /// The parent's tape, as it was found when the fork was made.
    pub parent_tape: String,
    /// The last of the parent's records the fork starts from.
    pub at_seq: u64,
}

impl Payload for ForkedEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "forked",
            about: About::SESSION,
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// `Event::Resumed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumedEvent {
    /// The last record the segment builds on.
    pub from_seq: u64,
    /// How the previous segment ended, in words ("killed", "cancelled: ...", "forked").
    pub after: String,
    /// What this segment runs with (its model, its iteration limit).
    pub config: ConfigSummary,
    /// Tokens the session may have used in all by the end of this segment; 0 = no limit.
    #[serde(default)]
    pub token_budget: u64,
    /// RFC 3339 wall-clock time the segment started.
    pub started_at: String,
}

impl Payload for ResumedEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "resumed",
            about: About::SESSION,
            streamed: false,
            pause: PauseChange::Ends,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// A file attached to the task: described to the model, copied into each run's directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputFile {
    /// File name as the program sees it (in its working directory).
    pub name: String,
    /// Where it was read from on the user's machine.
    pub source_path: String,
    pub size_bytes: u64,
    /// The first lines (text) or a note that it is binary. Sessions
    /// recorded before `description` have only this.
    pub preview: String,
    /// What the file is (a table's columns, a JSON shape, an image's size,
    /// ...), read with bounded buffers when the session started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<codeloop_inputs::InputDescription>,
}

impl InputFile {
    /// What the file is in one line: its description's summary, or for a
    /// session recorded before descriptions, its size.
    pub fn summary(&self) -> String {
        match &self.description {
            Some(d) => d.summary(),
            None => codeloop_inputs::bytes(self.size_bytes),
        }
    }

    /// The description for a prompt or a report (bounded), or for a
    /// session recorded before descriptions, the name, size and preview.
    pub fn described(&self) -> String {
        match &self.description {
            Some(d) => d.render(),
            None => format!(
                "{} ({} bytes). First lines:\n{}",
                self.name, self.size_bytes, self.preview
            ),
        }
    }
}

/// What the session ran with; never secrets.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ConfigSummary {
    /// "openai-compatible", "scripted" or "demo".
    pub provider: String,
    pub model: String,
    /// Base URL for HTTP models, the replies file for scripted ones.
    pub endpoint: String,
    pub max_iterations: u32,
    pub workers: u32,
    pub timeout_secs: u64,
    /// Sandbox layers active on this machine, e.g. ["hygiene", "rlimits", "landlock"].
    #[serde(default)]
    pub sandbox_layers: Vec<String>,
    #[serde(default)]
    pub step_mode: bool,
    /// The Python runs use and its third-party packages, probed once when
    /// the session (or segment) started; none on older tapes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<Box<codeloop_protocol::python::PythonEnvironment>>,
    /// What the loop does after a failure (`policy.rs`), whole, as the
    /// engine writes it; none on tapes older than it (`policy()`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<crate::policy::RepairPolicy>,
}

impl ConfigSummary {
    /// The repair policy the session (or segment) ran with: the recorded
    /// one, or on a tape older than it what such a session ran with
    /// (`RepairPolicy::of_older_tapes`).
    pub fn policy(&self) -> crate::policy::RepairPolicy {
        self.policy
            .clone()
            .unwrap_or_else(crate::policy::RepairPolicy::of_older_tapes)
    }

    /// The model as people are shown it (`present::model_shown`).
    pub fn model_shown(&self) -> &str {
        codeloop_protocol::present::model_shown(&self.model)
    }

    /// The bundled demo whose authored replies answered, for a session of
    /// the demo model (`model` is "demo:NAME").
    pub fn demo(&self) -> Option<&str> {
        (self.provider == "demo")
            .then(|| self.model.strip_prefix("demo:"))
            .flatten()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeLevel {
    Info,
    Warning,
    Error,
}

/// The assembled program's module: `program.py` in a session's
/// `output_dir`, beside its tests and `report.md`.
pub const PROGRAM: &str = "program";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinalResult {
    /// Every node passed and the assembled program passed its tests.
    pub passed: bool,
    pub nodes_passed: u32,
    pub nodes_total: u32,
    /// Repair iterations used in all.
    pub iterations: u32,
    pub usage: Usage,
    /// Why the session ended, in plain words.
    pub summary: String,
    /// Folder the program, tests and report were written to, if any.
    #[serde(default)]
    pub output_dir: Option<String>,
}
