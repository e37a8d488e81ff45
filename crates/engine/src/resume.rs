//! Time travel: a recorded session goes on live. Resume appends a new
//! segment to the session's own tape; a fork copies the parent's records up
//! to a point into a new session's tape, names its parent (a `Forked`
//! event), and goes on from there; rewind is a fork of a live session at the
//! end of a node's previous iteration. Either way the engine starts from the
//! state folded from the records (a `Resumed` event opens the segment), so
//! nothing already on the tape is asked or run again: a call that got no
//! reply is asked again, a run that did not finish runs again, and a node
//! whose current code already ran to a verdict carries that verdict over.
//!
//! Why a fork copies its parent's records instead of pointing at them: its
//! tape then holds its whole history on its own, so `open`, `replay` and
//! review show it with no lookup, and it stays whole when the parent is
//! deleted; the copied records keep their numbers and times, so "seq N" means
//! the same moment in both tapes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::context::{
    Core, Engine, EngineError, Opening, Stop, config_summary, make_session_dir, now_rfc3339,
    session_id_of,
};
use super::prompts::Prompts;
use super::recorder::{Recorder, write_side_file};
use super::steering::Steering;
use super::{COMMAND_BUFFER, EngineHandle, EngineOptions, VIEW_BUFFER};
use codeloop_llm::ChatModel;
use codeloop_sandbox::Sandbox;
use codeloop_sandbox::harness::tests_file_name;
use codeloop_session::story::rewind_point;
use codeloop_session::{
    Command, Event, ForkedEvent, NodeStatus, NoticeEvent, NoticeLevel, Record, ResumedEvent,
    SessionStartedEvent, State, TapeError, TapeWriter, read_tape,
};

/// What a continued session runs with.
pub struct ContinueSetup {
    pub model: Arc<dyn ChatModel>,
    pub sandbox: Arc<Sandbox>,
    /// The segment's options (`segment_options` decides its limits).
    pub options: EngineOptions,
    pub prompt_overrides: Option<PathBuf>,
    /// The person's changes (a hint, an edit, the task, step mode), acted on
    /// before any work, as if typed the moment the segment began.
    pub commands: Vec<Command>,
}

#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(
        "session {id} {why}: there is nothing to continue. To change something, fork it at an earlier point: `codeloop resume {id} --at SEQ` (SEQ a record number, e.g. from `codeloop open {id}`), or in the workbench open it, move to that moment and press F"
    )]
    NothingToContinue { id: String, why: String },
    #[error("{tape} has no record {at} (its records go from 0 to {last}): fork at one of those")]
    NoSuchSeq { tape: String, at: u64, last: u64 },
    #[error("cannot rewind `{node}`: {why}")]
    Rewind { node: String, why: String },
    #[error("the session stopped before its rewind could begin: {0}")]
    Stopped(String),
}

impl From<TapeError> for ResumeError {
    fn from(e: TapeError) -> Self {
        ResumeError::Engine(EngineError::Tape(e))
    }
}

/// Continue the session recorded in `tape` on its own tape: a new segment
/// from its last record. Refused for a session that finished and passed.
pub fn resume(tape: &Path, with: ContinueSetup) -> Result<EngineHandle, ResumeError> {
    let contents = read_tape(tape)?;
    let state = State::from_records(&contents.records);
    if let Some(why) = nothing_left(&state, &with.options) {
        return Err(ResumeError::NothingToContinue {
            id: state.session_id.clone(),
            why,
        });
    }
    let from_seq = contents.records.last().map_or(0, |r| r.seq);
    let after = match &state.finished {
        Some(f) => f.summary.clone(),
        None => format!("stopped without an end after record {from_seq} (killed?)"),
    };
    let dir = tape.parent().map(Path::to_path_buf).unwrap_or_default();
    let writer = TapeWriter::reopen(tape, &contents)?;
    start(dir, writer, contents.records, from_seq, after, with)
}

/// Why a finished session has nothing left to do under `options` (None
/// when a resume would do something): it passed; only the assembled program
/// failed (running the same code again gives the same result); or every
/// function that fails is at the iteration limit and the segment gives no
/// more iterations. Cancelled and killed sessions always have work left.
pub fn nothing_left(state: &State, options: &EngineOptions) -> Option<String> {
    let done = state.finished.as_ref()?;
    let cancelled = state.steers.iter().any(|c| matches!(c, Command::Cancel));
    if cancelled {
        return None;
    }
    if done.passed {
        return Some(format!("finished and passed ({})", done.summary));
    }
    let open: Vec<_> = state
        .nodes
        .values()
        .filter(|n| n.status != NodeStatus::Passed)
        .collect();
    if state.specs.is_empty() {
        return None;
    }
    if open.is_empty() {
        return Some(format!(
            "finished and failed ({}), but every function passed its tests: running the same program again gives the same result",
            done.summary
        ));
    }
    let limit = options.max_iterations;
    if open.iter().all(|n| n.iteration() >= limit) {
        return Some(format!(
            "finished and failed ({}); every failing function is at the iteration limit ({limit}), so resuming would change nothing (`codeloop resume {} --max-iterations N` allows N more)",
            done.summary, state.session_id
        ));
    }
    None
}

/// Fork the session recorded in `tape` at record `at` into the new session
/// folder `dir`: its tape holds the parent's records up to `at`, then a
/// `Forked` event naming the parent, then the new segment.
pub fn fork(
    tape: &Path,
    at: u64,
    dir: &Path,
    with: ContinueSetup,
) -> Result<EngineHandle, ResumeError> {
    fork_noting(tape, at, dir, with, None)
}

/// [`fork`], with a notice on the new tape right after the `Forked` event
/// (which model the fork goes on with, and why).
pub fn fork_noting(
    tape: &Path,
    at: u64,
    dir: &Path,
    with: ContinueSetup,
    note: Option<String>,
) -> Result<EngineHandle, ResumeError> {
    let contents = read_tape(tape)?;
    let last = contents.records.last().map_or(0, |r| r.seq);
    if at > last {
        return Err(ResumeError::NoSuchSeq {
            tape: tape.display().to_string(),
            at,
            last,
        });
    }
    let prefix: Vec<Record> = contents
        .records
        .into_iter()
        .filter(|r| r.seq <= at)
        .collect();
    let parent = State::from_records(&prefix);
    make_session_dir(dir)?;
    let mut writer = TapeWriter::create(&dir.join("tape.jsonl"))?;
    let mut history = Vec::with_capacity(prefix.len() + 1);
    for (i, mut record) in prefix.into_iter().enumerate() {
        // The fork's first record is the parent's, under the fork's own name.
        if i == 0
            && let Event::SessionStarted(SessionStartedEvent {
                session_id,
                started_at,
                ..
            }) = &mut record.event
        {
            *session_id = session_id_of(dir);
            *started_at = now_rfc3339();
        }
        write_side_file(dir, &record.event);
        writer.write_record(&record)?;
        writer.continue_clock(record.t_ms);
        history.push(record);
    }
    let forked = writer.append(Event::Forked(ForkedEvent {
        parent_id: parent.session_id.clone(),
        parent_tape: tape.display().to_string(),
        at_seq: at,
    }))?;
    history.push(forked);
    if let Some(message) = note {
        history.push(writer.append(Event::Notice(NoticeEvent {
            level: NoticeLevel::Info,
            message,
        }))?);
    }
    let after = format!("forked from session {} at record {at}", parent.session_id);
    start(dir.to_path_buf(), writer, history, at, after, with)
}

/// Rewind a live session's `node` to its previous iteration: the session is
/// stopped (cancelled if still at work; one that finished keeps its result,
/// nothing being written to a finished tape), the branch left behind stays
/// on disk, resumable, and a fork
/// of it at the end of that iteration's run goes on in `dir`, where the
/// repair is asked again (with the changes in `with.commands`).
pub async fn rewind(
    mut handle: EngineHandle,
    node: &str,
    dir: &Path,
    with: ContinueSetup,
) -> Result<EngineHandle, ResumeError> {
    let tape = handle.session_dir.join("tape.jsonl");
    let at = rewind_point(&read_tape(&tape)?.records, node).map_err(|why| ResumeError::Rewind {
        node: node.to_string(),
        why,
    })?;
    // A session that already ended does not take the command: nothing to stop.
    let _ = handle.commands.send(Command::Cancel).await;
    while handle.events.recv().await.is_some() {}
    match handle.done.await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(ResumeError::Stopped(format!("{e:#}"))),
        Err(e) => return Err(ResumeError::Stopped(e.to_string())),
    }
    fork(&tape, at, dir, with)
}

/// The options of a resumed segment. Its iteration limit is the session's
/// so far plus `more_iterations`; without it, a session in which a function
/// gave up at the limit gets the limit again (twice as many in all), any
/// other keeps it. Its repair policy is the session's own. Its token budget counts from what the session has used:
/// `more_tokens` more, or the configured budget (`base.token_budget`) more;
/// 0 means no limit.
pub fn segment_options(
    state: &State,
    mut base: EngineOptions,
    more_iterations: Option<u32>,
    more_tokens: Option<u64>,
) -> EngineOptions {
    let limit = state.config.max_iterations.max(1);
    let gave_up_at_limit = state
        .nodes
        .values()
        .any(|n| n.status == NodeStatus::GaveUp && n.iteration() >= limit);
    let more = more_iterations.unwrap_or(if gave_up_at_limit { limit } else { 0 });
    base.max_iterations = limit.saturating_add(more);
    // The session's own policy, as its tape recorded it (today's defaults
    // on a tape older than the policy), so it decides as it did.
    base.policy = state.config.policy();
    // A session that reviewed its code before running goes on reviewing it
    // (an old tape's policy does not say).
    base.policy.review |= !state.reviews.is_empty();
    let used = state.usage.prompt_tokens + state.usage.completion_tokens;
    base.token_budget = match more_tokens.unwrap_or(base.token_budget) {
        0 => 0,
        n => used.saturating_add(n),
    };
    base
}

/// Start the engine on a tape whose records so far are `history`.
fn start(
    dir: PathBuf,
    writer: TapeWriter,
    history: Vec<Record>,
    from_seq: u64,
    after: String,
    with: ContinueSetup,
) -> Result<EngineHandle, ResumeError> {
    let mut prompts = Prompts::load(with.prompt_overrides.as_deref()).map_err(EngineError::from)?;
    let config = config_summary(&with.model, &with.sandbox, &with.options);
    prompts.set_python(config.python.as_deref().filter(|p| p.chosen));
    let resumed = Event::Resumed(ResumedEvent {
        from_seq,
        after,
        config,
        token_budget: with.options.token_budget,
        started_at: now_rfc3339(),
    });
    let (events_tx, events_rx) = mpsc::channel(VIEW_BUFFER);
    let (commands_tx, commands_rx) = mpsc::channel(COMMAND_BUFFER);
    let tape = Recorder::start(&dir, writer, history, events_tx)?;
    let engine = Engine {
        core: Arc::new(Core {
            tape,
            model: with.model,
            sandbox: with.sandbox,
            prompts,
            opts: with.options,
            given: None,
            dir: dir.clone(),
            cancel: CancellationToken::new(),
            steering: Steering::default(),
            node_done: tokio::sync::Notify::new(),
        }),
        opening: Opening::Continued {
            resumed,
            commands: with.commands,
        },
    };
    let done = tokio::spawn(engine.run(commands_rx));
    Ok(EngineHandle {
        events: events_rx,
        commands: commands_tx,
        done,
        session_dir: dir,
    })
}

impl Core {
    /// At a resume, a node whose current code already ran to a verdict
    /// takes that verdict instead of running again: passed, it is done;
    /// failed, it is given up at the limit or repaired (and the repair runs
    /// as usual). Whether the node's part of the pass is over.
    pub(crate) async fn carried_over(&self, name: &str) -> Result<bool, Stop> {
        let carried = self.read(|s| {
            let node = s.nodes.get(name)?;
            let run = s.runs.get(&node.carried_run?)?;
            // Tests that do not load are no verdict on the code: the node
            // runs them again and asks for new ones as usual.
            let tests_broken = s.last_failure(name).is_some_and(|f| {
                f.location.file == tests_file_name(name) && f.location.test.is_none()
            });
            (!tests_broken).then_some(())?;
            let location = s.last_failure(name).map(|f| f.location.clone());
            Some((run.iteration, run.record.as_ref()?.passed, location))
        });
        let Some((iteration, passed, location)) = carried else {
            return Ok(false);
        };
        if passed {
            self.status(name, NodeStatus::Passed).await?;
            return Ok(true);
        }
        self.status(name, NodeStatus::Failed).await?;
        // Decided as after any failure, from the same state and policy.
        Ok(self
            .decide(name, iteration, location.as_ref())
            .await?
            .is_break())
    }
}
