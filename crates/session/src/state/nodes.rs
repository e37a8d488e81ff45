//! The fold of the plan and its nodes: the plan, tests, code (with its
//! check and the candidates it was chosen from), the review before running,
//! statuses, a failure and the attempt after it, reflections.

use super::*;

impl State {
    /// The plan.
    pub(super) fn fold_plan(&mut self, e: &PlanEvent) {
        self.specs = e.specs.clone();
        self.plan_error = None;
        // Keep what is known of nodes that survive a re-plan.
        let mut nodes = BTreeMap::new();
        for spec in &e.specs {
            // A re-plan (the task was edited) keeps the tests and code
            // of a node whose spec did not change; a changed one starts afresh.
            let node = match self.nodes.remove(&spec.name) {
                // One the last pass never got to is work for the next.
                Some(mut n) if n.spec == *spec => {
                    if matches!(n.status, NodeStatus::NotRun | NodeStatus::Cancelled) {
                        n.status = NodeStatus::Pending;
                    }
                    n
                }
                Some(_) | None => NodeState::new(spec.clone()),
            };
            nodes.insert(spec.name.clone(), node);
        }
        self.nodes = nodes;
        self.replan = false;
    }

    /// Why there is no plan.
    pub(super) fn fold_plan_error(&mut self, e: &PlanErrorEvent) {
        self.plan_error = Some(e.message.clone());
        self.replan = false;
    }

    /// A node's tests, written.
    pub(super) fn fold_tests(&mut self, e: &TestsEvent) {
        if let Some(n) = self.nodes.get_mut(&e.node) {
            n.set_tests(&e.code);
            // Mended: the model's tests with one set aside by codeloop.
            n.tests_by_model = matches!(
                e.source,
                CodeSource::Model | CodeSource::Cache | CodeSource::Mended
            );
        }
    }

    /// A change of a node's tests the model proposed, applied or not.
    pub(super) fn fold_tests_changed(&mut self, e: &TestsChangedEvent) {
        if let Some(n) = self.nodes.get_mut(&e.node) {
            if e.applied {
                n.set_tests(&e.new);
            }
            n.test_changes.push(TestChange {
                iteration: e.iteration,
                old: e.old.clone(),
                new: e.new.clone(),
                reason: e.reason.clone(),
                applied: e.applied,
                rejected_because: e.rejected_because.clone(),
            });
        }
    }

    /// A code version.
    pub(super) fn fold_code(&mut self, e: &CodeEvent) {
        if let Some(n) = self.nodes.get_mut(&e.node) {
            n.versions.push(CodeVersion {
                iteration: e.iteration,
                code: e.code.clone(),
                source: e.source,
                notes: e.notes.clone(),
            });
            if e.source != CodeSource::Edit {
                n.run_approved = false;
            }
            n.findings.clear();
            n.unsettle();
            if e.source == CodeSource::Edit {
                n.queue_edit();
            }
        }
        self.history.push(HistoryEntry::Attempt {
            node: e.node.clone(),
            iteration: e.iteration,
            source: e.source,
        });
    }

    /// What the static check found in a code version.
    pub(super) fn fold_check(&mut self, e: &CheckEvent) {
        if let Some(n) = self.nodes.get_mut(&e.node) {
            n.findings = e.findings.clone();
        }
    }

    /// The candidates a code version was chosen from.
    pub(super) fn fold_candidates(&mut self, e: &CandidatesEvent) {
        if let Some(n) = self.nodes.get_mut(&e.node) {
            n.candidates = Some(crate::consensus::CandidatesInfo {
                iteration: e.iteration,
                candidates: e.candidates.clone(),
                inputs: e.inputs,
                proposed: e.proposed,
                chosen: e.chosen,
                note: e.note.clone(),
            });
        }
    }

    /// The review of a code version before it ran, kept once.
    pub(super) fn fold_review(&mut self, e: &ReviewEvent) {
        let review = self.reviews.len();
        self.reviews.push(ReviewInfo {
            node: e.node.clone(),
            iteration: e.iteration,
            verdict: e.verdict,
            findings: e.findings.clone(),
            call_id: e.call_id,
        });
        if let Some(n) = self.nodes.get_mut(&e.node) {
            n.reviews.push(review);
        }
        self.history.push(HistoryEntry::Review { review });
    }

    /// A node's new status, and what it ends: a pass clears the failure,
    /// a pass taking the node takes it off the queue.
    pub(super) fn fold_status(&mut self, node: &str, status: NodeStatus) {
        let Some(n) = self.nodes.get_mut(node) else {
            return;
        };
        n.status = match status {
            // A tape from before `Skipped` says a skipped run passed.
            NodeStatus::Passed if n.run_skipped => NodeStatus::Skipped,
            _ => status,
        };
        n.run_skipped = false;
        let status = n.status;
        if status.is_terminal() {
            n.carried_run = None;
        }
        match status {
            NodeStatus::Passed => n.last_failure = None,
            // A pass has taken the node.
            NodeStatus::Pending => n.queued = false,
            NodeStatus::Generating
            | NodeStatus::Checking
            | NodeStatus::Running
            | NodeStatus::Failed
            | NodeStatus::Blocked
            | NodeStatus::GaveUp
            | NodeStatus::Skipped
            | NodeStatus::Cancelled
            | NodeStatus::NotRun => {}
        }
    }

    /// A failure localized, kept once. One of code whose own tests passed
    /// on this version (its settled run passed) was found in the
    /// assembled program.
    pub(super) fn fold_localized(&mut self, e: &LocalizedEvent) {
        let failure = self.failures.len();
        let node = self.nodes.get_mut(&e.node);
        let (run, in_program, found) = match &node {
            Some(n) => (
                n.last_run,
                n.settled_run
                    .and_then(|id| self.runs.get(&id)?.record.as_ref())
                    .is_some_and(|r| r.passed),
                FoundIn {
                    iteration: e.iteration,
                    tests: n.tests_version,
                },
            ),
            None => (None, false, FoundIn::default()),
        };
        if let Some(n) = node {
            n.failures.push(failure);
            n.last_failure = Some(failure);
        }
        self.failures.push(Failure {
            node: e.node.clone(),
            iteration: e.iteration,
            run,
            in_program,
            found,
            location: e.location.clone(),
        });
        self.history.push(HistoryEntry::Failure { failure });
    }

    /// The attempt that follows a failure.
    pub(super) fn fold_attempt(&mut self, e: &AttemptEvent) {
        if let Some(n) = self.nodes.get_mut(&e.node) {
            n.attempts.push(AttemptInfo {
                iteration: e.iteration,
                kind: e.kind,
                runtime_values: e.runtime_values,
            });
        }
    }

    /// A reflection as the engine recorded it. One streamed through a
    /// `Reflect` call is already in the history: this settles its text.
    /// Otherwise it is new.
    pub(super) fn fold_reflection(&mut self, e: &ReflectionEvent) {
        let ReflectionEvent {
            node,
            iteration,
            text,
        } = e;
        let calls = &self.calls;
        let replied = |id: Option<u64>| {
            id.and_then(|id| calls.get(&id))
                .is_some_and(CallState::replied)
        };
        let existing = self.history.iter_mut().rev().find_map(|h| match h {
            HistoryEntry::Reflection {
                node: n,
                iteration: i,
                call_id,
                recorded,
            } if n == node && (*i == *iteration || (recorded.is_none() && !replied(*call_id))) => {
                Some((i, recorded))
            }
            _ => None,
        });
        match existing {
            Some((i, recorded)) => {
                *recorded = Some(text.clone());
                *i = *iteration;
            }
            None => self.history.push(HistoryEntry::Reflection {
                node: node.clone(),
                iteration: *iteration,
                call_id: None,
                recorded: Some(text.clone()),
            }),
        }
    }
}
