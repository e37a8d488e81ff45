//! The session state: a pure fold over the tape's events.
//!
//! Nothing here does I/O. The state after any prefix of the tape is exactly
//! what a view shows at that moment.
//!
//! Architecture Invariant: the tape is the only state that is stored. The
//! engine decides from a `State` folded from it and views draw from one;
//! anything that would be a second copy of a fact (a flag, a counter) is
//! folded from the tape here instead, so review, replay, resume and fork
//! are exact. Bounded too: a run's output kept in memory is at most
//! `OUTPUT_KEEP_BYTES` (the log on disk keeps it all).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

pub use super::entries::{Notice, Program, PromptEdit, Resume, RunPicture};
use super::event::*;
pub use super::parts::{
    CallState, CodeVersion, Failure, FoundIn, HistoryEntry, NodeState, RunState, SteerAt,
};
pub use super::pause::{pause_after, pause_at_end};
pub use super::repairs::{AttemptInfo, TestChange};
use super::review::ReviewInfo;
pub use super::segments::ParentSession;
use codeloop_protocol::Usage;

mod calls;
mod derived;
mod nodes;
mod runs;

pub use derived::ReflectionText;

/// Output kept per run in memory. Older bytes are dropped from the front
/// (the full stream is in the on-disk log).
pub const OUTPUT_KEEP_BYTES: usize = 256 * 1024;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct State {
    pub session_id: String,
    pub started_at: String,
    pub task: String,
    pub inputs: Vec<InputFile>,
    pub config: ConfigSummary,
    /// Planned functions, in plan order.
    pub specs: Vec<FunctionSpec>,
    pub plan_error: Option<String>,
    pub nodes: BTreeMap<String, NodeState>,
    pub calls: BTreeMap<u64, CallState>,
    /// Runs by id; ids count up in the order runs start, so this is also
    /// their order (`State::runs_in_order`).
    pub runs: BTreeMap<u64, RunState>,
    /// Iterations and reflections, in order: the history timeline. Its
    /// failures, reviews and commands are kept once, in `failures`,
    /// `reviews` and `steers`, and an entry names one by its place there.
    pub history: Vec<HistoryEntry>,
    /// Every localized failure, in order (a node's: `State::failures_of`).
    pub failures: Vec<Failure>,
    /// Every review before running, in order (a node's: `State::reviews_of`).
    pub reviews: Vec<ReviewInfo>,
    /// Every decision of the loop after a failure, in order, with its
    /// reason (the repair policy's steps, as the engine took them).
    pub decisions: Vec<DecisionEvent>,
    /// `failures.len()` when the last `Finished` was folded: the failures
    /// of the pass under way come after (`State::program_repairs`).
    pub failures_at_finish: usize,
    pub usage: Usage,
    /// Time spent waiting for model replies, milliseconds, summed over calls.
    pub model_ms: u64,
    /// What the engine is paused before, if it is.
    pub paused: Option<Step>,
    pub step_mode: bool,
    /// The person asked to see the next model call's prompt before it is
    /// sent (`Command::ReviewPrompt`): the engine pauses at a `Step::Prompt`.
    /// The purpose of the call it was asked for (parallel calls do not take it).
    pub prompt_review: Option<Purpose>,
    /// The prompt as the person edited it, for the call about to be made
    /// (its purpose: a parallel call does not take it).
    pub prompt_edit: Option<PromptEdit>,
    pub notices: Vec<Notice>,
    pub steers: Vec<Command>,
    pub program: Option<Program>,
    /// What the program printed through its entry point, when it has one.
    pub program_output: Option<ProgramOutput>,
    /// The pictures runs left, in order, with the run that left each (None:
    /// the program's run through its entry point).
    pub pictures: Vec<RunPicture>,
    pub finished: Option<FinalResult>,
    /// The session this one was forked from, if it is a fork.
    pub parent: Option<ParentSession>,
    /// Where each resumed segment began.
    pub resumes: Vec<Resume>,
    /// Tokens the session may have used in all by the end of the current
    /// segment, as its `Resumed` event set it; 0 = none set (no limit, or the
    /// first segment's, which the tape does not keep).
    pub token_budget: u64,
    /// The task was edited since the last plan: the engine plans again.
    pub replan: bool,
    /// The person cancelled the session (this segment of it: a resume
    /// goes on).
    pub cancelled: bool,
    /// Number of events folded in.
    pub events_applied: u64,
    /// Time offset of the last event folded in.
    pub t_ms: u64,
}

impl State {
    /// Fold one event in.
    pub fn apply(&mut self, record: &Record) {
        self.events_applied += 1;
        self.t_ms = record.t_ms;
        match &record.event {
            // Model calls (`state/calls.rs`).
            Event::ModelRequest(e) => self.fold_request(e, record.t_ms),
            Event::ModelDelta(e) => self.fold_delta(e),
            Event::ModelReasoning(e) => self.fold_reasoning(e),
            Event::ModelRestart(e) => self.fold_restart(e),
            Event::ModelContinued(e) => self.fold_continued(e),
            Event::ModelReply(e) => self.fold_reply(e),
            Event::ModelError(e) => self.fold_model_error(e),
            // The plan and its nodes (`state/nodes.rs`).
            Event::Plan(e) => self.fold_plan(e),
            Event::PlanError(e) => self.fold_plan_error(e),
            Event::Tests(e) => self.fold_tests(e),
            Event::TestsChanged(e) => self.fold_tests_changed(e),
            Event::Code(e) => self.fold_code(e),
            Event::Check(e) => self.fold_check(e),
            Event::Candidates(e) => self.fold_candidates(e),
            Event::Review(e) => self.fold_review(e),
            Event::NodeStatus(e) => self.fold_status(&e.node, e.status),
            Event::Localized(e) => self.fold_localized(e),
            Event::Attempt(e) => self.fold_attempt(e),
            Event::Decision(e) => {
                self.history.push(HistoryEntry::Decision {
                    decision: self.decisions.len(),
                });
                self.decisions.push(e.clone());
            }
            Event::Reflection(e) => self.fold_reflection(e),
            // Runs and the program (`state/runs.rs`).
            Event::RunStarted(e) => self.fold_run_started(e),
            Event::Output(e) => self.fold_output(e),
            Event::RunFinished(e) => self.fold_run_finished(e),
            Event::Program(e) => self.fold_program(e),
            Event::ProgramOutput(e) => self.program_output = Some(e.output.clone()),
            Event::Picture(e) => self.pictures.push(RunPicture {
                run_id: e.run_id,
                picture: e.picture.clone(),
            }),
            // The session's own.
            Event::SessionStarted(e) => {
                self.session_id = e.session_id.clone();
                self.started_at = e.started_at.clone();
                self.task = e.task.clone();
                self.inputs = e.inputs.clone();
                self.step_mode = e.config.step_mode;
                self.config = e.config.clone();
            }
            Event::Paused(_) => {}
            Event::Steer(e) => self.steer(&e.command),
            Event::Notice(e) => self.notices.push(Notice {
                level: e.level,
                message: e.message.clone(),
            }),
            Event::Finished(e) => {
                self.finished = Some(e.result.clone());
                self.failures_at_finish = self.failures.len();
                self.settle_unfinished_nodes();
            }
            Event::Forked(e) => {
                self.parent = Some(ParentSession {
                    session_id: e.parent_id.clone(),
                    tape: e.parent_tape.clone(),
                    at_seq: e.at_seq,
                });
            }
            Event::Resumed(e) => self.resume(record.seq, &e.after, &e.config, e.token_budget),
        }
        if let Some(paused) = pause_after(self.paused.as_ref(), &record.event) {
            self.paused = paused.cloned();
        }
        self.spend_prompt_edit(&record.event);
    }

    /// A prompt edit holds for the call it was made for and for that call's
    /// retries (the plan asked again after an unusable reply): it is spent
    /// once what the call asks for arrives, or the session ends.
    fn spend_prompt_edit(&mut self, event: &Event) {
        let Some(PromptEdit { purpose, .. }) = &self.prompt_edit else {
            return;
        };
        let spent = event.facts().delivers.answers(purpose);
        if spent {
            self.prompt_edit = None;
        }
    }

    /// Fold a whole sequence of records into a fresh state.
    pub fn from_records<'a>(records: impl IntoIterator<Item = &'a Record>) -> State {
        let mut state = State::default();
        for r in records {
            state.apply(r);
        }
        state
    }

    /// Nodes in plan order.
    pub fn nodes_in_order(&self) -> impl Iterator<Item = &NodeState> {
        self.specs.iter().filter_map(|s| self.nodes.get(&s.name))
    }

    /// The id the next model call gets (ids count up from 1 in call order).
    pub fn next_call_id(&self) -> u64 {
        self.calls.last_key_value().map_or(1, |(id, _)| id + 1)
    }

    /// The id the next run gets (ids count up from 1 in run order).
    pub fn next_run_id(&self) -> u64 {
        self.runs.last_key_value().map_or(1, |(id, _)| id + 1)
    }

    /// Nodes asked to run again once the pass under way is over.
    pub fn rerun_queue(&self) -> BTreeSet<String> {
        self.nodes
            .values()
            .filter(|n| n.queued)
            .map(|n| n.spec.name.clone())
            .collect()
    }

    /// Whether a notice beginning with `opening` was given.
    pub fn noticed(&self, opening: &str) -> bool {
        self.notices.iter().any(|n| n.message.starts_with(opening))
    }

    /// Total repair iterations so far: code versions beyond each node's
    /// first that the model wrote (the person's own edits are not repairs).
    pub fn repair_iterations(&self) -> u32 {
        self.nodes
            .values()
            .flat_map(|n| n.versions.iter().skip(1))
            .filter(|v| match v.source {
                CodeSource::Model | CodeSource::PlanReply => true,
                CodeSource::Edit
                | CodeSource::Cache
                | CodeSource::Given
                | CodeSource::Mended
                | CodeSource::Best => false,
            })
            .count() as u32
    }
}
