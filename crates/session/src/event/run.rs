//! The events of runs and the assembled program: a run started, its
//! output, how it ended; the program, what it printed, the pictures runs
//! left; and what they carry.

use serde::{Deserialize, Serialize};

use super::{About, Begun, Delivers, Facts, PauseChange, Payload};

use codeloop_protocol::Stream;
use codeloop_protocol::picture::Picture;

/// `Event::RunStarted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStartedEvent {
    pub run_id: u64,
    /// None for a run of the assembled program.
    #[serde(default)]
    pub node: Option<String>,
    pub iteration: u32,
    pub kind: RunKind,
}

impl Payload for RunStartedEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "run_started",
            about: About {
                node: self.node.as_deref(),
                call: None,
                run: Some(self.run_id),
                at_work: true,
            },
            streamed: false,
            pause: PauseChange::Begins(Begun::Run {
                node: self.node.as_deref(),
                iteration: self.iteration,
            }),
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// `Event::Output`. The tape reader reads it straight from a line
/// (`tape_read.rs`), without the tagged enum's buffering.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputEvent {
    pub run_id: u64,
    pub stream: Stream,
    pub text: String,
}

impl Payload for OutputEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "output",
            about: About::run(self.run_id),
            streamed: true,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// `Event::RunFinished`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFinishedEvent {
    pub run_id: u64,
    pub record: RunRecord,
}

impl Payload for RunFinishedEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "run_finished",
            about: About::run(self.run_id),
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// `Event::Program`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramEvent {
    pub code: String,
    pub tests: String,
}

impl Payload for ProgramEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "program",
            about: About::SESSION,
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// `Event::ProgramOutput`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramOutputEvent {
    pub output: ProgramOutput,
}

impl Payload for ProgramOutputEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "program_output",
            about: About::SESSION,
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// `Event::Picture`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PictureEvent {
    /// None: the program's run through its entry point.
    #[serde(default)]
    pub run_id: Option<u64>,
    pub picture: Picture,
}

impl Payload for PictureEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "picture",
            about: About::SESSION,
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// A node's tests against its code (and its dependencies' code).
    NodeTests,
    /// The assembled program with all tests.
    Program,
}

/// How a run ended, as the tape keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub passed: bool,
    pub exit_code: Option<i32>,
    /// Signal that ended the process, if any.
    #[serde(default)]
    pub signal: Option<i32>,
    /// The limit that ended the run, in plain words ("wall-clock timeout of 10 s").
    #[serde(default)]
    pub limit_hit: Option<String>,
    pub duration_ms: u64,
    /// Bytes of output not kept in memory (they are in the on-disk log).
    #[serde(default)]
    pub dropped_bytes: u64,
    /// Sandbox layers that were active for this run.
    #[serde(default)]
    pub layers: Vec<String>,
    /// Tests counted by the harness, when it reported them.
    #[serde(default)]
    pub tests_passed: Option<u32>,
    #[serde(default)]
    pub tests_failed: Option<u32>,
    /// The names of the tests that failed, as the harness reported them
    /// (what code-or-test blame reads: `decide::suspect_test`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_tests: Vec<String>,
    /// CPU time and peak memory of the program, where they were measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<codeloop_protocol::resources::Resources>,
}

/// What the program printed when run through its entry point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramOutput {
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    pub exit_code: Option<i32>,
    /// The limit that ended it, in plain words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_hit: Option<String>,
}

impl ProgramOutput {
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0) && self.limit_hit.is_none()
    }
}
