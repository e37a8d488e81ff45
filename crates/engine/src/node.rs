//! One node's life in a pass: tests first, then code, then check, run and
//! repair until it passes, is given up, or the session is cancelled. Every
//! turn reads the node from the state, so an edit made meanwhile (while
//! paused, while the model wrote, while it ran) is what runs next.

use std::ops::ControlFlow;

use super::blame;
use super::context::{Core, Stop};
use super::decide;
use super::execute;
use super::review::AfterReview;
use super::runs;
use super::steering::GateAnswer;
use codeloop_protocol::Location;
use codeloop_session::{
    CodeEvent, CodeSource, DecisionEvent, Event, GiveUpWhy, LocalizedEvent, Next, NodeStatus,
    NoticeLevel, RunKind, RunRecord, Step,
};

/// How one try of a version went.
enum Tried {
    /// It ran (or could not, and is repaired unrun): passed, or where it failed.
    Judged {
        passed: bool,
        location: Box<Option<Location>>,
    },
    /// The code was edited meanwhile: check it first.
    Edited,
    /// The node's life ended (its run skipped, or it cannot run).
    Ended,
}

/// How a node's run went.
enum NodeRun {
    Ran(RunRecord, Box<Option<Location>>),
    /// The code was edited while the run waited at the gate: check it first.
    Edited,
    /// The person skipped the run: the node's code is kept, untested.
    Accepted,
    /// The run could not be prepared (said in a notice).
    CannotRun,
}

impl Core {
    /// The node's current iteration (0 before any code).
    fn iteration_of(&self, name: &str) -> u32 {
        self.read(|s| s.nodes.get(name).map(|n| n.iteration()).unwrap_or(0))
    }

    pub(crate) async fn node(&self, name: &str) -> Result<(), Stop> {
        if self.cancel.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        if self.carried_over(name).await? {
            return Ok(());
        }
        if self.first_versions(name).await?.is_break() {
            return Ok(());
        }
        loop {
            let iteration = self.iteration_of(name);
            self.status(name, NodeStatus::Checking).await?;
            self.check(name, iteration).await?;
            let (passed, location) = match self.try_version(name, iteration).await? {
                Tried::Judged { passed, location } => (passed, *location),
                // Edited while paused: check the new code first.
                Tried::Edited => continue,
                Tried::Ended => return Ok(()),
            };
            if self.cancel.is_cancelled() {
                return Err(Stop::Cancelled);
            }
            if passed {
                self.status(name, NodeStatus::Passed).await?;
                return Ok(());
            }
            if self
                .after_failure(name, iteration, location)
                .await?
                .is_break()
            {
                return Ok(());
            }
        }
    }

    /// The node's tests and first code, each asked for unless it has them.
    /// `Break` when the node's life ended here (given up).
    async fn first_versions(&self, name: &str) -> Result<ControlFlow<()>, Stop> {
        let (has_tests, has_code) = self.read(|s| {
            s.nodes
                .get(name)
                .map(|n| (n.tests.is_some(), !n.versions.is_empty()))
                .unwrap_or((false, false))
        });
        if !has_tests {
            self.status(name, NodeStatus::Generating).await?;
            match self.write_tests(name, false).await {
                Ok(()) => {}
                Err(Stop::Skipped) => {
                    self.notice(
                        NoticeLevel::Warning,
                        format!(
                            "`{name}` has no tests (skipped): its runs only check that it loads"
                        ),
                    )
                    .await?
                }
                // The model gave no usable tests (a small model's loop, or
                // prose twice): the code is still worth asking for, and the
                // person can write the tests.
                Err(Stop::Failed) => {
                    self.notice(
                        NoticeLevel::Warning,
                        format!(
                            "`{name}` has no tests (the model gave none it could use): its code is asked for all the same, but with no test it cannot pass; write its tests in the Code pane, or name the function and state an example in the task (`a function f(x) that …: f(2) == 4`): the example becomes a test"
                        ),
                    )
                    .await?
                }
                Err(e) => return self.ended(name, e).await,
            }
        }
        if !has_code {
            self.status(name, NodeStatus::Generating).await?;
            match self.write_code(name).await {
                Ok(()) => {}
                // The first reply held no function that could be used (no
                // code, cut off at its limit): that first try was the
                // model's likeliest answer; a fresh start asks for another.
                Err(Stop::Failed) if self.opts.policy.fresh_start => {
                    let why = "the first reply held no function that could be used";
                    self.decided(name, 0, &decide::Decision::fresh_start(why))
                        .await?;
                    if let Err(e) = self.fresh_start(name, 0).await {
                        return self.ended(name, e).await;
                    }
                }
                Err(e) => return self.ended(name, e).await,
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// One try of the checked `iteration`: repaired unrun when it cannot
    /// run, else reviewed (when asked for) and run.
    async fn try_version(&self, name: &str, iteration: u32) -> Result<Tried, Stop> {
        // The person approved a run and edited the code while it
        // waited: the approval was for their edit, so it runs once
        // checked, unasked again (`NodeState::run_approved`).
        let approved = self.read(|s| s.nodes.get(name).is_some_and(|n| n.run_approved));
        // Code that cannot run is repaired unrun (in step mode, unasked).
        if let Some(location) = self.read(|s| execute::blocking_failure(s, name)) {
            return Ok(Tried::Judged {
                passed: false,
                location: Box::new(Some(location)),
            });
        }
        // The review before running (when asked for), which may send the
        // code to a repair unrun.
        let reviewed = if approved {
            AfterReview::Run { approved: true }
        } else {
            self.review_before_run(name, iteration).await?
        };
        let tried = match reviewed {
            AfterReview::Repair(location) => Tried::Judged {
                passed: false,
                location: Box::new(Some(*location)),
            },
            AfterReview::Edited => Tried::Edited,
            AfterReview::Run { approved } => {
                match self.run_node(name, iteration, approved).await? {
                    NodeRun::Ran(record, location) => Tried::Judged {
                        passed: record.passed,
                        location,
                    },
                    NodeRun::Edited => Tried::Edited,
                    NodeRun::Accepted => Tried::Ended,
                    NodeRun::CannotRun => {
                        self.give_up(name, Stop::Failed).await?;
                        Tried::Ended
                    }
                }
            }
        };
        Ok(tried)
    }

    /// After `name`'s version `iteration` failed: the failure on the tape,
    /// then what the loop decides (`decide::next`), recorded with its
    /// reason and done. `Break` when the node's life ended.
    async fn after_failure(
        &self,
        name: &str,
        iteration: u32,
        location: Option<Location>,
    ) -> Result<ControlFlow<()>, Stop> {
        self.status(name, NodeStatus::Failed).await?;
        if let Some(location) = &location {
            self.record(Event::Localized(LocalizedEvent {
                node: name.to_string(),
                iteration,
                location: location.clone(),
            }))
            .await?;
        }
        self.decide(name, iteration, location.as_ref()).await
    }

    /// What follows the failure of `name`'s version `iteration`: the
    /// policy's decision (`decide::next`), recorded (`Event::Decision`)
    /// and then done. Also a resumed node's whose carried-over run failed.
    /// `Break` when the node's life ended.
    pub(crate) async fn decide(
        &self,
        name: &str,
        iteration: u32,
        location: Option<&Location>,
    ) -> Result<ControlFlow<()>, Stop> {
        let mut blame_tests = true;
        let decision = loop {
            let bounds = decide::Bounds {
                policy: &self.opts.policy,
                max_iterations: self.opts.max_iterations,
                tests_given: self.tests_given(name),
                blame_tests,
            };
            let (decision, suspect) = self.read(|s| {
                (
                    decide::next(s, name, iteration, location, &bounds),
                    blame::suspect_test(s, name, &bounds),
                )
            });
            self.decided(name, iteration, &decision).await?;
            match (decision.next, suspect) {
                (Next::SetAsideTest, Some(suspect)) => {
                    match self.set_aside_test(name, iteration, suspect).await? {
                        // The person kept the test: decided again without blame.
                        blame::Answer::Kept => blame_tests = false,
                        blame::Answer::Done => return Ok(ControlFlow::Continue(())),
                    }
                }
                _ => break decision,
            }
        };
        match decision.next {
            Next::Rerun => Ok(ControlFlow::Continue(())), // the edit runs
            Next::RollBack { .. } => {
                // Never worse: the best is put back and runs again, then
                // is repaired (or given up at the limit) from there.
                self.put_back(name, iteration, decide::worse_than_best)
                    .await?;
                Ok(ControlFlow::Continue(()))
            }
            Next::RewriteTests => {
                // No code change can fix tests that do not load: asked for
                // again, once (the tape says whether they were, so a
                // resume asks no more).
                self.status(name, NodeStatus::Generating).await?;
                match self.write_tests(name, true).await {
                    Ok(()) => Ok(ControlFlow::Continue(())),
                    Err(e) => self.ended(name, e).await,
                }
            }
            Next::GiveUp { why } => {
                if why == GiveUpWhy::Limit {
                    self.put_back(name, iteration, decide::kept_at_give_up)
                        .await?;
                }
                self.ended(name, Stop::Failed).await
            }
            // Taken above; a decision without its suspect reads no test to blame.
            Next::SetAsideTest => self.ended(name, Stop::Failed).await,
            Next::Attempt { kind } => match self.repair(name, iteration, kind).await {
                Ok(()) => Ok(ControlFlow::Continue(())),
                Err(e) => self.ended(name, e).await,
            },
        }
    }

    /// A decision of the loop's on the tape, with its reason.
    pub(crate) async fn decided(
        &self,
        name: &str,
        iteration: u32,
        decision: &decide::Decision,
    ) -> Result<(), Stop> {
        self.record(Event::Decision(DecisionEvent {
            node: name.to_string(),
            iteration,
            next: decision.next,
            reason: decision.reason.clone(),
        }))
        .await?;
        Ok(())
    }

    /// The version `pick` names (`decide::worse_than_best` after a worse
    /// version, `decide::kept_at_give_up` at the limit) put back, with its
    /// note, while `iteration` is still the node's latest.
    async fn put_back(
        &self,
        name: &str,
        iteration: u32,
        pick: fn(&codeloop_session::State, &str) -> Option<decide::Best>,
    ) -> Result<(), Stop> {
        let node = name.to_string();
        self.tape
            .append_with(move |s| {
                let still = s
                    .nodes
                    .get(&node)
                    .is_some_and(|n| n.iteration() == iteration);
                let events = match still.then(|| pick(s, &node)).flatten() {
                    Some(best) => vec![Event::Code(CodeEvent {
                        node,
                        iteration,
                        code: best.code,
                        source: CodeSource::Best,
                        notes: vec![best.note],
                    })],
                    None => Vec::new(),
                };
                (events, ())
            })
            .await?;
        Ok(())
    }

    /// The node given up for `why` (`give_up`): its life ended.
    async fn ended(&self, name: &str, why: Stop) -> Result<ControlFlow<()>, Stop> {
        self.give_up(name, why).await?;
        Ok(ControlFlow::Break(()))
    }

    /// The run of `name`'s tests at `iteration`, after the step-mode gate
    /// (passed already when `approved`).
    async fn run_node(&self, name: &str, iteration: u32, approved: bool) -> Result<NodeRun, Stop> {
        let answer = if approved {
            GateAnswer::Go
        } else {
            self.gate(Step::Run {
                node: Some(name.to_string()),
                iteration,
            })
            .await
        };
        match answer {
            GateAnswer::Go => {}
            GateAnswer::Skip => {
                self.notice(
                    NoticeLevel::Warning,
                    format!(
                        "the run of `{name}` was skipped: its code is kept untested (not counted as passing)"
                    ),
                )
                .await?;
                self.status(name, NodeStatus::Skipped).await?;
                return Ok(NodeRun::Accepted);
            }
            GateAnswer::Cancel => return Err(Stop::Cancelled),
        }
        if self.iteration_of(name) != iteration {
            return Ok(NodeRun::Edited);
        }
        self.status(name, NodeStatus::Running).await?;
        let prepared = self.read(|s| runs::node_run(s, name, None, self.limits()));
        match prepared {
            Ok(p) => {
                let (record, location) = self
                    .execute(Some(name), iteration, RunKind::NodeTests, p)
                    .await?;
                Ok(NodeRun::Ran(record, Box::new(location)))
            }
            Err(message) => {
                self.notice(
                    NoticeLevel::Error,
                    format!("cannot run `{name}`: {message}"),
                )
                .await?;
                Ok(NodeRun::CannotRun)
            }
        }
    }

    pub(super) async fn give_up(&self, name: &str, why: Stop) -> Result<(), Stop> {
        match why {
            Stop::Cancelled | Stop::Tape(_) => Err(why),
            Stop::Prompt(e) => {
                self.notice(NoticeLevel::Error, e.to_string()).await?;
                self.status(name, NodeStatus::GaveUp).await?;
                Ok(())
            }
            Stop::Skipped | Stop::Budget | Stop::Failed | Stop::Model => {
                self.status(name, NodeStatus::GaveUp).await?;
                Ok(())
            }
        }
    }
}
