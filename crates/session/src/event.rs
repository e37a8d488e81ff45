//! The events of a session tape, and the steering commands that appear on it.
//!
//! Every type here is plain data: serde in, serde out. The engine produces
//! events, the tape stores them, `State::apply` folds them.

use serde::{Deserialize, Serialize};

use codeloop_protocol::{ChatMessage, Location, Stream, Usage};

use super::consensus::Candidate;
use super::review::{ReviewFinding, ReviewVerdict};

/// Version of the tape format. Bump when an existing event changes shape;
/// adding a new variant or an optional field does not need a bump.
pub const TAPE_VERSION: u32 = 1;

/// One line of the tape: an event with its sequence number and its time
/// offset (milliseconds since the session started).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub seq: u64,
    pub t_ms: u64,
    #[serde(flatten)]
    pub event: Event,
}

/// Everything that happens in a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// First event of every tape.
    SessionStarted {
        version: u32,
        session_id: String,
        /// RFC 3339 wall-clock time the session started.
        started_at: String,
        task: String,
        #[serde(default)]
        inputs: Vec<InputFile>,
        config: ConfigSummary,
    },
    /// A chat request sent to the model (the full prompt, never any secret).
    ModelRequest {
        call_id: u64,
        purpose: Purpose,
        /// The request's tag as the model saw it ("plan", "code/parse_line/2"):
        /// the scripted model answers by it, so a tape can be replayed as a script.
        #[serde(default)]
        tag: String,
        messages: Vec<ChatMessage>,
    },
    /// A piece of a streamed reply. Deltas may be coalesced.
    ModelDelta { call_id: u64, text: String },
    /// A piece of the model's reasoning, streamed apart from its answer
    /// (`<think>` blocks, `reasoning_content` fields): never code or plan.
    ModelReasoning { call_id: u64, text: String },
    /// Everything streamed so far for this call is void (the stream broke
    /// and the call was made again, or the reply turned out to have begun
    /// inside a reasoning block); the pieces that follow replace it.
    ModelRestart { call_id: u64, reason: String },
    /// The reply was cut off at the model's token limit and the model is
    /// asked to go on where it stopped: the pieces that follow extend it.
    ModelContinued { call_id: u64 },
    /// The whole reply, once the stream ended.
    ModelReply {
        call_id: u64,
        text: String,
        #[serde(default)]
        usage: Option<Usage>,
        duration_ms: u64,
        /// The model's reasoning, kept apart from `text`.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reasoning: String,
        /// Why the reply ended, when not a plain stop ("length", "content_filter").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish_reason: Option<String>,
        /// `usage` was estimated (about 4 characters a token), not reported by the model.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        usage_estimated: bool,
        /// How the reply's JSON schema was asked of the server
        /// ("json_schema", "json_object", "prompt only"); None when the call
        /// had no schema.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured: Option<String>,
    },
    /// The call failed for good (after retries).
    ModelError {
        call_id: u64,
        message: String,
        /// Tokens the failed call spent all the same (the prompt, and what
        /// streamed before it failed), estimated when the server said none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// The plan: function specs forming a DAG (validated).
    Plan { specs: Vec<FunctionSpec> },
    /// The plan could not be used (cycle, unknown dependency, unparsable reply).
    PlanError { message: String },
    /// The test code of one node (replaces any earlier tests of that node).
    Tests {
        node: String,
        code: String,
        source: CodeSource,
    },
    /// A code version of one node. `iteration` starts at 1.
    Code {
        node: String,
        iteration: u32,
        code: String,
        source: CodeSource,
    },
    /// Static-check findings (syntax, imports, definitions) for a code
    /// version. A syntax error or a missing or repeated definition is the
    /// version's failure (it is not run); the others are notes.
    Check {
        node: String,
        iteration: u32,
        findings: Vec<Finding>,
    },
    /// A sandboxed run began.
    RunStarted {
        run_id: u64,
        /// None for a run of the assembled program.
        #[serde(default)]
        node: Option<String>,
        iteration: u32,
        kind: RunKind,
    },
    /// A chunk of a run's output, as it arrived (control sequences kept; views strip them).
    Output {
        run_id: u64,
        stream: Stream,
        text: String,
    },
    /// A run ended.
    RunFinished { run_id: u64, record: RunRecord },
    /// A node changed state.
    NodeStatus { node: String, status: NodeStatus },
    /// A failure, localized.
    Localized {
        node: String,
        iteration: u32,
        location: Location,
    },
    /// The next code version of a node is about to be asked for after a
    /// failure: which kind of attempt it is, and what its prompt holds.
    /// `iteration` is the version it will write.
    Attempt {
        node: String,
        iteration: u32,
        kind: AttemptKind,
        /// The prompt shows the runtime values at the failure.
        #[serde(default)]
        runtime_values: bool,
    },
    /// The model's verdict that the tests, not the code, are wrong, and the
    /// tests it proposes: applied at once, or (step mode) when the person
    /// approves. `applied` false: rejected (by the person, or because the new
    /// tests drop assertions or contradict the task's own examples).
    TestsChanged {
        node: String,
        /// The iteration whose failure the model blamed on the tests.
        iteration: u32,
        old: String,
        new: String,
        reason: String,
        applied: bool,
        /// Why it was not applied, when it was not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rejected_because: Option<String>,
    },
    /// The review before running (`review = true`): the model's verdict on
    /// a node's code version against the task, its spec and its tests,
    /// after the static check and before the run. Advisory: a serious
    /// finding sends the code to a repair unrun only where the profile says
    /// so (`review_repairs`), with a `Localized` failure of `error_type`
    /// "Review". A reply that could not be read is a notice, not this.
    Review {
        node: String,
        /// The code version reviewed.
        iteration: u32,
        verdict: ReviewVerdict,
        #[serde(default)]
        findings: Vec<ReviewFinding>,
        /// The model call that made it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<u64>,
    },
    /// Functional consensus (`--candidates N`): a node's first code
    /// written several times, each candidate run on the inputs of its
    /// tests; `chosen` (the one agreeing with the most others) becomes
    /// the `Code` of `iteration` that follows.
    Candidates {
        node: String,
        iteration: u32,
        candidates: Vec<Candidate>,
        /// The inputs they were run on.
        inputs: u32,
        /// Of them, those the model proposed (the rest are its tests' calls).
        #[serde(default, skip_serializing_if = "is_zero")]
        proposed: u32,
        chosen: usize,
        /// Why the first was kept without a vote (the run failed, no inputs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// The model's reflection on a failure, before the repair.
    Reflection {
        node: String,
        iteration: u32,
        text: String,
    },
    /// The engine is paused (step mode) before a step; it waits for a command.
    Paused { step: Step },
    /// A steering command from the person at the keyboard.
    Steer { command: Command },
    /// A warning or notice worth showing (sandbox degraded, cache hit, budget).
    Notice { level: NoticeLevel, message: String },
    /// The assembled program.
    Program { code: String, tests: String },
    /// The assembled program run as a program, through its entry point
    /// (`main`): what it printed, the result the task asked for.
    ProgramOutput { output: ProgramOutput },
    /// An image file a run left in its working directory (a chart the
    /// program drew), copied into the session's folder (`picture.path`).
    /// `run_id` None: the program's run through its entry point.
    Picture {
        #[serde(default)]
        run_id: Option<u64>,
        picture: codeloop_protocol::picture::Picture,
    },
    /// Last event of a completed session (a segment of one, when it is resumed).
    Finished { result: FinalResult },
    /// This tape is a fork: the records before this one are its parent's,
    /// copied up to `at_seq` (their numbers and times kept), and the session
    /// goes on from there on its own.
    Forked {
        parent_id: String,
        /// The parent's tape, as it was found when the fork was made.
        parent_tape: String,
        /// The last of the parent's records the fork starts from.
        at_seq: u64,
    },
    /// The session goes on live from the state folded from every record
    /// before this one: a new segment of the same history (after a kill, a
    /// cancel, a limit, or a fork). Nothing done before is asked or run again.
    Resumed {
        /// The last record the segment builds on.
        from_seq: u64,
        /// How the previous segment ended, in words ("killed", "cancelled: ...", "forked").
        after: String,
        /// What this segment runs with (its model, its iteration limit).
        config: ConfigSummary,
        /// Tokens the session may have used in all by the end of this segment; 0 = no limit.
        #[serde(default)]
        token_budget: u64,
        /// RFC 3339 wall-clock time the segment started.
        started_at: String,
    },
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Event {
    /// A short name for the event kind, for logs and review headings.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::SessionStarted { .. } => "session_started",
            Event::ModelRequest { .. } => "model_request",
            Event::ModelDelta { .. } => "model_delta",
            Event::ModelReasoning { .. } => "model_reasoning",
            Event::ModelRestart { .. } => "model_restart",
            Event::ModelContinued { .. } => "model_continued",
            Event::ModelReply { .. } => "model_reply",
            Event::ModelError { .. } => "model_error",
            Event::Plan { .. } => "plan",
            Event::PlanError { .. } => "plan_error",
            Event::Tests { .. } => "tests",
            Event::Code { .. } => "code",
            Event::Check { .. } => "check",
            Event::RunStarted { .. } => "run_started",
            Event::Output { .. } => "output",
            Event::RunFinished { .. } => "run_finished",
            Event::NodeStatus { .. } => "node_status",
            Event::Localized { .. } => "localized",
            Event::Attempt { .. } => "attempt",
            Event::TestsChanged { .. } => "tests_changed",
            Event::Review { .. } => "review",
            Event::Candidates { .. } => "candidates",
            Event::Reflection { .. } => "reflection",
            Event::Paused { .. } => "paused",
            Event::Steer { .. } => "steer",
            Event::Notice { .. } => "notice",
            Event::Program { .. } => "program",
            Event::ProgramOutput { .. } => "program_output",
            Event::Picture { .. } => "picture",
            Event::Finished { .. } => "finished",
            Event::Forked { .. } => "forked",
            Event::Resumed { .. } => "resumed",
        }
    }
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
}

/// What a code version after a failure is written from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptKind {
    /// The failing code, its localized failure, and a request to fix it.
    Repair,
    /// A repair that asks for another approach (the same failure came back);
    /// the schedule without fresh starts only.
    DifferentApproach,
    /// The spec, the tests and the failures seen so far, without the
    /// failing code: repairs decay, a new start from the spec recovers.
    FreshStart,
}

impl AttemptKind {
    pub fn label(self) -> &'static str {
        match self {
            AttemptKind::Repair => "repair",
            AttemptKind::DifferentApproach => "different approach",
            AttemptKind::FreshStart => "fresh start",
        }
    }
}

/// Why a model call was made. `Review`: the review of a node's code
/// before it runs; `Inputs`: inputs of a node's function proposed to vote
/// on its candidates (functional consensus).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Purpose {
    Plan,
    Tests { node: String },
    Code { node: String },
    Reflect { node: String },
    Repair { node: String },
    Review { node: String },
    Inputs { node: String },
}

impl Purpose {
    pub fn node(&self) -> Option<&str> {
        match self {
            Purpose::Plan => None,
            Purpose::Tests { node }
            | Purpose::Code { node }
            | Purpose::Reflect { node }
            | Purpose::Repair { node }
            | Purpose::Review { node }
            | Purpose::Inputs { node } => Some(node),
        }
    }
}

/// One planned function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionSpec {
    /// A Python identifier; unique in the plan.
    pub name: String,
    pub purpose: String,
    /// e.g. "text: str, n: int"
    #[serde(default)]
    pub inputs: String,
    /// e.g. "list[str]"
    #[serde(default)]
    pub output: String,
    /// Names of functions this one calls.
    #[serde(default)]
    pub depends_on: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeSource {
    /// Written by the model.
    Model,
    /// Edited by the person at the keyboard.
    Edit,
    /// Replayed from the cache of solved tasks.
    Cache,
    /// Given with the task (e.g. a benchmark's tests).
    Given,
    /// The model's reply to the plan prompt, which was code rather than a
    /// plan: its functions became the plan, and their code this version.
    PlanReply,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// "syntax", "import", "name", ...
    pub kind: String,
    pub line: Option<u32>,
    pub message: String,
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
    /// CPU time and peak memory of the program, where they were measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<codeloop_protocol::resources::Resources>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    Pending,
    Generating,
    Checking,
    Running,
    Passed,
    Failed,
    /// A dependency failed; this node cannot run.
    Blocked,
    /// Out of iterations; failed for good.
    GaveUp,
    /// The person skipped its run: its code is kept, but nothing says it
    /// works. Never counted as passing; its dependents still run.
    Skipped,
    /// It was at work when the person cancelled the session.
    Cancelled,
    /// The session ended before its turn came (or while it waited).
    NotRun,
}

impl NodeStatus {
    pub fn label(self) -> &'static str {
        match self {
            NodeStatus::Pending => "pending",
            NodeStatus::Generating => "generating",
            NodeStatus::Checking => "checking",
            NodeStatus::Running => "running",
            NodeStatus::Passed => "passed",
            NodeStatus::Failed => "failed",
            NodeStatus::Blocked => "blocked",
            NodeStatus::GaveUp => "gave up",
            NodeStatus::Skipped => "skipped",
            NodeStatus::Cancelled => "cancelled",
            NodeStatus::NotRun => "not run",
        }
    }
    /// The node's part of a pass is over.
    pub fn is_terminal(self) -> bool {
        match self {
            NodeStatus::Passed
            | NodeStatus::Blocked
            | NodeStatus::GaveUp
            | NodeStatus::Skipped
            | NodeStatus::Cancelled
            | NodeStatus::NotRun => true,
            NodeStatus::Pending
            | NodeStatus::Generating
            | NodeStatus::Checking
            | NodeStatus::Running
            | NodeStatus::Failed => false,
        }
    }
    /// Its code may be used by the nodes that depend on it: it passed, or
    /// the person accepted it without a run (skipped).
    pub fn usable(self) -> bool {
        matches!(self, NodeStatus::Passed | NodeStatus::Skipped)
    }
    /// At work: the engine has taken it and not finished with it.
    pub fn in_flight(self) -> bool {
        matches!(
            self,
            NodeStatus::Pending
                | NodeStatus::Generating
                | NodeStatus::Checking
                | NodeStatus::Running
        )
    }
}

/// A step the engine can pause before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Step {
    ModelCall {
        purpose: Purpose,
    },
    Run {
        node: Option<String>,
        iteration: u32,
    },
    /// Replace a node's tests with the model's fix (approve applies it,
    /// skip rejects it).
    TestFix {
        node: String,
        iteration: u32,
        old: String,
        new: String,
        reason: String,
    },
    /// A model call's prompt, written and not yet sent (the person asked to
    /// see it, `Command::ReviewPrompt`): approve sends it (as edited, if it
    /// was), skip does not make the call.
    Prompt {
        purpose: Purpose,
        tag: String,
        messages: Vec<ChatMessage>,
    },
    /// A node's code was reviewed before it runs (its `Event::Review` is
    /// just before): approve runs it, skip sends it to a repair with the
    /// review's findings, unrun; an edit of the code or a hint meanwhile
    /// is taken as always.
    Review {
        node: String,
        iteration: u32,
    },
}

/// Steering: what the person at the keyboard asks of the engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Command {
    /// Pause before every model call and every run.
    SetStepMode {
        on: bool,
    },
    /// Do the step the engine is paused before.
    Approve,
    /// Skip the step the engine is paused before (a run counts as not run; a model call is not made).
    Skip,
    EditTask {
        task: String,
    },
    EditSpec {
        node: String,
        spec: FunctionSpec,
    },
    EditCode {
        node: String,
        code: String,
    },
    EditTests {
        node: String,
        code: String,
    },
    /// Goes into the node's next reflection and repair prompt.
    Hint {
        node: String,
        text: String,
    },
    /// Run this node's tests again (and then its dependents).
    RerunNode {
        node: String,
    },
    /// Stop the session; what is done stays on the tape.
    Cancel,
    /// Paused before a model call: go on, and pause again once its prompt
    /// is written (a `Step::Prompt`), so the person sees it and may edit it.
    ReviewPrompt,
    /// Paused before a prompt is sent (`Step::Prompt`): send these messages
    /// instead (the next approve sends them).
    EditPrompt {
        messages: Vec<ChatMessage>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeLevel {
    Info,
    Warning,
    Error,
}

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
