//! The events of a session tape, and the steering commands that appear on it.
//!
//! Every type here is plain data: serde in, serde out. The engine produces
//! events, the tape stores them, `State::apply` folds them.
//!
//! Each variant of `Event` carries a named payload struct (`Event::Code(CodeEvent)`),
//! so a consumer's family function takes the one payload it handles.
//!
//! Architecture Invariant: an event is answered in three places: its
//! payload's `impl Payload` (its tag, what it is about, whether it is a
//! streamed piece, how it changes a pause, what an edited prompt asked for
//! that it delivers: `event/facts.rs`, a struct with no default), its arm
//! of the fold (`State::apply`) and its arm of the story (`story::tell`).
//! Those two matches and `Event::facts` (one line a variant) name every
//! variant, no `_ =>` arm, so a new event does not compile until each says
//! what it does with it. Every other rule asks the facts, never the
//! variants: the tape's flush, the pause, a prompt edit spent, the node a
//! cursor follows, the player's scope (a fork point in words is the
//! story's line). Picking one kind out (`if let`, `matches!`) is not such
//! a match.
//!
//! The payloads live with their family: the session's own (`session.rs`),
//! model calls (`model.rs`), the plan and its nodes (`node.rs`), runs and
//! the program (`run.rs`); steering in `steer.rs`; each payload's
//! `impl Payload` just below it.
//!
//! The JSON is serde's internally tagged enum (`"type"`), each payload's
//! fields beside the tag: the same as when the variants held their fields
//! inline (`crates/session/tests/tapes.rs` reads back every tape in the
//! repository).

use serde::{Deserialize, Serialize};

mod facts;
mod model;
mod node;
mod run;
mod session;
mod steer;

pub use facts::*;
pub use model::*;
pub use node::*;
pub use run::*;
pub use session::*;
pub use steer::*;

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
    SessionStarted(SessionStartedEvent),
    /// A chat request sent to the model (the full prompt, never any secret).
    ModelRequest(ModelRequestEvent),
    /// A piece of a streamed reply. Deltas may be coalesced.
    ModelDelta(ModelDeltaEvent),
    /// A piece of the model's reasoning, streamed apart from its answer
    /// (`<think>` blocks, `reasoning_content` fields): never code or plan.
    ModelReasoning(ModelReasoningEvent),
    /// Everything streamed so far for this call is void (the stream broke
    /// and the call was made again, or the reply turned out to have begun
    /// inside a reasoning block); the pieces that follow replace it.
    ModelRestart(ModelRestartEvent),
    /// The reply was cut off at the model's token limit and the model is
    /// asked to go on where it stopped: the pieces that follow extend it.
    ModelContinued(ModelContinuedEvent),
    /// The whole reply, once the stream ended.
    ModelReply(ModelReplyEvent),
    /// The call failed for good (after retries).
    ModelError(ModelErrorEvent),
    /// The plan: function specs forming a DAG (validated).
    Plan(PlanEvent),
    /// The plan could not be used (cycle, unknown dependency, unparsable reply).
    PlanError(PlanErrorEvent),
    /// The test code of one node (replaces any earlier tests of that node).
    Tests(TestsEvent),
    /// A code version of one node. `iteration` starts at 1.
    Code(CodeEvent),
    /// Static-check findings (syntax, imports, definitions) for a code
    /// version. A syntax error or a missing or repeated definition is the
    /// version's failure (it is not run); the others are notes.
    Check(CheckEvent),
    /// A sandboxed run began.
    RunStarted(RunStartedEvent),
    /// A chunk of a run's output, as it arrived (control sequences kept; views strip them).
    Output(OutputEvent),
    /// A run ended.
    RunFinished(RunFinishedEvent),
    /// A node changed state.
    NodeStatus(NodeStatusEvent),
    /// A failure, localized.
    Localized(LocalizedEvent),
    /// The next code version of a node is about to be asked for after a
    /// failure: which kind of attempt it is, and what its prompt holds.
    /// `iteration` is the version it will write.
    Attempt(AttemptEvent),
    /// What the loop does after a failure, and why (the repair policy's
    /// decision): the step that follows is that one.
    Decision(DecisionEvent),
    /// The model's verdict that the tests, not the code, are wrong, and the
    /// tests it proposes: applied at once, or (step mode) when the person
    /// approves. `applied` false: rejected (by the person, or because the new
    /// tests drop assertions or contradict the task's own examples).
    TestsChanged(TestsChangedEvent),
    /// The review before running (`review = true`): the model's verdict on
    /// a node's code version against the task, its spec and its tests,
    /// after the static check and before the run. Advisory: a serious
    /// finding sends the code to a repair unrun only where the profile says
    /// so (`review_repairs`), with a `Localized` failure of `error_type`
    /// "Review". A reply that could not be read is a notice, not this.
    Review(ReviewEvent),
    /// Functional consensus (`--candidates N`): a node's first code
    /// written several times, each candidate run on the inputs of its
    /// tests; `chosen` (the one agreeing with the most others) becomes
    /// the `Code` of `iteration` that follows.
    Candidates(CandidatesEvent),
    /// The model's reflection on a failure, before the repair.
    Reflection(ReflectionEvent),
    /// The engine is paused (step mode) before a step; it waits for a command.
    Paused(PausedEvent),
    /// A steering command from the person at the keyboard.
    Steer(SteerEvent),
    /// A warning or notice worth showing (sandbox degraded, cache hit, budget).
    Notice(NoticeEvent),
    /// The assembled program.
    Program(ProgramEvent),
    /// The assembled program run as a program, through its entry point
    /// (`main`): what it printed, the result the task asked for.
    ProgramOutput(ProgramOutputEvent),
    /// An image file a run left in its working directory (a chart the
    /// program drew), copied into the session's folder (`picture.path`).
    Picture(PictureEvent),
    /// Last event of a completed session (a segment of one, when it is resumed).
    Finished(FinishedEvent),
    /// This tape is a fork: the records before this one are its parent's,
    /// copied up to `at_seq` (their numbers and times kept), and the session
    /// goes on from there on its own.
    Forked(ForkedEvent),
    /// The session goes on live from the state folded from every record
    /// before this one: a new segment of the same history (after a kill, a
    /// cancel, a limit, or a fork). Nothing done before is asked or run again.
    Resumed(ResumedEvent),
}

impl Event {
    /// What the event says of itself (its tag, what it is about, how it
    /// flows and pauses): its payload's answer. The one match over events
    /// in this file.
    pub fn facts(&self) -> Facts<'_> {
        match self {
            Event::SessionStarted(e) => e.facts(),
            Event::ModelRequest(e) => e.facts(),
            Event::ModelDelta(e) => e.facts(),
            Event::ModelReasoning(e) => e.facts(),
            Event::ModelRestart(e) => e.facts(),
            Event::ModelContinued(e) => e.facts(),
            Event::ModelReply(e) => e.facts(),
            Event::ModelError(e) => e.facts(),
            Event::Plan(e) => e.facts(),
            Event::PlanError(e) => e.facts(),
            Event::Tests(e) => e.facts(),
            Event::Code(e) => e.facts(),
            Event::Check(e) => e.facts(),
            Event::RunStarted(e) => e.facts(),
            Event::Output(e) => e.facts(),
            Event::RunFinished(e) => e.facts(),
            Event::NodeStatus(e) => e.facts(),
            Event::Localized(e) => e.facts(),
            Event::Attempt(e) => e.facts(),
            Event::Decision(e) => e.facts(),
            Event::TestsChanged(e) => e.facts(),
            Event::Review(e) => e.facts(),
            Event::Candidates(e) => e.facts(),
            Event::Reflection(e) => e.facts(),
            Event::Paused(e) => e.facts(),
            Event::Steer(e) => e.facts(),
            Event::Notice(e) => e.facts(),
            Event::Program(e) => e.facts(),
            Event::ProgramOutput(e) => e.facts(),
            Event::Picture(e) => e.facts(),
            Event::Finished(e) => e.facts(),
            Event::Forked(e) => e.facts(),
            Event::Resumed(e) => e.facts(),
        }
    }

    /// A short name for the event kind, for logs and review headings: the
    /// tag the tape writes.
    pub fn kind(&self) -> &'static str {
        self.facts().kind
    }
}
