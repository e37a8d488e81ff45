//! The parts of a session's state: each node, each model call, each run,
//! and the history of iterations, as `State::apply` folds them.

use std::collections::VecDeque;

use super::event::*;
use super::repairs::{AttemptInfo, TestChange};
use super::state::OUTPUT_KEEP_BYTES;
use codeloop_protocol::{ChatMessage, Location, Stream, Usage};

#[derive(Debug, Clone, PartialEq)]
pub struct NodeState {
    pub spec: FunctionSpec,
    pub status: NodeStatus,
    pub tests: Option<String>,
    /// Every code version, oldest first.
    pub versions: Vec<CodeVersion>,
    /// The most recent run of this node.
    pub last_run: Option<u64>,
    /// Its failures, oldest first: their places in `State::failures`,
    /// where each is kept once (`State::failures_of`).
    pub(crate) failures: Vec<usize>,
    /// The most recent of them, until the node passes
    /// (`State::last_failure`).
    pub(crate) last_failure: Option<usize>,
    /// How many times the node's tests were set (written, edited, fixed).
    pub(crate) tests_version: u32,
    /// The node's tests are the model's own (written by it, or replayed
    /// from the cache), not given with the task or by the person.
    pub tests_by_model: bool,
    /// The person skipped the run the engine was paused before; the status
    /// that follows is read as `Skipped` (tapes from before that status
    /// recorded a skipped run as passed).
    pub(super) run_skipped: bool,
    pub findings: Vec<Finding>,
    pub hints: Vec<String>,
    /// The attempts after a failure, oldest first: the iteration each one
    /// wrote, its kind (repair, fresh start), whether its prompt held runtime values.
    pub attempts: Vec<AttemptInfo>,
    /// Test changes the model proposed, applied or not, oldest first.
    pub test_changes: Vec<TestChange>,
    /// The reviews before running (`review = true`), oldest first: their
    /// places in `State::reviews`, where each is kept once
    /// (`State::reviews_of`).
    pub(crate) reviews: Vec<usize>,
    /// The candidates its first code was chosen from (`--candidates N`).
    pub candidates: Option<super::consensus::CandidatesInfo>,
    /// Asked to run again once the pass under way is over: a re-run, or an
    /// edit of code or tests that arrived while the node was not being worked
    /// on (a node at work picks its edits up by itself). A pass taking it
    /// sets it back to pending, which clears this.
    pub queued: bool,
    /// The run that ran the node's current code against its current tests,
    /// once it finished (cleared by new code, new tests, a new run or a re-run).
    pub(crate) settled_run: Option<u64>,
    /// At a resume, the settled run the node carries over: its verdict is
    /// used instead of running the same code again. Used once: cleared when
    /// the node gets new code or tests, runs, or ends its part of a pass.
    pub carried_run: Option<u64>,
    /// The person approved the run the engine was paused before and it has
    /// not run yet: code they edited while it waited runs once checked,
    /// unasked again (on the tape, so a resume keeps it). Cleared by the
    /// run, or by new code from anyone but the person.
    pub run_approved: bool,
}

impl NodeState {
    pub(super) fn new(spec: FunctionSpec) -> Self {
        NodeState {
            spec,
            status: NodeStatus::Pending,
            tests: None,
            versions: Vec::new(),
            last_run: None,
            failures: Vec::new(),
            last_failure: None,
            tests_version: 0,
            tests_by_model: false,
            run_skipped: false,
            findings: Vec::new(),
            hints: Vec::new(),
            attempts: Vec::new(),
            test_changes: Vec::new(),
            reviews: Vec::new(),
            candidates: None,
            queued: false,
            settled_run: None,
            carried_run: None,
            run_approved: false,
        }
    }

    /// New code or tests: what ran before no longer tells how the node fares.
    pub(super) fn unsettle(&mut self) {
        self.settled_run = None;
        self.carried_run = None;
    }

    /// The latest code, if any.
    pub fn code(&self) -> Option<&str> {
        self.versions.last().map(|v| v.code.as_str())
    }

    /// The current iteration number (0 before any code).
    pub fn iteration(&self) -> u32 {
        self.versions.last().map(|v| v.iteration).unwrap_or(0)
    }

    /// The version of the node shown now: its latest code and tests.
    pub(crate) fn version(&self) -> FoundIn {
        FoundIn {
            iteration: self.iteration(),
            tests: self.tests_version,
        }
    }

    /// New tests (written, edited, or a fix applied).
    pub(super) fn set_tests(&mut self, code: &str) {
        self.tests = Some(code.to_string());
        self.tests_version += 1;
        self.unsettle();
    }

    /// An edit of this node queues it to run again unless the node is being
    /// worked on (not yet passed, blocked or given up), which runs the edit anyway.
    pub(super) fn queue_edit(&mut self) {
        if self.status.is_terminal() {
            self.queued = true;
        }
    }
}

/// A version of a node: its code iteration and its tests' version.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FoundIn {
    pub(crate) iteration: u32,
    pub(crate) tests: u32,
}

/// A failure, localized (`Event::Localized`). The fold keeps each once, in
/// `State::failures`; its node and the history refer to it by its place
/// there.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub node: String,
    /// The code version that failed.
    pub iteration: u32,
    /// The node's latest run when it was localized (None before any): the
    /// run it came from, unless `in_program`.
    pub run: Option<u64>,
    /// Found in the assembled program: the node's own tests had passed on
    /// this version of its code and tests (`State::program_repairs`).
    pub in_program: bool,
    /// The code and tests it was found with: it belongs to that version
    /// and is drawn on its lines only.
    pub(crate) found: FoundIn,
    pub location: Location,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CodeVersion {
    pub iteration: u32,
    pub code: String,
    pub source: CodeSource,
    /// What codeloop did, for a version it made (its mends, or why the
    /// version before was not kept).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CallState {
    pub purpose: Purpose,
    pub messages: Vec<ChatMessage>,
    /// The reply so far (complete once `done`).
    pub reply: String,
    pub done: bool,
    pub error: Option<String>,
    pub usage: Option<Usage>,
    /// The model's reasoning, apart from its reply (streamed, then whole).
    pub reasoning: String,
    /// Why the reply ended, when not a plain stop ("length", ...).
    pub finish_reason: Option<String>,
    /// The usage was estimated, not reported by the model.
    pub usage_estimated: bool,
    /// The request's tag ("code/parse_line/1").
    pub tag: String,
    /// The person edited the prompt before it was sent (`Command::EditPrompt`).
    pub edited: bool,
    /// When the request was made (ms since the session started).
    pub started_ms: u64,
    /// Time the whole reply took, once it came.
    pub duration_ms: Option<u64>,
    /// Why the reply started again, each time it did (what was streamed before is void).
    pub restarts: Vec<String>,
    /// Times the reply was cut off at the token limit and continued.
    pub continuations: u32,
    /// How the reply's schema was asked of the server, when it had one.
    pub structured: Option<String>,
    /// codeloop stopped the reply once its job was done: why, in words.
    pub stopped: Option<String>,
    /// How the server took the answer's start the request gave, if any.
    pub prefilled: Option<String>,
}

impl CallState {
    /// A call just asked for (`purpose`, `messages`, `tag`, at `started_ms`),
    /// nothing of its reply yet.
    pub fn asked(
        purpose: Purpose,
        messages: Vec<ChatMessage>,
        tag: String,
        started_ms: u64,
    ) -> Self {
        CallState {
            purpose,
            messages,
            reply: String::new(),
            done: false,
            error: None,
            usage: None,
            reasoning: String::new(),
            finish_reason: None,
            usage_estimated: false,
            tag,
            edited: false,
            started_ms,
            duration_ms: None,
            restarts: Vec::new(),
            continuations: 0,
            structured: None,
            stopped: None,
            prefilled: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunState {
    pub node: Option<String>,
    pub iteration: u32,
    pub kind: RunKind,
    /// The node's code version that ran (its index in `versions`) and the
    /// version of its tests, as they were when the run started.
    pub version: Option<usize>,
    pub tests_version: u32,
    /// Output chunks in arrival order, bounded by `OUTPUT_KEEP_BYTES`.
    pub chunks: VecDeque<(Stream, String)>,
    pub kept_bytes: usize,
    /// Bytes dropped from the front of `chunks` to stay within the bound.
    pub dropped_bytes: u64,
    pub record: Option<RunRecord>,
    /// It ended after the person's cancel: one that did not pass was
    /// stopped, not failed (kept with the run, so a later cancel does not
    /// reword earlier failures).
    pub cancelled: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum HistoryEntry {
    /// A code version was written (iteration N of a node).
    Attempt {
        node: String,
        iteration: u32,
        source: CodeSource,
    },
    /// A run of a node ended.
    RunResult {
        node: Option<String>,
        iteration: u32,
        run_id: u64,
        passed: bool,
    },
    /// A failure, localized: its place in `State::failures`.
    Failure { failure: usize },
    /// A reflection. Its text as it reads now is `State::reflection`'s:
    /// the reply of its call (`call_id`) while the model streams it, then
    /// what the engine recorded.
    Reflection {
        node: String,
        iteration: u32,
        /// The `Reflect` call that writes it; None for one recorded without
        /// a call the tape holds.
        call_id: Option<u64>,
        /// The reflection as the engine recorded it (`Event::Reflection`:
        /// the prose before the code); None until then.
        recorded: Option<String>,
    },
    /// A command of the person's: its place in `State::steers`.
    Steer {
        steer: usize,
        /// A skip that answered the review's pause: the code went to a
        /// repair unrun (not a step left out).
        review_skip: bool,
        /// Where the command came: the node it is about (its own, or
        /// the one whose step the engine was paused before), that node's
        /// iteration then, and the call whose prompt was paused before.
        at: SteerAt,
    },
    /// The review of a code version before it ran: its place in
    /// `State::reviews`.
    Review { review: usize },
    /// What the loop decided after a failure: its place in
    /// `State::decisions`.
    Decision { decision: usize },
}

/// Where a command of the person's came, in a node's iterations: the
/// exports show each steering act at its place.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SteerAt {
    pub node: Option<String>,
    /// The node's latest code version when the command came (0: none yet).
    pub iteration: u32,
    /// The tag of the call paused before at its prompt (an edited prompt's).
    pub tag: Option<String>,
}

impl RunState {
    pub(super) fn push_output(&mut self, stream: Stream, text: &str) {
        self.kept_bytes += text.len();
        self.chunks.push_back((stream, text.to_string()));
        while self.kept_bytes > OUTPUT_KEEP_BYTES && self.chunks.len() > 1 {
            if let Some((_, old)) = self.chunks.pop_front() {
                self.kept_bytes -= old.len();
                self.dropped_bytes += old.len() as u64;
            }
        }
    }

    /// Output of one stream, concatenated.
    pub fn text(&self, stream: Stream) -> String {
        self.chunks
            .iter()
            .filter(|(s, _)| *s == stream)
            .map(|(_, t)| t.as_str())
            .collect()
    }
}
