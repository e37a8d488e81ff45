//! Whether the engine is paused, event by event: the fold's rule, also
//! read by a view that needs the live engine's pause without folding.

use super::event::{Event, PauseChange, Record, Step};

/// How `event` changes whether the engine is paused before `paused`:
/// `Some(Some(step))` it pauses before `step`, `Some(None)` the pause is
/// over (its step began, or it was approved, skipped or cancelled, or the
/// session ended or went on anew), `None` no change. A call or a run of
/// another node (functions work in parallel: the one approved starts its
/// run just after the next one paused) is no change. The fold uses it, and
/// so does `pause_at_end`.
pub fn pause_after<'a>(paused: Option<&Step>, event: &'a Event) -> Option<Option<&'a Step>> {
    match event.facts().pause {
        PauseChange::Keeps => None,
        PauseChange::Before(step) => Some(Some(step)),
        PauseChange::Ends => Some(None),
        PauseChange::Begins(begun) => paused.filter(|p| begun.is(p)).map(|_| None),
    }
}

/// What the engine is paused before once `records` happened, read from the
/// last pause on (a view that needs the live engine's pause without
/// folding: reviewing the past of a live session).
pub fn pause_at_end(records: &[Record]) -> Option<&Step> {
    let at = records
        .iter()
        .rposition(|r| matches!(r.event, Event::Paused(_)))?;
    let mut paused = None;
    for r in &records[at..] {
        if let Some(p) = pause_after(paused, &r.event) {
            paused = p;
        }
    }
    paused
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Command, PausedEvent, RunKind, RunStartedEvent, SteerEvent};
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
