//! Segments and lineage: how a resumed segment begins in the fold, and
//! where a forked session came from.

use super::event::ConfigSummary;
use super::state::{Resume, State};

/// Where a forked session came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ParentSession {
    pub session_id: String,
    /// The parent's tape, as it was when the fork was made.
    pub tape: String,
    /// The last of the parent's records the fork starts from.
    pub at_seq: u64,
}

impl State {
    /// A new segment begins: the session is live again, with the segment's
    /// config. A call that got no reply is closed (the engine asks again);
    /// each node carries over the verdict of its settled run.
    pub(super) fn resume(
        &mut self,
        seq: u64,
        after: &str,
        config: &ConfigSummary,
        token_budget: u64,
    ) {
        self.config = config.clone();
        self.step_mode = config.step_mode;
        self.token_budget = token_budget;
        self.finished = None;
        self.cancelled = false;
        // A prompt shown or edited in the segment before was for a call it
        // did not make; the new segment writes its prompts afresh.
        self.prompt_review = None;
        self.prompt_edit = None;
        for call in self.calls.values_mut().filter(|c| !c.done) {
            call.done = true;
            call.error = Some("no reply: the session stopped before it came".into());
        }
        for node in self.nodes.values_mut() {
            node.carried_run = node.settled_run;
        }
        self.resumes.push(Resume {
            seq,
            after: after.to_string(),
        });
    }
}
