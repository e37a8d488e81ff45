//! How a node's repairs went, as the state keeps them: each attempt after a
//! failure (its kind, whether it showed runtime values) and each change of
//! its tests the model proposed, folded from `Attempt` and `TestsChanged`.

use super::event::{AttemptKind, RunKind};
use super::state::{NodeState, State};

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

/// How a code version of a node fared against the tests the node has now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionScore {
    /// Its index in `NodeState::versions`.
    pub version: usize,
    pub iteration: u32,
    /// Tests it passed in its last run against these tests (none when it
    /// did not load).
    pub passed: u32,
    pub total: u32,
    /// The tests it failed there, by name (none recorded by older tapes).
    pub failed: Vec<String>,
}

impl State {
    /// Each code version of `node` that ran against its current tests,
    /// oldest first, with how many of them it passed in its last such run.
    pub fn version_scores(&self, node: &str) -> Vec<VersionScore> {
        let Some(n) = self.nodes.get(node) else {
            return Vec::new();
        };
        let mut scores: Vec<VersionScore> = Vec::new();
        for (_, run) in self.runs_in_order() {
            let (Some(version), Some(record)) = (run.version, &run.record) else {
                continue;
            };
            if run.node.as_deref() != Some(node)
                || run.kind != RunKind::NodeTests
                || run.tests_version != n.tests_version
            {
                continue;
            }
            let passed = record.tests_passed.unwrap_or(0);
            let total = passed + record.tests_failed.unwrap_or(0);
            let score = VersionScore {
                version,
                iteration: run.iteration,
                passed,
                total,
                failed: record.failed_tests.clone(),
            };
            match scores.iter_mut().find(|s| s.version == version) {
                Some(s) => *s = score,
                None => scores.push(score),
            }
        }
        scores.sort_by_key(|s| s.version);
        scores
    }

    /// The version of `node` that passed the most of its current tests so
    /// far (the latest of equals); None when none ran against them.
    pub fn best_version(&self, node: &str) -> Option<VersionScore> {
        // `max_by_key` gives the last of equals: the latest.
        self.version_scores(node)
            .into_iter()
            .max_by_key(|s| s.passed)
    }
}
