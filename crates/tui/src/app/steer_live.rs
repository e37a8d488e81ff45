//! Steering a live session while its past is on screen: the engine waits at
//! the end of the tape whatever the cursor shows, so an approval or a skip
//! goes to it, and the person is told which step it answered.

use super::{Action, App};
use codeloop_session::story::words;
use codeloop_session::{Command, NoticeLevel};

impl App {
    /// Send `command` (an approval or a skip) to the live engine while the
    /// cursor is behind the end, saying what it answered.
    pub(super) fn steer_from_the_past(&mut self, command: Command, actions: &mut Vec<Action>) {
        let step = self
            .engine_paused()
            .map(words::step)
            .unwrap_or_else(|| "the step it waits at".to_string());
        let text = format!(
            "{} {step} (the live engine; you are reviewing event {} of {}, End goes live)",
            words::command(&command),
            self.cursor(),
            self.records().len()
        );
        actions.push(Action::Steer(command));
        self.say(NoticeLevel::Info, text);
    }
}
