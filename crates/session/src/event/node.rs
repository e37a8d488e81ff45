//! The events of the plan and its nodes: the plan, tests, code (its check,
//! the candidates it was chosen from, the review before it runs), statuses,
//! a failure and the attempt after it, reflections; and what they carry.

use serde::{Deserialize, Serialize};

use super::{About, Delivers, Facts, PauseChange, Payload, Purpose};

use codeloop_protocol::Location;

use crate::consensus::Candidate;
use crate::review::{ReviewFinding, ReviewVerdict};

/// `Event::Plan`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanEvent {
    pub specs: Vec<FunctionSpec>,
}

impl Payload for PlanEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "plan",
            about: About::SESSION,
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Asked {
                node: None,
                asked_by: |p| matches!(p, Purpose::Plan),
            },
            uses: Delivers::Asked {
                node: None,
                asked_by: |p| matches!(p, Purpose::Plan),
            },
        }
    }
}

/// `Event::PlanError`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanErrorEvent {
    pub message: String,
}

impl Payload for PlanErrorEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "plan_error",
            about: About::SESSION,
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// `Event::Tests`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestsEvent {
    pub node: String,
    pub code: String,
    pub source: CodeSource,
}

impl Payload for TestsEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "tests",
            about: About::node(&self.node),
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::asked(&self.node, |p| matches!(p, Purpose::Tests { .. })),
            uses: if self.source.from_a_reply() {
                Delivers::asked(&self.node, |p| matches!(p, Purpose::Tests { .. }))
            } else {
                Delivers::Nothing
            },
        }
    }
}

/// `Event::Code`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeEvent {
    pub node: String,
    pub iteration: u32,
    pub code: String,
    pub source: CodeSource,
    /// What codeloop did, for a version it made (`Mended`: each mend;
    /// `Best`: why the version before was not kept), in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Payload for CodeEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "code",
            about: About::node(&self.node),
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::asked(&self.node, |p| {
                matches!(p, Purpose::Code { .. } | Purpose::Repair { .. })
            }),
            uses: match self.source {
                // Code instead of a plan: the plan's reply.
                CodeSource::PlanReply => Delivers::Asked {
                    node: None,
                    asked_by: |p| matches!(p, Purpose::Plan),
                },
                CodeSource::Model | CodeSource::Mended | CodeSource::Best => {
                    Delivers::asked(&self.node, |p| {
                        matches!(
                            p,
                            Purpose::Code { .. } | Purpose::Reflect { .. } | Purpose::Repair { .. }
                        )
                    })
                }
                CodeSource::Edit | CodeSource::Given | CodeSource::Cache => Delivers::Nothing,
            },
        }
    }
}

/// `Event::Check`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckEvent {
    pub node: String,
    pub iteration: u32,
    pub findings: Vec<Finding>,
}

impl Payload for CheckEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "check",
            about: About::node(&self.node),
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// `Event::NodeStatus`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeStatusEvent {
    pub node: String,
    pub status: NodeStatus,
}

impl Payload for NodeStatusEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "node_status",
            about: About {
                at_work: self.status != NodeStatus::Blocked,
                ..About::node(&self.node)
            },
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// `Event::Localized`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocalizedEvent {
    pub node: String,
    pub iteration: u32,
    pub location: Location,
}

impl Payload for LocalizedEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "localized",
            about: About::node(&self.node),
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// `Event::Attempt`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptEvent {
    pub node: String,
    pub iteration: u32,
    pub kind: AttemptKind,
    /// The prompt shows the runtime values at the failure.
    #[serde(default)]
    pub runtime_values: bool,
}

impl Payload for AttemptEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "attempt",
            about: About::node(&self.node),
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// `Event::Decision`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionEvent {
    pub node: String,
    /// The code version whose failure (or unusable reply) it answers.
    pub iteration: u32,
    pub next: Next,
    /// Why, in words for people ("3 versions failed since the last fresh
    /// start"): what History, `run` and the exports tell beside the step.
    pub reason: String,
}

impl Payload for DecisionEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "decision",
            about: About::node(&self.node),
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::Nothing,
            uses: Delivers::Nothing,
        }
    }
}

/// What the loop does next with a node whose version failed: the repair
/// policy's answer (the engine's `decide::next`), one kind a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum Next {
    /// Run it again: its code was replaced while it ran (the person's edit).
    Rerun,
    /// Put the best version so far back (`to`), which runs again.
    RollBack { to: u32 },
    /// Ask for new tests: the node's tests do not load.
    RewriteTests,
    /// Blame the test, not the code: a test of the model's that versions
    /// in a row failed alone, the same way, is set aside (the reason names
    /// it) and the first of those versions is judged again without it.
    SetAsideTest,
    /// Ask for the next version, of this kind.
    Attempt { kind: AttemptKind },
    /// Stop working on the node.
    GiveUp { why: GiveUpWhy },
}

/// Why the loop stopped working on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GiveUpWhy {
    /// It reached the iteration limit.
    Limit,
    /// codeloop could not judge it (its own error, not the code's).
    NotJudged,
    /// It has no tests: a repair would have nothing to go by.
    NoTests,
}

impl Next {
    /// The step in a word or two, as the story names it.
    pub fn label(self) -> &'static str {
        match self {
            Next::Rerun => "run again",
            Next::RollBack { .. } => "roll back",
            Next::RewriteTests => "new tests",
            Next::SetAsideTest => "set a test aside",
            Next::Attempt { kind } => kind.label(),
            Next::GiveUp { .. } => "give up",
        }
    }
}

/// `Event::TestsChanged`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestsChangedEvent {
    pub node: String,
    /// The iteration whose failure the model blamed on the tests.
    pub iteration: u32,
    pub old: String,
    pub new: String,
    pub reason: String,
    pub applied: bool,
    /// Why it was not applied, when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected_because: Option<String>,
}

impl Payload for TestsChangedEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "tests_changed",
            about: About::node(&self.node),
            streamed: false,
            pause: PauseChange::Keeps,
            // A repair that fixed the tests instead of the code.
            delivers: Delivers::asked(&self.node, |p| matches!(p, Purpose::Repair { .. })),
            uses: if self.applied {
                Delivers::asked(&self.node, |p| {
                    matches!(p, Purpose::Reflect { .. } | Purpose::Repair { .. })
                })
            } else {
                Delivers::Nothing
            },
        }
    }
}

/// `Event::Review`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewEvent {
    pub node: String,
    /// The code version reviewed.
    pub iteration: u32,
    pub verdict: ReviewVerdict,
    #[serde(default)]
    pub findings: Vec<ReviewFinding>,
    /// The model call that made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<u64>,
}

impl Payload for ReviewEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "review",
            about: About::node(&self.node),
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::asked(&self.node, |p| matches!(p, Purpose::Review { .. })),
            uses: // A review that names its call is that call's, wherever it is.
            match self.call_id {
                None => Delivers::asked(&self.node, |p| matches!(p, Purpose::Review { .. })),
                Some(_) => Delivers::Nothing,
            },
        }
    }
}

/// `Event::Candidates`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidatesEvent {
    pub node: String,
    pub iteration: u32,
    pub candidates: Vec<Candidate>,
    /// The inputs they were run on.
    pub inputs: u32,
    /// Of them, those the model proposed (the rest are its tests' calls).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub proposed: u32,
    pub chosen: usize,
    /// Why the first was kept without a vote (the run failed, no inputs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Payload for CandidatesEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "candidates",
            about: About::node(&self.node),
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::asked(&self.node, |p| matches!(p, Purpose::Inputs { .. })),
            uses: if self.proposed > 0 {
                Delivers::asked(&self.node, |p| matches!(p, Purpose::Inputs { .. }))
            } else {
                Delivers::Nothing
            },
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// `Event::Reflection`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReflectionEvent {
    pub node: String,
    pub iteration: u32,
    pub text: String,
}

impl Payload for ReflectionEvent {
    fn facts(&self) -> Facts<'_> {
        Facts {
            kind: "reflection",
            about: About::node(&self.node),
            streamed: false,
            pause: PauseChange::Keeps,
            delivers: Delivers::asked(&self.node, |p| matches!(p, Purpose::Reflect { .. })),
            uses: Delivers::Nothing,
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
    /// The function's head as the task gave it (its `def` line and
    /// docstring: a HumanEval prompt, a function the task names): the
    /// model's answer starts with it, and keeps its name and parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
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
    /// codeloop's mechanical mend of the version before it (indentation,
    /// top-level statements that do not parse, a function under another
    /// name): the same iteration, what ran instead of what the model wrote.
    /// Of tests: the model's, with one set aside as suspect.
    Mended,
    /// codeloop put back the best version so far (the one before passed
    /// fewer of the node's tests): the same iteration as the one it replaces.
    Best,
}

impl CodeSource {
    /// Made of a model's reply (as written, mended, or put back), not
    /// given, edited or replayed from the cache.
    pub fn from_a_reply(self) -> bool {
        match self {
            CodeSource::Model | CodeSource::PlanReply | CodeSource::Mended | CodeSource::Best => {
                true
            }
            CodeSource::Edit | CodeSource::Given | CodeSource::Cache => false,
        }
    }
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
