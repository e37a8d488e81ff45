//! Whether the engine is paused, event by event: the fold's rule, also
//! read by a view that needs the live engine's pause without folding.

use super::event::{Command, Event, PausedEvent, SteerEvent, Step};

/// How `event` changes whether the engine is paused: `Some(Some(step))` it
/// pauses before `step`, `Some(None)` the pause is over (the step began, or
/// was approved, skipped or cancelled, or the session ended or went on
/// anew), `None` no change. The fold uses it, and so can a view that needs
/// the live engine's pause without folding (reviewing the past of a live session).
pub fn pause_after(event: &Event) -> Option<Option<&Step>> {
    match event {
        Event::Paused(PausedEvent { step }) => Some(Some(step)),
        Event::ModelRequest(_)
        | Event::RunStarted(_)
        | Event::Finished(_)
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
