//! The story of the tape: what happened, as plain lines a view renders.
//! One arm an event (`tell`) and one an entry of the history (`entry`;
//! `timeline` is all of them) turn the folded state into `Line`s: what
//! happened (`What`, with the values it refers to), which node, how it
//! reads (`Level`), its words (`text`, `detail`, `more`). `line.rs` is
//! what a line is, `lines.rs` each fact's line (the arms here pick them),
//! `words.rs` each fact's one wording views share too; `questions.rs` the
//! tape's questions every view
//! and the engine ask (a node's failures shown at an iteration, an
//! iteration's run, where a rewind goes, the tokens so far).
//!
//! Architecture Invariant: no view words a fact of the tape itself. `run`'s
//! progress, the workbench's History, the HTML page, the browser player
//! and the Markdown report render these lines (a glyph, a colour, a tag,
//! markup) and say nothing the story does not: a new event is its
//! payload (with its facts), its fold arm and its arm here. Nothing here knows of
//! terminals or markup.

use codeloop_protocol::present::count;

use crate::event::*;
use crate::state::{HistoryEntry, Notice, State};

mod line;
mod lines;
mod questions;
pub mod words;

pub use line::{Level, Line, What};
pub(crate) use lines::program_output;
pub use lines::{notice, picture, reviews_cost, steering_act};
pub use questions::rewind_point;

use lines::*;

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
        Event::Decision(_) => decision(state, state.decisions.len().checked_sub(1)?)?,
        // A repair whose reply said nothing before its code reflected
        // nothing: no line (an empty "reflection:" said nothing either).
        Event::Reflection(e) if e.text.trim().is_empty() => return None,
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
        HistoryEntry::Decision { decision: d } => out.extend(decision(state, *d)),
        HistoryEntry::Steer {
            steer,
            review_skip,
            at,
        } => out.extend(command(state, *steer, *review_skip, at)),
    }
    out
}

/// The lines of one node's story the report tells: the vote its first
/// code won, its failures, the reviews before running, the reflections,
/// the loop's decisions with their reasons, and the person's steering
/// acts at their places among them.
pub fn node_lines(state: &State, node: &str) -> Vec<Line> {
    let vote = vote(state, node);
    let told = timeline(state).into_iter().filter(|l| {
        l.node.as_deref() == Some(node)
            && match l.what {
                What::Failure { .. }
                | What::Review { .. }
                | What::Reflection { .. }
                | What::Decision { .. } => true,
                What::Steer { steer, .. } => state.steers.get(steer).is_some_and(steering_act),
                _ => false,
            }
    });
    vote.into_iter().chain(told).collect()
}

#[cfg(test)]
mod tests;
