//! A repair: what follows a node's localized failure, of the kind the loop
//! decided (`decide::next`: a repair, another approach, or a fresh start); the
//! repair's prompt (the failure, its runtime values and coverage, the
//! review's findings, as the next turn of the conversation that wrote the
//! code, fitted to the context window by `conversation::fit`), its call,
//! and its reply read as the next code or, when the reflection blames
//! them, new tests; a fresh start from the spec and the failures.

use super::calls::Ask;
use super::context::{Core, Stop};
use super::conversation;
use super::decide::Decision;
use super::execute;
use super::extract;
use super::generate::{NodeCtx, node_ctx};
use super::looped;
use super::named;
use super::repeat;
use super::tag::Tag;
use super::testfix;
use codeloop_protocol::{ChatMessage, Location};
use codeloop_session::{
    AttemptEvent, AttemptKind, CodeEvent, CodeSource, Event, FunctionSpec, NodeStatus, NoticeLevel,
    Purpose, ReflectionEvent, State,
};

/// Lines of a failed run's output shown to the repair.
const OUTPUT_LINES: usize = 30;

/// What a repair is written from.
struct RepairCtx {
    spec: FunctionSpec,
    code: String,
    tests: Option<String>,
    hints: Vec<String>,
    /// Every localized failure of the node, oldest first.
    failures: Vec<(u32, Location)>,
    /// The end of the last run's output.
    output: String,
    task: String,
}

fn repair_ctx(s: &State, name: &str) -> Option<RepairCtx> {
    let n = s.nodes.get(name)?;
    let failures = s
        .failures_of(name)
        .map(|f| (f.iteration, f.location.clone()))
        .collect();
    let output = n
        .last_run
        .and_then(|r| s.runs.get(&r))
        .map(|r| {
            let all: String = r.chunks.iter().map(|(_, t)| t.as_str()).collect();
            let lines: Vec<&str> = all.lines().collect();
            lines[lines.len().saturating_sub(OUTPUT_LINES)..].join("\n")
        })
        .unwrap_or_default();
    Some(RepairCtx {
        spec: n.spec.clone(),
        code: n.code().unwrap_or("").to_string(),
        tests: n.tests.clone(),
        hints: n.hints.clone(),
        failures,
        output,
        task: s.task.clone(),
    })
}

/// What a repair asks for beyond the fix.
struct RepairAsk {
    /// The last two failures were the same: another approach.
    different_approach: bool,
    /// The reflection may blame the tests and fix them.
    may_fix_tests: bool,
    /// Why the tests the last reply proposed were refused.
    tests_rejected: Option<String>,
}

/// What a repair prompt shows of the failure it repairs.
struct FailureShown {
    /// The failure, located, in several lines.
    error: String,
    /// The runtime values along the failing path (none without `runtime_values`).
    values: String,
    /// The function with the lines that ran marked (likewise).
    coverage: String,
    /// What the review before running found in the failing version.
    review: Vec<String>,
}

/// A repair's prompt, and what reading its reply needs.
struct RepairPrompt {
    messages: Vec<ChatMessage>,
    /// The prompt shows the runtime values at the failure.
    runtime_values: bool,
    /// The first test of the node's tests: the block of a reply that fixes them.
    first_test: Option<String>,
}

/// What a repair call brought.
enum RepairReply {
    /// The next version of the code.
    Code(String),
    /// New tests: the reflection blamed the tests (`reason`).
    Tests { tests: String, reason: String },
}

impl Core {
    /// Write iteration + 1 after the localized failure of `iteration`, as
    /// the loop decided (`decide::next`): a repair (the reflection and the
    /// fix in one call, or a fix of the tests when the reflection blames
    /// them), another approach, or a fresh start.
    pub(crate) async fn repair(
        &self,
        name: &str,
        iteration: u32,
        kind: AttemptKind,
    ) -> Result<(), Stop> {
        if kind == AttemptKind::FreshStart {
            return self.fresh_start(name, iteration).await;
        }
        let may_fix_tests =
            !self.tests_given(name) && self.read(|s| testfix::may_fix_tests(s, name));
        let reply = match self
            .repair_call(name, iteration, kind, may_fix_tests, None)
            .await
        {
            Ok(reply) => reply,
            // No code in the reply, asked twice: a fresh start may still
            // bring some, where fresh starts are on.
            Err(Stop::Failed) if self.opts.policy.fresh_start => {
                self.decided(
                    name,
                    iteration,
                    &Decision::fresh_start("the repair brought no code, asked twice"),
                )
                .await?;
                return self.fresh_start(name, iteration).await;
            }
            Err(e) => return Err(e),
        };
        let reply = match reply {
            RepairReply::Code(code) => code,
            RepairReply::Tests { tests, reason } => {
                match self.test_fix(name, iteration, tests, reason).await? {
                    None => return Ok(()), // applied: the same code runs the new tests
                    Some(why) => {
                        match self
                            .repair_call(name, iteration, kind, false, Some(why))
                            .await?
                        {
                            RepairReply::Code(code) => code,
                            // Not offered: a reply that blames the tests again fixes nothing.
                            RepairReply::Tests { .. } => return Err(Stop::Failed),
                        }
                    }
                }
            }
        };
        let repeated =
            self.read(|s| repeat::repeats(s, name, &self.with_prelude(name, reply.clone())));
        if let Some(earlier) = repeated.filter(|_| self.opts.policy.fresh_start) {
            self.decided(
                name,
                iteration,
                &Decision::fresh_start(format!(
                    "the repair wrote version {earlier} again, which failed: not run"
                )),
            )
            .await?;
            return self.fresh_start(name, iteration).await;
        }
        self.write_version(name, iteration, reply).await
    }

    /// One repair call: the prompt, its attempt and its reflection on the
    /// tape; the code of the reply, or its tests when the reflection's
    /// verdict blames them (only when `may_fix_tests`).
    async fn repair_call(
        &self,
        name: &str,
        iteration: u32,
        kind: AttemptKind,
        may_fix_tests: bool,
        tests_rejected: Option<String>,
    ) -> Result<RepairReply, Stop> {
        let purpose = Purpose::Reflect {
            node: name.to_string(),
        };
        self.may_ask(&purpose).await?;
        let different_approach = kind == AttemptKind::DifferentApproach;
        let asked = RepairAsk {
            different_approach,
            may_fix_tests,
            tests_rejected,
        };
        let prompt = self.repair_prompt(name, iteration, asked).await?;
        let next = iteration + 1;
        self.record(Event::Attempt(AttemptEvent {
            node: name.to_string(),
            iteration: next,
            kind,
            runtime_values: prompt.runtime_values,
        }))
        .await?;
        if different_approach {
            self.notice(
                NoticeLevel::Info,
                format!("`{name}` failed the same way twice: asking for a different approach"),
            )
            .await?;
        }
        self.status(name, NodeStatus::Generating).await?;
        let want = (!may_fix_tests).then_some(name);
        let (reply, code) = self
            .call_for_code(
                Ask::new(
                    purpose,
                    Tag::Repair {
                        node: name.to_string(),
                        iteration: next,
                    },
                    prompt.messages,
                )
                .with_temperature(
                    different_approach.then_some(self.opts.policy.different_approach_temperature),
                ),
                want,
            )
            .await?;
        let prose = extract::prose_before_code(&reply);
        // The verdict line the prompt asks for is read, not shown; a
        // reflection that repeats itself is cut, marked, and not fed on.
        let (reflection, looped) = looped::kept(&testfix::without_verdict(&prose));
        if let Some(what) = looped {
            self.notice(
                NoticeLevel::Warning,
                format!("the reflection on `{name}` #{iteration}: {what}; it is cut there and not given to the next repair"),
            )
            .await?;
        }
        self.record(Event::Reflection(ReflectionEvent {
            node: name.to_string(),
            iteration,
            text: reflection.clone(),
        }))
        .await?;
        // A reflection that blames the test where no fix of it is asked
        // for: the doubt is said, and step mode waits (`suspect`).
        let doubt = super::suspect::doubt(&prose, may_fix_tests);
        if may_fix_tests && testfix::verdict(&prose) == testfix::Verdict::Tests {
            // The block that holds the tests, should the reply have code too.
            let tests = prompt
                .first_test
                .and_then(|t| extract::extract_code(&reply, Some(&t)))
                .unwrap_or(code);
            return Ok(RepairReply::Tests {
                tests,
                reason: reflection,
            });
        }
        let code = match want {
            Some(_) => code,
            None => extract::extract_code(&reply, Some(name)).unwrap_or(code),
        };
        if let Some(why) = doubt {
            self.doubt_test(name, iteration, why).await?;
        }
        Ok(RepairReply::Code(code))
    }

    /// The prompt of the repair after `iteration`'s failure, read from the
    /// state and fitted to the model's context window (a notice says what
    /// was left out).
    async fn repair_prompt(
        &self,
        name: &str,
        iteration: u32,
        asked: RepairAsk,
    ) -> Result<RepairPrompt, Stop> {
        let Some((
            NodeCtx {
                deps, inputs, plan, ..
            },
            RepairCtx {
                spec,
                code,
                tests,
                hints,
                failures,
                output,
                task,
            },
        )) = self.read(|s| Some((node_ctx(s, name)?, repair_ctx(s, name)?)))
        else {
            return Err(Stop::Failed);
        };
        let RepairAsk {
            different_approach,
            may_fix_tests,
            tests_rejected,
        } = asked;
        let FailureShown {
            error,
            values,
            coverage,
            review,
        } = self.failure_shown(name, iteration, &code, &failures);
        let first_test = tests.as_deref().and_then(testfix::first_test_name);
        let tests = self.shown_tests(tests);
        // Go on with the conversation that wrote this code, when it still
        // holds; else begin again from the node's code prompt, followed by
        // the code as the model's turn.
        let conversation = self.read(|s| {
            conversation::so_far(s, name, iteration, &code, tests.as_deref(), &deps, |c| {
                self.with_prelude(name, c)
            })
        });
        let opening = {
            let mut messages = self.messages(self.prompts.render(
                "code.md",
                minijinja::context! { task, inputs, plan, spec, deps, tests, head => named::head_of(&spec) },
            )?)?;
            messages.push(conversation::code_turn(&code));
            messages
        };
        let turns = conversation::RepairTurns {
            conversation,
            opening,
            earlier: conversation::earlier(&failures),
            output,
        };
        let window = self.model.context_window().await.map(|w| w.tokens);
        let fitted = conversation::fit(turns, window, |history, output| {
            self.prompts.render(
                "repair.md",
                minijinja::context! {
                    spec, tests, iteration, code, error, values,
                    coverage, output, history, hints, different_approach, review,
                    tests_may_change => may_fix_tests, tests_rejected,
                },
            )
        })?;
        if let Some(message) = fitted.dropped.notice(name, window.unwrap_or(0)) {
            self.notice(NoticeLevel::Warning, message).await?;
        }
        Ok(RepairPrompt {
            messages: fitted.messages,
            runtime_values: !values.is_empty(),
            first_test,
        })
    }

    /// What the repair prompt shows of `iteration`'s failure, the last of
    /// `failures`, in `code`.
    fn failure_shown(
        &self,
        name: &str,
        iteration: u32,
        code: &str,
        failures: &[(u32, Location)],
    ) -> FailureShown {
        let last = failures.last().map(|(_, l)| l);
        let error = last
            .map(Location::render)
            .unwrap_or_else(|| "the tests failed (no location)".into());
        let values = match last {
            Some(l) if self.opts.policy.runtime_values => l.values_trace(),
            _ => String::new(),
        };
        // The same trace's coverage: the function with what ran marked.
        let coverage = match last {
            Some(l) if self.opts.policy.runtime_values => l.executed_blocks(code, name),
            _ => String::new(),
        };
        // What the review before running found in this version, if it was reviewed.
        let review: Vec<String> = self.read(|s| {
            s.review_of(name, iteration)
                .map(|r| r.findings.iter().map(|f| f.line_text()).collect())
                .unwrap_or_default()
        });
        FailureShown {
            error,
            values,
            coverage,
            review,
        }
    }

    /// Write iteration + 1 from the spec, the tests and the failures seen so
    /// far, without the failing code (the caller's decision said why).
    pub(crate) async fn fresh_start(&self, name: &str, iteration: u32) -> Result<(), Stop> {
        let purpose = Purpose::Code {
            node: name.to_string(),
        };
        self.may_ask(&purpose).await?;
        let Some((
            NodeCtx {
                spec,
                deps,
                task,
                inputs,
                plan,
                tests,
            },
            RepairCtx {
                hints, failures, ..
            },
        )) = self.read(|s| Some((node_ctx(s, name)?, repair_ctx(s, name)?)))
        else {
            return Err(Stop::Failed);
        };
        let failures: Vec<String> = failures
            .iter()
            .map(|(it, l)| format!("iteration {it}: {}", Location::prompt_line(l)))
            .collect();
        let head = named::head_of(&spec);
        let prefill = self.prefill(head.as_deref());
        // Asked again because the last reply was no function (`attempt_kind`).
        let unreadable = self
            .read(|s| execute::blocking_failure(s, name))
            .filter(execute::unreadable);
        // Or there is no version yet: the first reply held no function.
        let asked_again = unreadable.is_some() || iteration == 0;
        let prompt = self.prompts.render(
            "fresh.md",
            minijinja::context! {
                task, inputs, plan, spec, deps, tests => self.shown_tests(tests), failures, hints, head, asked_again,
            },
        )?;
        let messages = self.messages(prompt)?;
        let next = iteration + 1;
        self.record(Event::Attempt(AttemptEvent {
            node: name.to_string(),
            iteration: next,
            kind: AttemptKind::FreshStart,
            runtime_values: false,
        }))
        .await?;
        self.status(name, NodeStatus::Generating).await?;
        let mut ask = 1;
        loop {
            let (_, code) = self
                .call_for_code(
                    Ask::new(
                        purpose.clone(),
                        Tag::Fresh {
                            node: name.to_string(),
                            iteration: next,
                            ask,
                        },
                        messages.clone(),
                    )
                    .with_prefill(prefill.clone())
                    .with_temperature(self.fresh_temperature(ask)),
                    Some(name),
                )
                .await?;
            let repeated =
                self.read(|s| repeat::repeats(s, name, &self.with_prelude(name, code.clone())));
            match repeated {
                Some(earlier) if ask < self.opts.policy.fresh_asks => {
                    self.notice(
                        NoticeLevel::Info,
                        format!(
                            "the fresh start of `{name}` wrote version {earlier} again, which failed: not run; asking again ({} of {})",
                            ask + 1,
                            self.opts.policy.fresh_asks
                        ),
                    )
                    .await?;
                    ask += 1;
                }
                // The last ask's reply runs, repeat or not: the node's
                // iterations, not its calls, bound its tries.
                _ => return self.write_version(name, iteration, code).await,
            }
        }
    }

    /// The temperature of a fresh start's `ask`-th call: the settings' when
    /// they name one (the first code's is then theirs too), else
    /// the policy's `fresh_temperature`, hotter by its `repeat_heat` for
    /// each ask after a repeat.
    fn fresh_temperature(&self, ask: u32) -> Option<f32> {
        let p = &self.opts.policy;
        self.opts
            .first_temperature
            .map(|_| p.fresh_temperature + p.repeat_heat * ask.saturating_sub(1) as f32)
    }

    /// Record `code` as iteration + 1, unless an edit arrived meanwhile (it wins).
    async fn write_version(&self, name: &str, iteration: u32, code: String) -> Result<(), Stop> {
        let code = self.with_prelude(name, code);
        let node = name.to_string();
        let next = iteration + 1;
        self.tape
            .append_with(move |s| {
                let edited = s
                    .nodes
                    .get(&node)
                    .is_some_and(|n| n.iteration() != iteration);
                let events = if edited {
                    Vec::new()
                } else {
                    vec![Event::Code(CodeEvent {
                        node,
                        iteration: next,
                        code,
                        source: CodeSource::Model,
                        notes: Vec::new(),
                    })]
                };
                (events, ())
            })
            .await?;
        Ok(())
    }
}
