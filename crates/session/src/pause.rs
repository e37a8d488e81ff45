//! Whether the engine is paused, event by event: the fold's rule, also
//! read by a view that needs the live engine's pause without folding.

use super::event::{
    Command, Event, ModelRequestEvent, PausedEvent, Record, RunStartedEvent, SteerEvent, Step,
};

/// How `event` changes whether the engine is paused before `paused`:
/// `Some(Some(step))` it pauses before `step`, `Some(None)` the pause is
/// over (its step began, or it was approved, skipped or cancelled, or the
/// session ended or went on anew), `None` no change. A call or a run of
/// another node (functions work in parallel: the one approved starts its
/// run just after the next one paused) is no change. The fold uses it, and
/// so does `pause_at_end`.
pub fn pause_after<'a>(paused: Option<&Step>, event: &'a Event) -> Option<Option<&'a Step>> {
    match event {
        Event::Paused(PausedEvent { step }) => Some(Some(step)),
        Event::ModelRequest(e) => paused.filter(|p| asks(p, e)).map(|_| None),
        Event::RunStarted(e) => paused.filter(|p| runs(p, e)).map(|_| None),
        Event::Finished(_)
        | Event::Resumed(_)
        | Event::Steer(SteerEvent {
            command: Command::Approve | Command::Skip | Command::Cancel | Command::ReviewPrompt,
        }) => Some(None),
        Event::SessionStarted(_)
        | Event::ModelDelta(_)
        | Event::ModelReasoning(_)
        | Event::ModelRestart(_)
        | Event::ModelContinued(_)
        | Event::ModelReply(_)
        | Event::ModelError(_)
        | Event::Plan(_)
        | Event::PlanError(_)
        | Event::Tests(_)
        | Event::Code(_)
        | Event::Check(_)
        | Event::Output(_)
        | Event::RunFinished(_)
        | Event::NodeStatus(_)
        | Event::Localized(_)
        | Event::Attempt(_)
        | Event::TestsChanged(_)
        | Event::Reflection(_)
        | Event::Review(_)
        | Event::Candidates(_)
        | Event::Steer(_)
        | Event::Notice(_)
        | Event::Program(_)
        | Event::ProgramOutput(_)
        | Event::Picture(_)
        | Event::Forked(_) => None,
    }
}

/// The call paused before is this one.
fn asks(step: &Step, e: &ModelRequestEvent) -> bool {
    match step {
        Step::ModelCall { purpose } | Step::Prompt { purpose, .. } => *purpose == e.purpose,
        Step::Run { .. } | Step::TestFix { .. } | Step::Review { .. } => false,
    }
}

/// The run paused before is this one.
fn runs(step: &Step, e: &RunStartedEvent) -> bool {
    match step {
        Step::Run { node, iteration } => *node == e.node && *iteration == e.iteration,
        Step::ModelCall { .. }
        | Step::Prompt { .. }
        | Step::TestFix { .. }
        | Step::Review { .. } => false,
    }
}

/// What the engine is paused before once `records` happened, read from the
/// last pause on (a view that needs the live engine's pause without
/// folding: reviewing the past of a live session).
pub fn pause_at_end(records: &[Record]) -> Option<&Step> {
    let at = records
        .iter()
        .rposition(|r| matches!(r.event, Event::Paused(_)))?;
    let mut paused = match &records[at].event {
        Event::Paused(PausedEvent { step }) => Some(step),
        _ => None,
    };
    for r in &records[at + 1..] {
        if let Some(p) = pause_after(paused, &r.event) {
            paused = p;
        }
    }
    paused
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{RunKind, RunStartedEvent};
    use crate::state::State;

    fn records(events: Vec<Event>) -> Vec<Record> {
        events
            .into_iter()
            .enumerate()
            .map(|(seq, event)| Record {
                seq: seq as u64,
                t_ms: 0,
                event,
            })
            .collect()
    }

    fn run_of(node: &str) -> Step {
        Step::Run {
            node: Some(node.into()),
            iteration: 1,
        }
    }

    fn started(node: &str) -> Event {
        Event::RunStarted(RunStartedEvent {
            run_id: 1,
            node: Some(node.into()),
            iteration: 1,
            kind: RunKind::NodeTests,
        })
    }

    /// The demo `roman` in step mode: int_to_roman's run approved,
    /// roman_to_int paused before its own just before int_to_roman's run
    /// started. The engine waits at roman_to_int's run (the workbench said
    /// "nothing to approve" and the session stood still).
    #[test]
    fn another_nodes_run_starting_does_not_end_the_pause() {
        let tape = records(vec![
            Event::Paused(PausedEvent {
                step: run_of("int_to_roman"),
            }),
            Event::Steer(SteerEvent {
                command: Command::Approve,
            }),
            Event::Paused(PausedEvent {
                step: run_of("roman_to_int"),
            }),
            started("int_to_roman"),
        ]);
        assert_eq!(
            State::from_records(&tape).paused,
            Some(run_of("roman_to_int"))
        );
        assert_eq!(pause_at_end(&tape), Some(&run_of("roman_to_int")));
        // Its own run starting ends it.
        let mut tape = tape;
        tape.extend(records(vec![started("roman_to_int")]));
        assert_eq!(State::from_records(&tape).paused, None);
        assert_eq!(pause_at_end(&tape), None);
    }
}
