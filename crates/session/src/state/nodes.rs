//! The fold of the plan and its nodes, a family of events each: the plan,
//! tests, code (with its check and the candidates it was chosen from), the
//! review before running, statuses, a failure and the attempt after it,
//! reflections.

use super::*;

impl State {
    /// The plan, or why there is none.
    pub(super) fn fold_plan(&mut self, event: &Event) {
        match event {
            Event::Plan { specs } => {
                self.specs = specs.clone();
                self.plan_error = None;
                // Keep what is known of nodes that survive a re-plan.
                let mut nodes = BTreeMap::new();
                for spec in specs {
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
            Event::PlanError { message } => {
                self.plan_error = Some(message.clone());
                self.replan = false;
            }
            _ => {}
        }
    }

    /// A node's tests: written, or a change the model proposed (applied or not).
    pub(super) fn fold_tests(&mut self, event: &Event) {
        match event {
            Event::Tests { node, code, .. } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.set_tests(code);
                }
            }
            Event::TestsChanged {
                node,
                iteration,
                old,
                new,
                reason,
                applied,
                rejected_because,
            } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    if *applied {
                        n.set_tests(new);
                    }
                    n.test_changes.push(TestChange {
                        iteration: *iteration,
                        old: old.clone(),
                        new: new.clone(),
                        reason: reason.clone(),
                        applied: *applied,
                        rejected_because: rejected_because.clone(),
                    });
                }
            }
            _ => {}
        }
    }

    /// A code version, what its check found, and the candidates it was
    /// chosen from.
    pub(super) fn fold_code(&mut self, event: &Event) {
        match event {
            Event::Code {
                node,
                iteration,
                code,
                source,
            } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.versions.push(CodeVersion {
                        iteration: *iteration,
                        code: code.clone(),
                        source: *source,
                    });
                    if *source != CodeSource::Edit {
                        n.run_approved = false;
                    }
                    n.findings.clear();
                    n.unsettle();
                    if *source == CodeSource::Edit {
                        n.queue_edit();
                    }
                }
                self.history.push(HistoryEntry::Attempt {
                    node: node.clone(),
                    iteration: *iteration,
                    source: *source,
                });
            }
            Event::Check { node, findings, .. } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.findings = findings.clone();
                }
            }
            Event::Candidates {
                node,
                iteration,
                candidates,
                inputs,
                proposed,
                chosen,
                note,
            } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.candidates = Some(crate::consensus::CandidatesInfo {
                        iteration: *iteration,
                        candidates: candidates.clone(),
                        inputs: *inputs,
                        proposed: *proposed,
                        chosen: *chosen,
                        note: note.clone(),
                    });
                }
            }
            _ => {}
        }
    }

    /// The review of a code version before it ran.
    pub(super) fn fold_review(&mut self, event: &Event) {
        let Event::Review {
            node,
            iteration,
            verdict,
            findings,
            call_id,
        } = event
        else {
            return;
        };
        if let Some(n) = self.nodes.get_mut(node) {
            n.reviews.push(crate::review::ReviewInfo {
                iteration: *iteration,
                verdict: *verdict,
                findings: findings.clone(),
                call_id: *call_id,
            });
        }
        self.history.push(HistoryEntry::Review {
            node: node.clone(),
            iteration: *iteration,
            verdict: *verdict,
            findings: findings.clone(),
        });
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
            NodeStatus::Passed => n.last_error = None,
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

    /// A failure localized, and the attempt that follows it.
    pub(super) fn fold_failure(&mut self, event: &Event) {
        match event {
            Event::Localized {
                node,
                iteration,
                location,
            } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.last_error = Some(location.clone());
                    n.last_error_found = FoundIn {
                        iteration: *iteration,
                        tests: n.tests_version,
                    };
                }
                self.history.push(HistoryEntry::Failure {
                    node: node.clone(),
                    iteration: *iteration,
                    location: location.clone(),
                });
            }
            Event::Attempt {
                node,
                iteration,
                kind,
                runtime_values,
            } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.attempts.push(AttemptInfo {
                        iteration: *iteration,
                        kind: *kind,
                        runtime_values: *runtime_values,
                    });
                }
            }
            _ => {}
        }
    }

    /// A reflection as the engine recorded it. One streamed through a
    /// `Reflect` call is already in the history: this settles its text.
    /// Otherwise it is new.
    pub(super) fn fold_reflection(&mut self, event: &Event) {
        let Event::Reflection {
            node,
            iteration,
            text,
        } = event
        else {
            return;
        };
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
