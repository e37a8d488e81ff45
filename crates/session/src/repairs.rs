//! How a node's repairs went, as the state keeps them: each attempt after a
//! failure (its kind, whether it showed runtime values) and each change of
//! its tests the model proposed, folded from `Attempt` and `TestsChanged`.

use super::event::AttemptKind;
use super::state::NodeState;

/// One attempt after a failure (`Event::Attempt`).
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptInfo {
    /// The code version it writes.
    pub iteration: u32,
    pub kind: AttemptKind,
    pub runtime_values: bool,
}

/// A change of a node's tests proposed by the model (`Event::TestsChanged`):
/// the old and new tests, the model's reason, and whether it was applied.
#[derive(Debug, Clone, PartialEq)]
pub struct TestChange {
    /// The iteration whose failure was blamed on the tests.
    pub iteration: u32,
    pub old: String,
    pub new: String,
    pub(crate) reason: String,
    pub applied: bool,
    pub rejected_because: Option<String>,
}

impl NodeState {
    /// The kind of attempt that wrote `iteration`, if one did after a failure.
    pub fn attempt_kind(&self, iteration: u32) -> Option<AttemptKind> {
        self.attempts
            .iter()
            .rev()
            .find(|a| a.iteration == iteration)
            .map(|a| a.kind)
    }

    /// The model's test fixes that were applied.
    pub fn applied_test_fixes(&self) -> usize {
        self.test_changes.iter().filter(|c| c.applied).count()
    }
}
