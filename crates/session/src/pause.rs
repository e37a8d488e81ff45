//! Whether the engine is paused, event by event: the fold's rule, also
//! read by a view that needs the live engine's pause without folding.

use super::event::{Command, Event, Step};

/// How `event` changes whether the engine is paused: `Some(Some(step))` it
/// pauses before `step`, `Some(None)` the pause is over (the step began, or
/// was approved, skipped or cancelled, or the session ended or went on
/// anew), `None` no change. The fold uses it, and so can a view that needs
/// the live engine's pause without folding (reviewing the past of a live session).
pub fn pause_after(event: &Event) -> Option<Option<&Step>> {
    match event {
        Event::Paused { step } => Some(Some(step)),
        Event::ModelRequest { .. }
        | Event::RunStarted { .. }
        | Event::Finished { .. }
        | Event::Resumed { .. }
        | Event::Steer {
            command: Command::Approve | Command::Skip | Command::Cancel | Command::ReviewPrompt,
        } => Some(None),
        Event::SessionStarted { .. }
        | Event::ModelDelta { .. }
        | Event::ModelReasoning { .. }
        | Event::ModelRestart { .. }
        | Event::ModelContinued { .. }
        | Event::ModelReply { .. }
        | Event::ModelError { .. }
        | Event::Plan { .. }
        | Event::PlanError { .. }
        | Event::Tests { .. }
        | Event::Code { .. }
        | Event::Check { .. }
        | Event::Output { .. }
        | Event::RunFinished { .. }
        | Event::NodeStatus { .. }
        | Event::Localized { .. }
        | Event::Attempt { .. }
        | Event::TestsChanged { .. }
        | Event::Reflection { .. }
        | Event::Review { .. }
        | Event::Candidates { .. }
        | Event::Steer { .. }
        | Event::Notice { .. }
        | Event::Program { .. }
        | Event::ProgramOutput { .. }
        | Event::Picture { .. }
        | Event::Forked { .. } => None,
    }
}
