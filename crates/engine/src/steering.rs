//! Steering: the person's commands, recorded on the tape and acted on, and
//! the step-mode gate every model call and every run passes through.
//!
//! Whether the session is in step mode and which nodes wait to run again are
//! read from the folded state; every command is on the tape before it acts.
//! What lives here is plumbing: one pause at a time, the hand-off of the
//! person's answer from the steering task to the paused task, and the wake-up
//! of an idle session.

use tokio::sync::{Mutex, Notify, oneshot};

use super::context::Core;
use codeloop_session::{
    CodeEvent, CodeSource, Command, Event, PausedEvent, Purpose, SteerEvent, Step, TapeError,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GateAnswer {
    Go,
    Skip,
    Cancel,
}

#[derive(Default)]
pub(crate) struct Steering {
    /// One pause at a time: parallel nodes queue up here.
    turn: Mutex<()>,
    /// The paused task's end of the hand-off (the answer's command is on the tape).
    waiter: std::sync::Mutex<Option<oneshot::Sender<GateAnswer>>>,
    /// Wakes the idle session (kept alive for the workbench) when a command
    /// may have queued work; the work itself is read from the state.
    pub(crate) work: Notify,
    /// The calls let go by `may_ask` and not yet asked, by purpose: the
    /// first ask of each goes out without a second pause, any other ask
    /// (a retry, a fallback, a repeat asked again) pauses on its own
    /// (`Core::ask`).
    approved: std::sync::Mutex<Vec<Purpose>>,
}

impl Steering {
    /// Hand `answer` to the paused task, if one is waiting.
    pub(crate) fn release(&self, answer: GateAnswer) {
        if let Some(tx) = self.take_waiter() {
            let _ = tx.send(answer);
        }
    }

    fn take_waiter(&self) -> Option<oneshot::Sender<GateAnswer>> {
        self.waiter.lock().ok().and_then(|mut w| w.take())
    }

    /// A call for `purpose` was let go (`may_ask`): its first ask needs no
    /// pause of its own.
    pub(crate) fn approve_call(&self, purpose: &Purpose) {
        if let Ok(mut approved) = self.approved.lock()
            && !approved.contains(purpose)
        {
            approved.push(purpose.clone());
        }
    }

    /// Whether a call for `purpose` was let go and not yet asked; it is
    /// asked now, so the next ask pauses.
    pub(crate) fn spend_approval(&self, purpose: &Purpose) -> bool {
        let Ok(mut approved) = self.approved.lock() else {
            return false;
        };
        match approved.iter().position(|p| p == purpose) {
            Some(at) => {
                approved.remove(at);
                true
            }
            None => false,
        }
    }
}

impl Core {
    /// Record a command and act on it. A command that cannot be recorded
    /// stops the session: the tape is the record of what was asked.
    pub(crate) async fn steer(&self, cmd: Command) {
        if self.act_on(cmd).await.is_err() {
            self.cancel.cancel();
            self.steering.release(GateAnswer::Cancel);
        }
    }

    async fn act_on(&self, cmd: Command) -> Result<(), TapeError> {
        let steer = Event::Steer(SteerEvent {
            command: cmd.clone(),
        });
        match cmd {
            // Step mode itself is read from the state the Steer event folds into.
            Command::SetStepMode { on } => {
                self.record(steer).await?;
                if !on {
                    self.steering.release(GateAnswer::Go);
                }
            }
            Command::Approve => {
                self.record(steer).await?;
                self.steering.release(GateAnswer::Go);
            }
            Command::Skip => {
                self.record(steer).await?;
                self.steering.release(GateAnswer::Skip);
            }
            Command::Cancel => {
                // Once the session ended, a cancel only lets the idle
                // engine go: nothing is written to a finished tape but
                // what a person asks for by name.
                self.tape
                    .append_with(move |s| (if s.ended() { vec![] } else { vec![steer] }, ()))
                    .await?;
                self.cancel.cancel();
                self.steering.release(GateAnswer::Cancel);
            }
            // The state notes the call whose prompt is to be shown; the
            // call pauses again once its prompt is written.
            Command::ReviewPrompt => {
                self.record(steer).await?;
                self.steering.release(GateAnswer::Go);
            }
            // Folded into the state; the call paused before reads it.
            Command::EditPrompt { .. } => {
                self.record(steer).await?;
            }
            // Folded into the state; later prompts read it.
            Command::Hint { .. } => {
                self.record(steer).await?;
            }
            // The state asks for a new plan, made once the pass under way
            // is over; wake the session in case it is idle.
            Command::EditTask { .. } => {
                self.record(steer).await?;
                self.steering.work.notify_one();
            }
            // The state queues the node (unless it is at work, which picks
            // the edit up by itself); wake the session in case it is idle.
            Command::EditTests { .. } | Command::RerunNode { .. } => {
                self.record(steer).await?;
                self.steering.work.notify_one();
            }
            Command::EditSpec { node, spec } => self.edit_spec(steer, node, spec).await?,
            Command::EditCode { node, code } => {
                self.edit_code(steer, node, code).await?;
                self.steering.work.notify_one();
            }
        }
        Ok(())
    }

    /// The edited code becomes the node's next iteration, numbered from the
    /// state as the command is recorded.
    async fn edit_code(&self, steer: Event, node: String, code: String) -> Result<(), TapeError> {
        self.tape
            .append_with(move |s| {
                let mut events = vec![steer];
                if let Some(n) = s.nodes.get(&node) {
                    events.push(Event::Code(CodeEvent {
                        iteration: n.iteration() + 1,
                        node,
                        code,
                        source: CodeSource::Edit,
                        notes: Vec::new(),
                    }));
                }
                (events, ())
            })
            .await
            .map(|_| ())
    }

    /// In step mode, wait for the person's word before `step`.
    pub(crate) async fn gate(&self, step: Step) -> GateAnswer {
        if self.cancel.is_cancelled() {
            return GateAnswer::Cancel;
        }
        if !self.read(|s| s.step_mode) {
            return GateAnswer::Go;
        }
        let _turn = self.steering.turn.lock().await;
        let (tx, rx) = oneshot::channel();
        if let Ok(mut w) = self.steering.waiter.lock() {
            *w = Some(tx);
        }
        // Read once the waiter is in place: step mode turned off from now on
        // finds it and lets it go.
        if !self.read(|s| s.step_mode) {
            self.steering.take_waiter();
            return GateAnswer::Go;
        }
        if self
            .record(Event::Paused(PausedEvent { step }))
            .await
            .is_err()
        {
            // A tape that cannot record stops the session.
            self.cancel.cancel();
            return GateAnswer::Cancel;
        }
        tokio::select! {
            answer = rx => answer.unwrap_or(GateAnswer::Cancel),
            _ = self.cancel.cancelled() => GateAnswer::Cancel,
        }
    }
}
