//! Each fact's line: the session's start, a notice, the plan, tests and
//! their changes, a code version and what is said of it before it runs,
//! a run, a failure, an attempt, a reflection, the program's output and
//! pictures, a status, a command, the result. `tell` and `entry` pick
//! them; the wording views share is `words.rs`'s.

use codeloop_protocol::Location;
use codeloop_protocol::present::count;

use super::words;
use super::{Level, Line, What};
use crate::event::*;
use crate::outcome::{self, Outcome};
use crate::review::summary as review_summary;
use crate::state::{HistoryEntry, Notice, State, SteerAt};

/// The session's start: its id, and what it runs with.
pub(super) fn started(e: &SessionStartedEvent) -> Line {
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
    if let Some(p) = &config.policy {
        more.push(format!("policy:  {}", p.summary()));
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
pub(super) fn plan(specs: &[FunctionSpec]) -> Line {
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
pub(super) fn tests(e: &TestsEvent) -> Line {
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
pub(super) fn test_change(state: &State, node: &str, change: usize) -> Option<Line> {
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
pub(super) fn code(state: &State, node: &str, iteration: u32, source: CodeSource) -> Line {
    let n = state.nodes.get(node);
    let kind = n.and_then(|n| n.attempt_kind(iteration));
    let mut text = words::source(source).to_string();
    // A version put back is no attempt of its own: the kind is the one it
    // replaced.
    if let Some(kind) = kind.filter(|_| source != CodeSource::Best) {
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
pub(super) fn check(e: &CheckEvent) -> Option<Line> {
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
pub(super) fn vote(state: &State, node: &str) -> Option<Line> {
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
pub(super) fn review(state: &State, index: usize) -> Option<Line> {
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
pub(super) fn run(state: &State, run_id: u64) -> Option<Line> {
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
pub(super) fn failure(state: &State, index: usize) -> Option<Line> {
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
pub(super) fn attempt(e: &AttemptEvent) -> Line {
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

/// A decision of the loop's after a failure: the step and its reason.
/// A node given up reads as a warning (as an error when codeloop could
/// not judge it), a step that sets code or tests aside as a warning.
pub(super) fn decision(state: &State, index: usize) -> Option<Line> {
    let e = state.decisions.get(index)?;
    let level = match e.next {
        Next::GiveUp {
            why: GiveUpWhy::NotJudged,
        } => Level::Bad,
        Next::GiveUp { .. } | Next::RollBack { .. } | Next::RewriteTests | Next::SetAsideTest => {
            Level::Warning
        }
        Next::Rerun | Next::Attempt { .. } => Level::Plain,
    };
    Some(Line::new(
        What::Decision {
            iteration: e.iteration,
            decision: index,
        },
        Some(&e.node),
        level,
        words::decision(e),
    ))
}

/// A reflection as it reads now (streaming in, whole, or cut off), and
/// how much the model reasoned apart.
pub(super) fn reflection(state: &State, entry: &HistoryEntry) -> Option<Line> {
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
    // A whole reflection that says nothing (a repair that wrote only
    // code) and reasoned nothing apart: no line.
    if text.whole && !text.streaming && text.text.trim().is_empty() && reasoning.is_none() {
        return None;
    }
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
pub(super) fn status(e: &NodeStatusEvent) -> Option<Line> {
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
/// to a repair unrun), about the node it came at (`SteerAt`): an edited
/// prompt names its call.
pub(super) fn command(
    state: &State,
    steer: usize,
    review_skip: bool,
    at: &SteerAt,
) -> Option<Line> {
    let command = state.steers.get(steer)?;
    let text = match (command, &at.tag) {
        _ if review_skip => words::REVIEW_SKIP.to_string(),
        (Command::EditPrompt { .. }, Some(tag)) => {
            words::command(command).replacen("prompt", &format!("prompt of {tag}"), 1)
        }
        _ => words::command(command),
    };
    let level = match command {
        Command::Approve | Command::Skip => Level::Quiet,
        Command::SetStepMode { .. }
        | Command::EditTask { .. }
        | Command::EditSpec { .. }
        | Command::EditCode { .. }
        | Command::EditTests { .. }
        | Command::Hint { .. }
        | Command::RerunNode { .. }
        | Command::Cancel
        | Command::ReviewPrompt
        | Command::EditPrompt { .. } => Level::Plain,
    };
    Some(Line::new(
        What::Steer {
            steer,
            review_skip,
            iteration: at.iteration,
        },
        at.node.as_deref(),
        level,
        text,
    ))
}

/// Whether a command is a steering act the exports show in its node's
/// story: what the person changed or decided (an edit, a hint, a re-run,
/// a skip), not the step-by-step going on (approve, step mode, see the
/// prompt) nor the session's own (the task, a cancel).
pub fn steering_act(command: &Command) -> bool {
    match command {
        Command::EditSpec { .. }
        | Command::EditCode { .. }
        | Command::EditTests { .. }
        | Command::Hint { .. }
        | Command::RerunNode { .. }
        | Command::EditPrompt { .. }
        | Command::Skip => true,
        Command::SetStepMode { .. }
        | Command::Approve
        | Command::EditTask { .. }
        | Command::Cancel
        | Command::ReviewPrompt => false,
    }
}

/// The session's result: the outcome in one line, and under it the
/// repairs and tokens, what the runs used, where the results went.
pub(super) fn finished(state: &State, result: &FinalResult) -> Line {
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
