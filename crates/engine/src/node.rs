//! One node's life in a pass: tests first, then code, then check, run and
//! repair until it passes, is given up, or the session is cancelled. Every
//! turn reads the node from the state, so an edit made meanwhile (while
//! paused, while the model wrote, while it ran) is what runs next.

use std::ops::ControlFlow;

use super::context::{Core, Stop};
use super::execute;
use super::review::AfterReview;
use super::runs::{self, NO_TEST_RAN};
use super::steering::GateAnswer;
use super::tag::Tag;
use codeloop_protocol::Location;
use codeloop_sandbox::harness::tests_file_name;
use codeloop_session::{
    CodeEvent, CodeSource, Event, LocalizedEvent, NodeStatus, NoticeLevel, RunKind, RunRecord,
    State, Step,
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
                    self.notice(
                        NoticeLevel::Info,
                        format!("the first code of `{name}` could not be used: starting fresh"),
                    )
                    .await?;
                    if let Err(e) = self.fresh_start(name, 0, true).await {
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

    /// After `iteration` failed at `location`: the failure on the tape,
    /// then what comes next: the edit made meanwhile, new tests when the
    /// tests do not load, or a repair, unless nothing can be repaired or
    /// the node is at its limit. `Break` when the node's life ended.
    async fn after_failure(
        &self,
        name: &str,
        iteration: u32,
        location: Option<Location>,
    ) -> Result<ControlFlow<()>, Stop> {
        let now = self.iteration_of(name);
        self.status(name, NodeStatus::Failed).await?;
        let tests_broken = location
            .as_ref()
            .is_some_and(|l| l.file == tests_file_name(name) && l.test.is_none());
        // The code loaded and there is no test to run: a repair has
        // nothing to go by, so none is asked for (it would be a wasted call).
        let nothing_to_repair = self.read(|s| s.nodes.get(name).is_some_and(|n| n.tests.is_none()))
            && location
                .as_ref()
                .is_some_and(|l| l.message.starts_with(NO_TEST_RAN));
        // codeloop failed, not the code: a repair could only guess.
        let codeloops_own = location.as_ref().is_some_and(runs::codeloops_own);
        if let Some(location) = location {
            self.record(Event::Localized(LocalizedEvent {
                node: name.to_string(),
                iteration,
                location,
            }))
            .await?;
        }
        if now != iteration {
            return Ok(ControlFlow::Continue(())); // edited while it ran: run the edit
        }
        // Never worse: a version that passes fewer of the node's tests than
        // the best before it is not kept. The best is put back and runs
        // again, then is repaired (or given up at the limit) from there.
        if let Some((code, note)) = self.read(|s| worse_than_best(s, name)) {
            let node = name.to_string();
            self.tape
                .append_with(move |s| {
                    let still = s
                        .nodes
                        .get(&node)
                        .is_some_and(|n| n.iteration() == iteration);
                    let events = if still {
                        vec![Event::Code(CodeEvent {
                            node,
                            iteration,
                            code,
                            source: CodeSource::Best,
                            notes: vec![note],
                        })]
                    } else {
                        Vec::new()
                    };
                    (events, ())
                })
                .await?;
            return Ok(ControlFlow::Continue(()));
        }
        let retag = Tag::Tests {
            node: name.to_string(),
            again: true,
        };
        let tests_rewritten = self.read(|s| retag.latest_call(s).is_some());
        if tests_broken && !tests_rewritten && !self.tests_given(name) {
            // The tests themselves do not load: no code change can fix
            // that. Ask for the tests again, once (the tape says whether
            // they were, so a resume asks no more).
            self.notice(
                NoticeLevel::Warning,
                format!("the tests of `{name}` do not load: asking for new tests"),
            )
            .await?;
            self.status(name, NodeStatus::Generating).await?;
            return match self.write_tests(name, true).await {
                Ok(()) => Ok(ControlFlow::Continue(())),
                Err(e) => self.ended(name, e).await,
            };
        }
        if codeloops_own {
            self.notice(
                NoticeLevel::Error,
                format!(
                    "`{name}` was not judged: codeloop could not run its tests (its own error, not the code's), so no repair is asked for: its failure says what went wrong"
                ),
            )
            .await?;
            return self.ended(name, Stop::Failed).await;
        }
        if nothing_to_repair {
            self.notice(
                NoticeLevel::Warning,
                format!(
                    "`{name}` has no tests, so no repair is asked for: write its tests in the Code pane and run it again, or name the function and state an example in the task (`a function f(x) that …: f(2) == 4`): the example becomes a test"
                ),
            )
            .await?;
            return self.ended(name, Stop::Failed).await;
        }
        if self.given_up_at_limit(name, iteration).await? {
            return Ok(ControlFlow::Break(()));
        }
        if let Err(e) = self.repair(name, iteration).await {
            return self.ended(name, e).await;
        }
        Ok(ControlFlow::Continue(()))
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
            Stop::Skipped | Stop::Budget | Stop::Failed => {
                self.status(name, NodeStatus::GaveUp).await?;
                Ok(())
            }
        }
    }
}

/// The best earlier version of `name`'s code and why, when its current
/// version (one the model wrote, or codeloop mended) passed fewer of the
/// node's tests than it: the current one ran (or could not run, and so
/// passed none) against the tests the best ran against.
fn worse_than_best(s: &State, name: &str) -> Option<(String, String)> {
    let n = s.nodes.get(name)?;
    let current = n.versions.len().checked_sub(1)?;
    let latest = &n.versions[current];
    if !matches!(
        latest.source,
        CodeSource::Model | CodeSource::Mended | CodeSource::PlanReply
    ) {
        return None; // the person's edit, or codeloop's own choice: kept
    }
    let scores = s.version_scores(name);
    let now = scores.iter().find(|x| x.version == current);
    let passed = now.map_or(0, |x| x.passed);
    // `max_by_key` gives the last of equals: the latest.
    let best = scores
        .iter()
        .filter(|x| x.version < current)
        .max_by_key(|x| x.passed)?;
    if passed >= best.passed {
        return None;
    }
    let total = best.total.max(now.map_or(0, |x| x.total));
    let ran = match now {
        Some(_) => format!("passed {passed} of {total} tests"),
        None => "could not run".to_string(),
    };
    let note = format!(
        "version {} {ran}, fewer than version {}'s {} of {}: version {} is kept and goes on",
        latest.iteration, best.iteration, best.passed, best.total, best.iteration
    );
    Some((n.versions[best.version].code.clone(), note))
}
