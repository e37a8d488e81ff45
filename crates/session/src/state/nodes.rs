//! The fold of the plan and its nodes: tests, code, checks, statuses, failures, attempts, reflections.

use super::*;

impl State {
    pub(super) fn fold_nodes(&mut self, record: &Record) {
        match &record.event {
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
            Event::Tests { node, code, .. } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.set_tests(code);
                }
            }
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
            Event::NodeStatus { node, status } => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.status = match status {
                        // A tape from before `Skipped` says a skipped run passed.
                        NodeStatus::Passed if n.run_skipped => NodeStatus::Skipped,
                        _ => *status,
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
            }
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
            Event::Review {
                node,
                iteration,
                verdict,
                findings,
                call_id,
            } => {
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
            Event::Reflection {
                node,
                iteration,
                text,
            } => {
                // A reflection streamed through a Reflect call is already in the
                // history; this event settles its text. Otherwise it is new.
                let calls = &self.calls;
                let existing = self.history.iter_mut().rev().find_map(|h| match h {
                    HistoryEntry::Reflection {
                        node: n,
                        iteration: i,
                        call_id,
                        recorded,
                    } if n == node
                        && (*i == *iteration
                            || (recorded.is_none() && !replied(calls, *call_id))) =>
                    {
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
            // The pause itself is folded below, by `pause_after`.
            _ => {}
        }
    }
}

/// Whether the call's reply came (whole, not failed or cut by a stop).
fn replied(calls: &BTreeMap<u64, CallState>, call_id: Option<u64>) -> bool {
    call_id
        .and_then(|id| calls.get(&id))
        .is_some_and(|c| c.done && c.error.is_none())
}
