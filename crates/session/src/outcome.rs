//! What a session came to, in one word, read from its folded state: the one
//! answer the workbench's status bar, its graph, the report, the session
//! list and the exports all give, so they never disagree.

use super::event::NodeStatus;
use super::state::State;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The engine is at work: no result yet, or work began again after one
    /// (a re-run, an edit, a new plan). A tape that ends here did not finish.
    Working,
    /// Every function and the assembled program passed their tests.
    Passed,
    /// It finished without everything passing (a skipped run included).
    Failed,
    /// It finished without a plan to work from.
    NoPlan,
    /// The person stopped it.
    Cancelled,
}

impl Outcome {
    pub fn of(state: &State) -> Outcome {
        if state.cancelled {
            return Outcome::Cancelled;
        }
        match &state.finished {
            None => Outcome::Working,
            Some(_) if state.at_work() => Outcome::Working,
            Some(_) if state.specs.is_empty() => Outcome::NoPlan,
            Some(f) if f.passed => Outcome::Passed,
            Some(_) => Outcome::Failed,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Outcome::Working => "working",
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::NoPlan => "no usable plan",
            Outcome::Cancelled => "cancelled",
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            Outcome::Working => "…",
            Outcome::Passed => "✓",
            Outcome::Failed | Outcome::NoPlan => "✗",
            Outcome::Cancelled => "■",
        }
    }

    /// The session has a result (it is not at work).
    pub fn ended(self) -> bool {
        match self {
            Outcome::Working => false,
            Outcome::Passed | Outcome::Failed | Outcome::NoPlan | Outcome::Cancelled => true,
        }
    }
}

impl State {
    /// Work is under way or asked for: a new plan, or a node in flight
    /// (after a result too: a re-run, an edit).
    pub(crate) fn at_work(&self) -> bool {
        self.replan || self.nodes.values().any(|n| n.status.in_flight())
    }

    /// The session has a result and nothing is at work: a finished tape,
    /// to which only what a person asks for by name (a fork, a resume, an
    /// edit, a re-run) adds anything.
    pub fn ended(&self) -> bool {
        Outcome::of(self).ended()
    }

    /// The session (or a pass of it) ended: a node still at work was
    /// stopped by a cancel, or never got its turn. It says so, not "checking".
    pub(super) fn settle_unfinished_nodes(&mut self) {
        let cancelled = self.cancelled;
        for n in self.nodes.values_mut() {
            n.status = match n.status {
                NodeStatus::Generating | NodeStatus::Checking | NodeStatus::Running
                    if cancelled =>
                {
                    NodeStatus::Cancelled
                }
                s if s.in_flight() => NodeStatus::NotRun,
                s => s,
            };
        }
    }
}

/// The result in one line: the outcome and, once there is one, why
/// (the engine's summary); while at work, how far the tape goes.
pub fn line(state: &State) -> String {
    let outcome = Outcome::of(state);
    match (&state.finished, outcome) {
        // The engine's summary may begin with the word already ("cancelled: ...").
        (Some(f), o) if o.ended() && f.summary.starts_with(o.label()) => f.summary.clone(),
        (Some(f), o) if o.ended() => format!("{}: {}", o.label(), f.summary),
        (Some(f), _) => format!("working again after: {}", f.summary),
        (None, Outcome::Cancelled) => "cancelled: the session is stopping".to_string(),
        (None, _) => format!(
            "did not finish: the tape ends after {} events",
            state.events_applied
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::*;
    use codeloop_protocol::Usage;

    fn record(seq: u64, event: Event) -> Record {
        Record {
            seq,
            t_ms: seq,
            event,
        }
    }

    fn finished(passed: bool, summary: &str) -> Event {
        Event::Finished(FinishedEvent {
            result: FinalResult {
                passed,
                nodes_passed: 0,
                nodes_total: 1,
                iterations: 0,
                usage: Usage::default(),
                summary: summary.into(),
                output_dir: None,
            },
        })
    }

    fn planned() -> Vec<Record> {
        vec![
            record(
                0,
                Event::Plan(PlanEvent {
                    specs: vec![FunctionSpec {
                        name: "f".into(),
                        purpose: "p".into(),
                        inputs: String::new(),
                        output: String::new(),
                        depends_on: vec![],
                        head: None,
                    }],
                }),
            ),
            record(
                1,
                Event::NodeStatus(NodeStatusEvent {
                    node: "f".into(),
                    status: NodeStatus::Checking,
                }),
            ),
        ]
    }

    #[test]
    fn a_cancel_settles_the_node_at_work_and_the_outcome_says_cancelled() {
        let mut records = planned();
        records.push(record(
            2,
            Event::Steer(SteerEvent {
                command: Command::Cancel,
            }),
        ));
        let state = State::from_records(&records);
        assert_eq!(Outcome::of(&state), Outcome::Cancelled);
        records.push(record(3, finished(false, "cancelled: 0 of 1")));
        let state = State::from_records(&records);
        assert_eq!(state.nodes["f"].status, NodeStatus::Cancelled);
        assert_eq!(Outcome::of(&state), Outcome::Cancelled);
        assert_eq!(line(&state), "cancelled: 0 of 1");
    }

    #[test]
    fn a_cancel_after_the_session_passed_changes_nothing() {
        // Tapes the workbench wrote before issue 21: quitting from the past
        // of a passed session recorded a cancel after `Finished`.
        let mut records = planned();
        records.push(record(2, finished(true, "all pass")));
        records.push(record(
            3,
            Event::Steer(SteerEvent {
                command: Command::Cancel,
            }),
        ));
        let state = State::from_records(&records);
        assert_eq!(Outcome::of(&state), Outcome::Passed);
        assert!(!state.cancelled);
        assert!(state.steers.is_empty(), "the ignored cancel is not a steer");
        assert_eq!(line(&state), "passed: all pass");
        // A cancel while a re-run after the result is at work still stops it.
        records.pop();
        records.push(record(
            3,
            Event::NodeStatus(NodeStatusEvent {
                node: "f".into(),
                status: NodeStatus::Running,
            }),
        ));
        records.push(record(
            4,
            Event::Steer(SteerEvent {
                command: Command::Cancel,
            }),
        ));
        assert_eq!(
            Outcome::of(&State::from_records(&records)),
            Outcome::Cancelled
        );
    }

    #[test]
    fn a_finished_session_without_a_plan_is_no_plan_and_work_after_a_result_is_working() {
        let state = State::from_records(&[record(0, finished(false, "no usable plan: x"))]);
        assert_eq!(Outcome::of(&state), Outcome::NoPlan);
        let mut records = planned();
        records.push(record(2, finished(true, "all pass")));
        let state = State::from_records(&records);
        assert_eq!(
            state.nodes["f"].status,
            NodeStatus::NotRun,
            "not at work once the session ended"
        );
        assert_eq!(Outcome::of(&state), Outcome::Passed);
        records.push(record(
            3,
            Event::NodeStatus(NodeStatusEvent {
                node: "f".into(),
                status: NodeStatus::Running,
            }),
        ));
        let state = State::from_records(&records);
        assert_eq!(Outcome::of(&state), Outcome::Working);
        assert_eq!(line(&state), "working again after: all pass");
    }
}
