//! The session state: a pure fold over the tape's events.
//!
//! Nothing here does I/O. The state after any prefix of the tape is exactly
//! what a view shows at that moment.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::event::*;
pub use super::parts::{CallState, CodeVersion, FoundIn, HistoryEntry, NodeState, RunState};
pub use super::pause::pause_after;
pub use super::repairs::{AttemptInfo, TestChange};
pub use super::segments::ParentSession;
use codeloop_protocol::Usage;

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
    pub runs: BTreeMap<u64, RunState>,
    /// Runs in the order they started.
    pub run_order: Vec<u64>,
    /// Iterations and reflections, in order: the history timeline.
    pub history: Vec<HistoryEntry>,
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
    pub prompt_edit: Option<(Purpose, Vec<codeloop_protocol::ChatMessage>)>,
    pub notices: Vec<(NoticeLevel, String)>,
    pub steers: Vec<Command>,
    pub program: Option<(String, String)>,
    /// What the program printed through its entry point, when it has one.
    pub program_output: Option<ProgramOutput>,
    pub finished: Option<FinalResult>,
    /// The session this one was forked from, if it is a fork.
    pub parent: Option<ParentSession>,
    /// Where each resumed segment began: the `Resumed` record's seq and how
    /// the segment before it ended.
    pub resumes: Vec<(u64, String)>,
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
            Event::SessionStarted {
                session_id,
                started_at,
                task,
                inputs,
                config,
                ..
            } => {
                self.session_id = session_id.clone();
                self.started_at = started_at.clone();
                self.task = task.clone();
                self.inputs = inputs.clone();
                self.step_mode = config.step_mode;
                self.config = config.clone();
            }
            Event::ModelRequest {
                call_id,
                purpose,
                messages,
                tag,
            } => {
                if let Some(node) = purpose.node().and_then(|n| self.nodes.get_mut(n)) {
                    node.streaming = Some(String::new());
                }
                if let Purpose::Reflect { node } = purpose {
                    let iteration = self.nodes.get(node).map(|n| n.iteration()).unwrap_or(0);
                    self.history.push(HistoryEntry::Reflection {
                        node: node.clone(),
                        iteration,
                        call_id: Some(*call_id),
                        text: String::new(),
                        done: false,
                    });
                }
                self.calls.insert(
                    *call_id,
                    CallState {
                        purpose: purpose.clone(),
                        messages: messages.clone(),
                        reply: String::new(),
                        done: false,
                        error: None,
                        usage: None,
                        reasoning: String::new(),
                        finish_reason: None,
                        usage_estimated: false,
                        tag: tag.clone(),
                        // The edit holds for this call and its retries.
                        edited: self.prompt_edit.as_ref().is_some_and(|(p, _)| p == purpose),
                        started_ms: record.t_ms,
                        duration_ms: None,
                        restarts: Vec::new(),
                        continuations: 0,
                        structured: None,
                    },
                );
                self.prompt_review = None;
            }
            Event::ModelDelta { call_id, text } => {
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.reply.push_str(text);
                    if let Some(node) = call.purpose.node().and_then(|n| self.nodes.get_mut(n)) {
                        node.streaming
                            .get_or_insert_with(String::new)
                            .push_str(text);
                    }
                }
                if let Some(HistoryEntry::Reflection { text: t, .. }) =
                    self.reflection_for_call(*call_id)
                {
                    t.push_str(text);
                }
            }
            Event::ModelReasoning { call_id, text } => {
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.reasoning.push_str(text);
                }
            }
            Event::ModelRestart { call_id, reason } => {
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.restarts.push(reason.clone());
                    call.reply.clear();
                    call.reasoning.clear();
                    if let Some(node) = call.purpose.node().and_then(|n| self.nodes.get_mut(n)) {
                        node.streaming = None;
                    }
                }
                if let Some(HistoryEntry::Reflection { text: t, .. }) =
                    self.reflection_for_call(*call_id)
                {
                    t.clear();
                }
            }
            Event::ModelContinued { call_id } => {
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.continuations += 1;
                }
            }
            Event::ModelReply {
                call_id,
                text,
                usage,
                reasoning,
                finish_reason,
                usage_estimated,
                duration_ms,
                structured,
            } => {
                self.model_ms += duration_ms;
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.reply = text.clone();
                    call.done = true;
                    call.usage = *usage;
                    call.reasoning = reasoning.clone();
                    call.finish_reason = finish_reason.clone();
                    call.usage_estimated = *usage_estimated;
                    call.duration_ms = Some(*duration_ms);
                    call.structured = structured.clone();
                    if let Some(node) = call.purpose.node().and_then(|n| self.nodes.get_mut(n)) {
                        node.streaming = None;
                    }
                }
                if let Some(u) = usage {
                    self.usage.prompt_tokens += u.prompt_tokens;
                    self.usage.completion_tokens += u.completion_tokens;
                }
                if let Some(HistoryEntry::Reflection { text: t, done, .. }) =
                    self.reflection_for_call(*call_id)
                {
                    *t = text.clone();
                    *done = true;
                }
            }
            Event::ModelError {
                call_id,
                message,
                usage,
            } => {
                if let Some(u) = usage {
                    self.usage.prompt_tokens += u.prompt_tokens;
                    self.usage.completion_tokens += u.completion_tokens;
                }
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.done = true;
                    call.error = Some(message.clone());
                    call.usage = *usage;
                    if let Some(node) = call.purpose.node().and_then(|n| self.nodes.get_mut(n)) {
                        node.streaming = None;
                    }
                }
            }
            Event::Plan { specs } => {
                self.specs = specs.clone();
                self.plan_error = None;
                // Keep what is known of nodes that survive a re-plan.
                let mut nodes = BTreeMap::new();
                for spec in specs {
                    // A re-plan (the task was edited) keeps the tests and code
                    // of a node whose spec did not change; a changed one starts afresh.
                    let node = match self.nodes.remove(&spec.name) {
                        // One the last pass never got to is work for the next.
                        Some(mut n) if n.spec == *spec => {
                            if matches!(n.status, NodeStatus::NotRun | NodeStatus::Cancelled) {
                                n.status = NodeStatus::Pending;
                            }
                            n
                        }
                        Some(_) | None => NodeState::new(spec.clone()),
                    };
                    nodes.insert(spec.name.clone(), node);
                }
                self.nodes = nodes;
                self.replan = false;
            }
            Event::PlanError { message } => {
                self.plan_error = Some(message.clone());
                self.replan = false;
            }
            Event::Tests { node, code, .. } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.set_tests(code);
                }
            }
            Event::Code {
                node,
                iteration,
                code,
                source,
            } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.versions.push(CodeVersion {
                        iteration: *iteration,
                        code: code.clone(),
                        source: *source,
                    });
                    n.streaming = None;
                    n.findings.clear();
                    n.unsettle();
                    if *source == CodeSource::Edit {
                        n.queue_edit();
                    }
                }
                self.history.push(HistoryEntry::Attempt {
                    node: node.clone(),
                    iteration: *iteration,
                    source: *source,
                });
            }
            Event::Check { node, findings, .. } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.findings = findings.clone();
                }
            }
            Event::RunStarted {
                run_id,
                node,
                iteration,
                kind,
            } => {
                if let Some(n) = node.as_ref().and_then(|n| self.nodes.get_mut(n)) {
                    n.last_run = Some(*run_id);
                    n.unsettle();
                }
                self.runs.insert(
                    *run_id,
                    RunState {
                        node: node.clone(),
                        iteration: *iteration,
                        kind: *kind,
                        chunks: VecDeque::new(),
                        kept_bytes: 0,
                        dropped_bytes: 0,
                        record: None,
                    },
                );
                self.run_order.push(*run_id);
            }
            Event::Output {
                run_id,
                stream,
                text,
            } => {
                if let Some(run) = self.runs.get_mut(run_id) {
                    run.push_output(*stream, text);
                }
            }
            Event::RunFinished { run_id, record } => {
                if let Some(run) = self.runs.get_mut(run_id) {
                    // A run the program ended (an exit, a signal, a limit) is a
                    // verdict on the code; one cancelled, or that the sandbox
                    // could not start, is not: a resume runs it again.
                    let verdict = record.exit_code.is_some()
                        || record.signal.is_some()
                        || record.limit_hit.is_some();
                    if let Some(n) = run.node.as_ref().and_then(|n| self.nodes.get_mut(n))
                        && n.iteration() == run.iteration
                        && verdict
                    {
                        n.settled_run = Some(*run_id);
                    }
                    run.record = Some(record.clone());
                    self.history.push(HistoryEntry::RunResult {
                        node: run.node.clone(),
                        iteration: run.iteration,
                        run_id: *run_id,
                        passed: record.passed,
                    });
                }
            }
            Event::NodeStatus { node, status } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.status = match status {
                        // A tape from before `Skipped` says a skipped run passed.
                        NodeStatus::Passed if n.run_skipped => NodeStatus::Skipped,
                        _ => *status,
                    };
                    n.run_skipped = false;
                    let status = n.status;
                    if status.is_terminal() {
                        n.carried_run = None;
                    }
                    match status {
                        NodeStatus::Passed => n.last_error = None,
                        // A pass has taken the node.
                        NodeStatus::Pending => n.queued = false,
                        NodeStatus::Generating
                        | NodeStatus::Checking
                        | NodeStatus::Running
                        | NodeStatus::Failed
                        | NodeStatus::Blocked
                        | NodeStatus::GaveUp
                        | NodeStatus::Skipped
                        | NodeStatus::Cancelled
                        | NodeStatus::NotRun => {}
                    }
                }
            }
            Event::Localized {
                node,
                iteration,
                location,
            } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.last_error = Some(location.clone());
                    n.last_error_found = FoundIn {
                        iteration: *iteration,
                        tests: n.tests_version,
                    };
                }
                self.history.push(HistoryEntry::Failure {
                    node: node.clone(),
                    iteration: *iteration,
                    location: location.clone(),
                });
            }
            Event::Attempt {
                node,
                iteration,
                kind,
                runtime_values,
            } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.attempts.push(AttemptInfo {
                        iteration: *iteration,
                        kind: *kind,
                        runtime_values: *runtime_values,
                    });
                }
            }
            Event::TestsChanged {
                node,
                iteration,
                old,
                new,
                reason,
                applied,
                rejected_because,
            } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    if *applied {
                        n.set_tests(new);
                    }
                    n.test_changes.push(TestChange {
                        iteration: *iteration,
                        old: old.clone(),
                        new: new.clone(),
                        reason: reason.clone(),
                        applied: *applied,
                        rejected_because: rejected_because.clone(),
                    });
                }
            }
            Event::Review {
                node,
                iteration,
                verdict,
                findings,
                call_id,
            } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.reviews.push(super::review::ReviewInfo {
                        iteration: *iteration,
                        verdict: *verdict,
                        findings: findings.clone(),
                        call_id: *call_id,
                    });
                }
                self.history.push(HistoryEntry::Review {
                    node: node.clone(),
                    iteration: *iteration,
                    verdict: *verdict,
                    findings: findings.clone(),
                });
            }
            Event::Candidates {
                node,
                iteration,
                candidates,
                inputs,
                proposed,
                chosen,
                note,
            } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.candidates = Some(super::consensus::CandidatesInfo {
                        iteration: *iteration,
                        candidates: candidates.clone(),
                        inputs: *inputs,
                        proposed: *proposed,
                        chosen: *chosen,
                        note: note.clone(),
                    });
                }
            }
            Event::Reflection {
                node,
                iteration,
                text,
            } => {
                // A reflection streamed through a Reflect call is already in the
                // history; this event settles its text. Otherwise it is new.
                let existing = self.history.iter_mut().rev().find_map(|h| match h {
                    HistoryEntry::Reflection {
                        node: n,
                        text: t,
                        done,
                        iteration: i,
                        ..
                    } if n == node && (*i == *iteration || !*done) => Some((t, done, i)),
                    _ => None,
                });
                match existing {
                    Some((t, done, i)) => {
                        *t = text.clone();
                        *done = true;
                        *i = *iteration;
                    }
                    None => self.history.push(HistoryEntry::Reflection {
                        node: node.clone(),
                        iteration: *iteration,
                        call_id: None,
                        text: text.clone(),
                        done: true,
                    }),
                }
            }
            // The pause itself is folded below, by `pause_after`.
            Event::Paused { .. } => {}
            Event::Steer { command } => self.steer(command),
            Event::Notice { level, message } => self.notices.push((*level, message.clone())),
            Event::Program { code, tests } => self.program = Some((code.clone(), tests.clone())),
            Event::ProgramOutput { output } => self.program_output = Some(output.clone()),
            Event::Finished { result } => {
                self.finished = Some(result.clone());
                self.settle_unfinished_nodes();
            }
            Event::Forked {
                parent_id,
                parent_tape,
                at_seq,
            } => {
                self.parent = Some(ParentSession {
                    session_id: parent_id.clone(),
                    tape: parent_tape.clone(),
                    at_seq: *at_seq,
                });
            }
            Event::Resumed {
                after,
                config,
                token_budget,
                ..
            } => self.resume(record.seq, after, config, *token_budget),
        }
        if let Some(paused) = pause_after(&record.event) {
            self.paused = paused.cloned();
        }
        self.spend_prompt_edit(&record.event);
    }

    /// A prompt edit holds for the call it was made for and for that call's
    /// retries (the plan asked again after an unusable reply): it is spent
    /// once what the call asks for arrives, or the session ends.
    fn spend_prompt_edit(&mut self, event: &Event) {
        let Some((purpose, _)) = &self.prompt_edit else {
            return;
        };
        let spent = match (event, purpose) {
            (Event::Plan { .. }, Purpose::Plan) | (Event::Finished { .. }, _) => true,
            (Event::Tests { node, .. }, Purpose::Tests { node: n })
            | (Event::Code { node, .. }, Purpose::Code { node: n } | Purpose::Repair { node: n })
            // A repair that fixed the tests instead of the code.
            | (Event::TestsChanged { node, .. }, Purpose::Repair { node: n })
            | (Event::Reflection { node, .. }, Purpose::Reflect { node: n })
            | (Event::Review { node, .. }, Purpose::Review { node: n })
            | (Event::Candidates { node, .. }, Purpose::Inputs { node: n }) => n == node,
            _ => false,
        };
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

    fn reflection_for_call(&mut self, call_id: u64) -> Option<&mut HistoryEntry> {
        self.history.iter_mut().rev().find(
            |h| matches!(h, HistoryEntry::Reflection { call_id: Some(c), .. } if *c == call_id),
        )
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
        self.notices.iter().any(|(_, m)| m.starts_with(opening))
    }

    /// Total repair iterations so far: code versions beyond each node's
    /// first that the model wrote (the person's own edits are not repairs).
    pub fn repair_iterations(&self) -> u32 {
        self.nodes
            .values()
            .flat_map(|n| n.versions.iter().skip(1))
            .filter(|v| match v.source {
                CodeSource::Model | CodeSource::PlanReply => true,
                CodeSource::Edit | CodeSource::Cache | CodeSource::Given => false,
            })
            .count() as u32
    }
}
