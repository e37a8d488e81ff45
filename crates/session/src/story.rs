//! The story of the tape: what happened, as plain lines a view renders.
//! One arm an event (`tell`) and one an entry of the history (`entry`;
//! `timeline` is all of them) turn the folded state into `Line`s: what
//! happened (`What`, with the values it refers to), which node, how it
//! reads (`Level`), its words (`text`, `detail`, `more`). `words.rs` holds
//! each fact's one wording; `questions.rs` the tape's questions every view
//! and the engine ask (a node's failures shown at an iteration, an
//! iteration's run, where a rewind goes, the tokens so far).
//!
//! Architecture Invariant: no view words a fact of the tape itself. `run`'s
//! progress, the workbench's History, the HTML page, the browser player
//! and the Markdown report render these lines (a glyph, a colour, a tag,
//! markup) and say nothing the story does not: a new event is its
//! payload, its fold arm and its arm here. Nothing here knows of
//! terminals or markup.

use codeloop_protocol::Location;
use codeloop_protocol::present::count;

use crate::event::*;
use crate::outcome::{self, Outcome};
use crate::review::summary as review_summary;
use crate::state::{HistoryEntry, Notice, State};

mod questions;
pub mod words;

pub use questions::rewind_point;

/// How a line reads: the tone a view gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Plain,
    /// Something passed.
    Good,
    /// Said in passing (a note, a restart).
    Quiet,
    Warning,
    /// Something failed.
    Bad,
}

/// What a line tells, with the values it refers to.
#[derive(Debug, Clone, PartialEq)]
pub enum What {
    /// The session started, was forked, or resumed.
    Session,
    Notice(NoticeLevel),
    ModelError,
    ModelRestart,
    Plan,
    PlanError,
    Tests,
    /// A change of a node's tests the model proposed after `iteration`
    /// failed (its place in the node's `test_changes`).
    TestChange {
        iteration: u32,
        change: usize,
    },
    Code {
        iteration: u32,
        source: CodeSource,
        kind: Option<AttemptKind>,
    },
    Check {
        iteration: u32,
    },
    Vote {
        iteration: u32,
    },
    /// A review (its place in `State::reviews`).
    Review {
        iteration: u32,
        review: usize,
    },
    Run {
        run_id: u64,
        iteration: u32,
        passed: bool,
    },
    /// A failure (its place in `State::failures`).
    Failure {
        iteration: u32,
        failure: usize,
    },
    Attempt {
        iteration: u32,
        kind: AttemptKind,
    },
    Reflection {
        iteration: u32,
        /// The model is writing it now.
        streaming: bool,
        /// Whole: not cut off.
        whole: bool,
    },
    ProgramOutput,
    Picture,
    Status(NodeStatus),
    /// A command of the person's (its place in `State::steers`).
    Steer {
        steer: usize,
        review_skip: bool,
    },
    Paused,
    Finished(Outcome),
}

impl What {
    /// The kind of fact, in a word (`run`'s tag column, a heading).
    pub fn label(&self) -> &'static str {
        match self {
            What::Session => "session",
            What::Notice(NoticeLevel::Info) => "note",
            What::Notice(NoticeLevel::Warning) => "warning",
            What::Notice(NoticeLevel::Error) => "error",
            What::ModelError => "model error",
            What::ModelRestart => "model",
            What::Plan | What::PlanError => "plan",
            What::Tests | What::TestChange { .. } => "tests",
            What::Code { .. } => "code",
            What::Check { .. } => "check",
            What::Vote { .. } => "vote",
            What::Review { .. } => "review",
            What::Run { .. } => "run",
            What::Failure { .. } => "failure",
            What::Attempt { .. } => "attempt",
            What::Reflection { .. } => "reflection",
            What::ProgramOutput => "output",
            What::Picture => "picture",
            What::Status(s) => s.label(),
            What::Steer { .. } => "you",
            What::Paused => "paused",
            What::Finished(_) => "result",
        }
    }

    /// The code version it is about.
    pub fn iteration(&self) -> Option<u32> {
        match self {
            What::TestChange { iteration, .. }
            | What::Code { iteration, .. }
            | What::Check { iteration }
            | What::Vote { iteration }
            | What::Review { iteration, .. }
            | What::Failure { iteration, .. }
            | What::Attempt { iteration, .. }
            | What::Reflection { iteration, .. } => Some(*iteration),
            What::Run { iteration, .. } => Some(*iteration).filter(|i| *i > 0),
            What::Session
            | What::Notice(_)
            | What::ModelError
            | What::ModelRestart
            | What::Plan
            | What::PlanError
            | What::Tests
            | What::ProgramOutput
            | What::Picture
            | What::Status(_)
            | What::Steer { .. }
            | What::Paused
            | What::Finished(_) => None,
        }
    }
}

/// One line of the story.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub what: What,
    /// The node it is about (none: the session's, or the program's).
    pub node: Option<String>,
    pub level: Level,
    /// The fact in words, without its subject (`Line::subject`).
    pub text: String,
    /// Figures beside it (what a run took, what a review cost).
    pub detail: Option<String>,
    /// Lines under it: a failure's code, a review's findings, a plan's
    /// functions.
    pub more: Vec<String>,
}

impl Line {
    fn new(what: What, node: Option<&str>, level: Level, text: impl Into<String>) -> Line {
        Line {
            what,
            node: node.map(str::to_string),
            level,
            text: text.into(),
            detail: None,
            more: Vec::new(),
        }
    }

    fn detail(mut self, detail: Option<String>) -> Line {
        self.detail = detail;
        self
    }

    fn more(mut self, more: Vec<String>) -> Line {
        self.more = more;
        self
    }

    /// What it is about: `clamp #2`, `clamp`, `the program` (a run of the
    /// assembled program); none for the session's own lines.
    pub fn subject(&self) -> Option<String> {
        match (&self.node, self.what.iteration(), &self.what) {
            (Some(n), Some(i), _) => Some(format!("{n} #{i}")),
            (Some(n), None, _) => Some(n.clone()),
            (None, _, What::Run { .. }) => Some("the program".into()),
            (None, _, _) => None,
        }
    }

    /// The line as one string: `subject: text (detail)`.
    pub fn plain(&self) -> String {
        let mut out = match self.subject() {
            Some(s) => format!("{s}: {}", self.text),
            None => self.text.clone(),
        };
        if let Some(d) = &self.detail {
            out.push_str(&format!(" ({d})"));
        }
        out
    }
}

/// The line an event adds to the story, read from the state with the
/// event folded in; None for an event that says nothing of its own (a
/// streamed piece, a request, a run's start, a pause answered at once).
/// One arm an event.
pub fn tell(state: &State, record: &Record) -> Option<Line> {
    Some(match &record.event {
        // The session and its segments.
        Event::SessionStarted(e) => started(e),
        Event::Forked(e) => Line::new(
            What::Session,
            None,
            Level::Plain,
            format!(
                "session {}, forked from session {} at record {}",
                state.session_id, e.parent_id, e.at_seq
            ),
        ),
        Event::Resumed(e) => Line::new(
            What::Session,
            None,
            Level::Plain,
            format!(
                "session {} resumed after record {} ({})",
                state.session_id, e.from_seq, e.after
            ),
        )
        .more(vec![format!(
            "limit:   {} a function",
            count(e.config.max_iterations, "iteration")
        )]),
        // What the engine and the model say.
        Event::Notice(e) => notice(&Notice {
            level: e.level,
            message: e.message.clone(),
        }),
        Event::ModelError(e) => Line::new(What::ModelError, None, Level::Bad, &e.message),
        Event::ModelRestart(e) => Line::new(
            What::ModelRestart,
            None,
            Level::Quiet,
            format!("the model's reply starts again: {}", e.reason),
        ),
        // The plan and the tests.
        Event::Plan(e) => plan(&e.specs),
        Event::PlanError(e) => Line::new(
            What::PlanError,
            None,
            Level::Bad,
            format!("could not be used: {}", e.message),
        ),
        Event::Tests(e) => tests(e),
        Event::TestsChanged(e) => {
            let change = state
                .nodes
                .get(&e.node)
                .map_or(0, |n| n.test_changes.len().saturating_sub(1));
            test_change(state, &e.node, change)?
        }
        // The code, and what is said of it before it runs.
        Event::Code(e) => code(state, &e.node, e.iteration, e.source),
        Event::Check(e) => check(e)?,
        Event::Candidates(e) => vote(state, &e.node)?,
        Event::Review(_) => review(state, state.reviews.len().checked_sub(1)?)?,
        // The runs, and the repairs they lead to.
        Event::RunFinished(e) => run(state, e.run_id)?,
        Event::Localized(_) => failure(state, state.failures.len().checked_sub(1)?)?,
        Event::Attempt(e) => attempt(e),
        Event::Reflection(e) => Line::new(
            What::Reflection {
                iteration: e.iteration,
                streaming: false,
                whole: true,
            },
            Some(&e.node),
            Level::Plain,
            e.text.trim(),
        ),
        Event::ProgramOutput(e) => program_output(&e.output),
        Event::Picture(e) => picture(e.run_id, &e.picture),
        // Steering, and the end.
        Event::Paused(e) => Line::new(
            What::Paused,
            None,
            Level::Warning,
            format!("waiting for you: paused before {}", words::step(&e.step)),
        ),
        Event::NodeStatus(e) => status(e)?,
        Event::Finished(e) => finished(state, &e.result),
        Event::ModelRequest(_)
        | Event::ModelDelta(_)
        | Event::ModelReasoning(_)
        | Event::ModelContinued(_)
        | Event::ModelReply(_)
        | Event::RunStarted(_)
        | Event::Output(_)
        | Event::Steer(_)
        | Event::Program(_) => return None,
    })
}

/// The history as lines, in order: each code version, run, failure,
/// reflection (with the test changes of its iteration), review and
/// command (`entry`'s lines, entry by entry).
pub fn timeline(state: &State) -> Vec<Line> {
    state.history.iter().flat_map(|e| entry(state, e)).collect()
}

/// The lines of one history entry: one, none (a run still going), or a
/// reflection followed by the test changes of its iteration. One arm an
/// entry.
pub fn entry(state: &State, entry: &HistoryEntry) -> Vec<Line> {
    let mut out = Vec::new();
    match entry {
        HistoryEntry::Attempt {
            node,
            iteration,
            source,
        } => out.push(code(state, node, *iteration, *source)),
        HistoryEntry::RunResult { run_id, .. } => out.extend(run(state, *run_id)),
        HistoryEntry::Failure { failure: f } => out.extend(failure(state, *f)),
        HistoryEntry::Reflection {
            node, iteration, ..
        } => {
            out.extend(reflection(state, entry));
            let changes = state.nodes.get(node).map_or(&[][..], |n| &n.test_changes);
            for (i, _) in changes
                .iter()
                .enumerate()
                .filter(|(_, c)| c.iteration == *iteration)
            {
                out.extend(test_change(state, node, i));
            }
        }
        HistoryEntry::Review { review: r } => out.extend(review(state, *r)),
        HistoryEntry::Steer { steer, review_skip } => {
            out.extend(command(state, *steer, *review_skip))
        }
    }
    out
}

/// The lines of one node's story the report tells: the vote its first
/// code won, its failures, the reviews before running, the reflections.
pub fn node_lines(state: &State, node: &str) -> Vec<Line> {
    let vote = vote(state, node);
    let told = timeline(state).into_iter().filter(|l| {
        l.node.as_deref() == Some(node)
            && matches!(
                l.what,
                What::Failure { .. } | What::Review { .. } | What::Reflection { .. }
            )
    });
    vote.into_iter().chain(told).collect()
}

/// The session's start: its id, and what it runs with.
fn started(e: &SessionStartedEvent) -> Line {
    let config = &e.config;
    let layers = if config.sandbox_layers.is_empty() {
        "none active (run `codeloop doctor`)".to_string()
    } else {
        config.sandbox_layers.join(", ")
    };
    let mut more = vec![format!("sandbox: {layers}")];
    if let Some(p) = &config.python {
        more.push(format!(
            "python:  {} (Python {}, {})",
            p.interpreter,
            p.version,
            count(p.packages.len() + p.more, "third-party package")
        ));
    }
    more.push(format!("task:    {}", e.task.trim()));
    for f in &e.inputs {
        more.push(format!(
            "input:   {} ({}): {}",
            f.name,
            codeloop_protocol::present::bytes(f.size_bytes),
            f.summary()
        ));
    }
    Line::new(
        What::Session,
        None,
        Level::Plain,
        format!("session {}", e.session_id),
    )
    .more(more)
}

/// A notice the engine gave.
pub fn notice(n: &Notice) -> Line {
    let level = match n.level {
        NoticeLevel::Info => Level::Quiet,
        NoticeLevel::Warning => Level::Warning,
        NoticeLevel::Error => Level::Bad,
    };
    Line::new(What::Notice(n.level), None, level, &n.message)
}

/// The plan: its functions, their signatures and what each uses.
fn plan(specs: &[FunctionSpec]) -> Line {
    let more = specs
        .iter()
        .map(|spec| match spec.depends_on.as_slice() {
            [] => words::signature(spec),
            uses => format!("{}   uses {}", words::signature(spec), uses.join(", ")),
        })
        .collect();
    Line::new(
        What::Plan,
        None,
        Level::Plain,
        count(specs.len(), "function"),
    )
    .more(more)
}

/// A node's tests: how many test functions, and where they came from.
fn tests(e: &TestsEvent) -> Line {
    let n = e
        .code
        .lines()
        .filter(|l| l.trim_start().starts_with("def test"))
        .count();
    Line::new(
        What::Tests,
        Some(&e.node),
        Level::Plain,
        format!("{} {}", count(n, "test function"), words::source(e.source)),
    )
}

/// A change of a node's tests the model proposed, and its fate.
fn test_change(state: &State, node: &str, change: usize) -> Option<Line> {
    let c = state.nodes.get(node)?.test_changes.get(change)?;
    let text = format!(
        "changed by the model ({}): {}",
        words::test_change_fate(c),
        c.reason.trim().replace('\n', " ")
    );
    Some(Line::new(
        What::TestChange {
            iteration: c.iteration,
            change,
        },
        Some(node),
        Level::Warning,
        text,
    ))
}

/// A code version: who wrote it, the kind of attempt it was, and under it
/// codeloop's notes on a version it made (its mends, or why the version
/// before was not kept).
fn code(state: &State, node: &str, iteration: u32, source: CodeSource) -> Line {
    let n = state.nodes.get(node);
    let kind = n.and_then(|n| n.attempt_kind(iteration));
    let mut text = words::source(source).to_string();
    if let Some(kind) = kind {
        text.push_str(&format!(", {}", kind.label()));
    }
    let notes = n
        .and_then(|n| {
            n.versions
                .iter()
                .rev()
                .find(|v| v.iteration == iteration && v.source == source)
        })
        .map(|v| v.notes.clone())
        .unwrap_or_default();
    Line::new(
        What::Code {
            iteration,
            source,
            kind,
        },
        Some(node),
        Level::Plain,
        text,
    )
    .more(notes)
}

/// What the static check found in a code version; nothing when it found nothing.
fn check(e: &CheckEvent) -> Option<Line> {
    if e.findings.is_empty() {
        return None;
    }
    let items: Vec<String> = e.findings.iter().map(words::finding).collect();
    Some(Line::new(
        What::Check {
            iteration: e.iteration,
        },
        Some(&e.node),
        Level::Plain,
        items.join("; "),
    ))
}

/// The vote a node's first code won: its summary, and each candidate.
fn vote(state: &State, node: &str) -> Option<Line> {
    let info = state.nodes.get(node)?.candidates.as_ref()?;
    let each: Vec<String> = (0..info.candidates.len())
        .map(|i| words::candidate(info, i))
        .collect();
    Some(
        Line::new(
            What::Vote {
                iteration: info.iteration,
            },
            Some(node),
            Level::Plain,
            info.summary(),
        )
        // A vote not held says so in its summary alone.
        .detail(info.voted().then(|| each.join(", "))),
    )
}

/// A review before running: its verdict, what it cost, and its findings.
fn review(state: &State, index: usize) -> Option<Line> {
    let r = state.reviews.get(index)?;
    let tokens = r
        .call_id
        .and_then(|id| state.calls.get(&id))
        .and_then(|c| c.usage)
        .map(|u| count(u.total(), "token"));
    let level = match (r.verdict, r.serious()) {
        (_, true) => Level::Bad,
        (crate::ReviewVerdict::Concerns, false) => Level::Warning,
        (crate::ReviewVerdict::Ok, false) => Level::Good,
    };
    let findings = r
        .findings
        .iter()
        .map(|f| f.line_text().replace('\n', " "))
        .collect();
    Some(
        Line::new(
            What::Review {
                iteration: r.iteration,
                review: index,
            },
            Some(&r.node),
            level,
            review_summary(r.verdict, &r.findings),
        )
        .detail(tokens)
        .more(findings),
    )
}

/// A run that ended: of a node's tests or of the program, how, and what
/// it took.
fn run(state: &State, run_id: u64) -> Option<Line> {
    let run = state.runs.get(&run_id)?;
    let record = run.record.as_ref()?;
    let level = match (record.passed, run.cancelled) {
        (true, _) => Level::Good,
        (false, true) => Level::Warning,
        (false, false) => Level::Bad,
    };
    let node = match run.kind {
        RunKind::Program => None,
        RunKind::NodeTests => run.node.as_deref(),
    };
    Some(
        Line::new(
            What::Run {
                run_id,
                iteration: run.iteration,
                passed: record.passed,
            },
            node,
            level,
            words::run_result(record, run.cancelled),
        )
        .detail(Some(words::run_figures(record))),
    )
}

/// A failure, localized: in one line, and the code around it.
fn failure(state: &State, index: usize) -> Option<Line> {
    let f = state.failures.get(index)?;
    Some(
        Line::new(
            What::Failure {
                iteration: f.iteration,
                failure: index,
            },
            Some(&f.node),
            Level::Bad,
            f.location.headline(),
        )
        .more(failure_detail(&f.location)),
    )
}

/// A failure's code around its line, and what a test expected.
fn failure_detail(location: &Location) -> Vec<String> {
    location.detail().lines().map(str::to_string).collect()
}

/// The next code version after a failure: the kind of attempt.
fn attempt(e: &AttemptEvent) -> Line {
    let values = if e.runtime_values {
        " (with runtime values)"
    } else {
        ""
    };
    Line::new(
        What::Attempt {
            iteration: e.iteration,
            kind: e.kind,
        },
        Some(&e.node),
        Level::Plain,
        format!("{}{values}", e.kind.label()),
    )
}

/// A reflection as it reads now (streaming in, whole, or cut off), and
/// how much the model reasoned apart.
fn reflection(state: &State, entry: &HistoryEntry) -> Option<Line> {
    let HistoryEntry::Reflection {
        node,
        iteration,
        call_id,
        ..
    } = entry
    else {
        return None;
    };
    let text = state.reflection(entry)?;
    let reasoning = call_id
        .and_then(|id| state.calls.get(&id))
        .map(|c| c.reasoning.chars().count())
        .filter(|n| *n > 0)
        .map(|n| {
            format!(
                "{} of reasoning, kept apart (never used as code)",
                count(n, "character")
            )
        });
    Some(
        Line::new(
            What::Reflection {
                iteration: *iteration,
                streaming: text.streaming,
                whole: text.whole,
            },
            Some(node),
            Level::Plain,
            text.text.trim(),
        )
        .detail(reasoning),
    )
}

/// What the program printed run as a program, and how it failed.
pub(crate) fn program_output(output: &ProgramOutput) -> Line {
    let level = if output.succeeded() {
        Level::Plain
    } else {
        Level::Bad
    };
    let failed = (!output.succeeded()).then(|| {
        let why = output
            .limit_hit
            .clone()
            .unwrap_or_else(|| output.stderr.trim().to_string());
        format!("run as a program it failed: {why}")
    });
    Line::new(
        What::ProgramOutput,
        None,
        level,
        "the program (main) printed:",
    )
    .detail(failed)
    .more(
        output
            .stdout
            .trim_end()
            .lines()
            .map(str::to_string)
            .collect(),
    )
}

/// A picture a run left, and where the session keeps it.
pub fn picture(run_id: Option<u64>, p: &codeloop_protocol::picture::Picture) -> Line {
    let from = match run_id {
        Some(id) => format!("run {id}"),
        None => "the program's run".to_string(),
    };
    Line::new(
        What::Picture,
        None,
        Level::Plain,
        format!("{}, from {from}, kept as {}", p.describe(), p.path),
    )
}

/// A node given up or blocked; other statuses say nothing here.
fn status(e: &NodeStatusEvent) -> Option<Line> {
    let level = match e.status {
        NodeStatus::Blocked => Level::Warning,
        NodeStatus::GaveUp => Level::Bad,
        NodeStatus::Pending
        | NodeStatus::Generating
        | NodeStatus::Checking
        | NodeStatus::Running
        | NodeStatus::Passed
        | NodeStatus::Failed
        | NodeStatus::Skipped
        | NodeStatus::Cancelled
        | NodeStatus::NotRun => return None,
    };
    Some(Line::new(
        What::Status(e.status),
        Some(&e.node),
        level,
        e.status.label(),
    ))
}

/// A command of the person's (a skip at the review's pause sent the code
/// to a repair unrun).
fn command(state: &State, steer: usize, review_skip: bool) -> Option<Line> {
    let command = state.steers.get(steer)?;
    let text = if review_skip {
        words::REVIEW_SKIP.to_string()
    } else {
        words::command(command)
    };
    let level = match command {
        Command::Approve | Command::Skip => Level::Quiet,
        _ => Level::Plain,
    };
    let node = match command {
        Command::EditSpec { node, .. }
        | Command::EditCode { node, .. }
        | Command::EditTests { node, .. }
        | Command::Hint { node, .. }
        | Command::RerunNode { node } => Some(node.as_str()),
        Command::SetStepMode { .. }
        | Command::Approve
        | Command::Skip
        | Command::EditTask { .. }
        | Command::Cancel
        | Command::ReviewPrompt
        | Command::EditPrompt { .. } => None,
    };
    Some(Line::new(
        What::Steer { steer, review_skip },
        node,
        level,
        text,
    ))
}

/// The session's result: the outcome in one line, and under it the
/// repairs and tokens, what the runs used, where the results went.
fn finished(state: &State, result: &FinalResult) -> Line {
    let outcome = Outcome::of(state);
    let level = match outcome {
        Outcome::Passed => Level::Good,
        Outcome::Cancelled => Level::Warning,
        Outcome::Failed | Outcome::NoPlan | Outcome::Working => Level::Bad,
    };
    let mut more = vec![format!(
        "{}, tokens: {}{}",
        count(result.iterations, "repair"),
        result.usage.words(),
        reviews_cost(state)
    )];
    if let Some(total) = crate::figures::total_line(state) {
        more.push(format!("resources: {total}"));
        for node in crate::figures::per_node(state) {
            more.push(format!("  {}", node.line()));
        }
    }
    if let Some(dir) = &result.output_dir {
        more.push(format!("output: {dir}"));
    }
    Line::new(What::Finished(outcome), None, level, outcome::line(state)).more(more)
}

/// ` (of them 120 in 2 reviews before running)`, or nothing.
pub fn reviews_cost(state: &State) -> String {
    let (reviews, tokens) = crate::review::review_cost(state);
    if reviews == 0 {
        return String::new();
    }
    format!(
        " (of them {tokens} in {} before running)",
        count(reviews, "review")
    )
}

#[cfg(test)]
mod tests;
