//! Generation: a node's tests, its first code, and a repair (the reflection
//! on a localized failure and the next iteration, in one call), each with the
//! prompt context it is written from, read from the state when the call is
//! approved.

use serde::Serialize;

use super::context::{Core, Stop};
use super::conversation;
use super::examples;
use super::extract;
use super::prompts::{PromptInput, prompt_inputs};
use super::testfix;
use codeloop_protocol::{ChatMessage, Location, Role};
use codeloop_session::state::HistoryEntry;
use codeloop_session::{
    AttemptKind, CodeSource, Event, FunctionSpec, NodeStatus, NoticeLevel, Purpose, State,
};

/// Lines of a failed run's output shown to the repair.
const OUTPUT_LINES: usize = 30;

/// A dependency as the prompts show it.
#[derive(Serialize)]
pub(super) struct DepCtx {
    pub(super) name: String,
    pub(super) purpose: String,
    pub(super) code: String,
}

/// What the prompts of a node need: its spec, its direct dependencies, the
/// task and its input files, the whole plan, its tests. Every prompt about
/// the node begins with these (prompts/node.md), in this order, so a
/// server's prompt cache reuses them from one call to the next.
pub(super) struct NodeCtx {
    pub(super) spec: FunctionSpec,
    pub(super) deps: Vec<DepCtx>,
    pub(super) task: String,
    pub(super) inputs: Vec<PromptInput>,
    pub(super) plan: Vec<FunctionSpec>,
    pub(super) tests: Option<String>,
}

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

pub(super) fn node_ctx(s: &State, name: &str) -> Option<NodeCtx> {
    let n = s.nodes.get(name)?;
    let deps = n
        .spec
        .depends_on
        .iter()
        .filter_map(|d| s.nodes.get(d))
        .map(|d| DepCtx {
            name: d.spec.name.clone(),
            purpose: d.spec.purpose.clone(),
            code: d.code().unwrap_or("").to_string(),
        })
        .collect();
    Some(NodeCtx {
        spec: n.spec.clone(),
        deps,
        task: s.task.clone(),
        inputs: prompt_inputs(&s.inputs),
        plan: s.specs.clone(),
        tests: n.tests.clone(),
    })
}

fn repair_ctx(s: &State, name: &str) -> Option<RepairCtx> {
    let n = s.nodes.get(name)?;
    let failures = s
        .history
        .iter()
        .filter_map(|h| match h {
            HistoryEntry::Failure {
                node,
                iteration,
                location,
            } if node == name => Some((*iteration, location.clone())),
            _ => None,
        })
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

/// What a repair call brought.
enum RepairReply {
    /// The next version of the code.
    Code(String),
    /// New tests: the reflection blamed the tests (`reason`).
    Tests { tests: String, reason: String },
}

/// The kind of the attempt after `name`'s latest failure. With fresh starts:
/// a repair, until three code versions since the last fresh start (the first
/// try and two repairs) have failed; then a fresh start. Without: a repair,
/// another approach when the last two failures are the same.
fn attempt_kind(s: &State, name: &str, fresh_start: bool) -> AttemptKind {
    let failures: Vec<(u32, &Location)> = s
        .history
        .iter()
        .filter_map(|h| match h {
            HistoryEntry::Failure {
                node,
                iteration,
                location,
            } if node == name => Some((*iteration, location)),
            _ => None,
        })
        .collect();
    if fresh_start {
        let since = s
            .nodes
            .get(name)
            .and_then(|n| {
                n.attempts
                    .iter()
                    .rev()
                    .find(|a| a.kind == AttemptKind::FreshStart)
            })
            .map(|a| a.iteration)
            .unwrap_or(1);
        let mut failed: Vec<u32> = failures
            .iter()
            .map(|(it, _)| *it)
            .filter(|it| *it >= since)
            .collect();
        failed.dedup();
        return if failed.len() >= 3 {
            AttemptKind::FreshStart
        } else {
            AttemptKind::Repair
        };
    }
    let signature = |l: &Location| (l.error_type.clone(), l.line, l.test.clone());
    match failures.as_slice() {
        [.., (_, a), (_, b)] if signature(a) == signature(b) => AttemptKind::DifferentApproach,
        _ => AttemptKind::Repair,
    }
}

impl Core {
    /// Ask for `name`'s tests; `tag` is a pattern in which `{name}` is replaced.
    pub(crate) async fn write_tests(&self, name: &str, tag: &str) -> Result<(), Stop> {
        let purpose = Purpose::Tests {
            node: name.to_string(),
        };
        self.may_ask(&purpose).await?;
        let Some(NodeCtx {
            spec,
            deps,
            task,
            inputs,
            plan,
            ..
        }) = self.read(|s| node_ctx(s, name))
        else {
            return Err(Stop::Failed);
        };
        let prompt = self.prompts.render(
            "tests.md",
            minijinja::context! { task, inputs, plan, spec, deps },
        )?;
        let messages = self.messages(prompt)?;
        let (_, code) = self
            .call_for_code(purpose, tag.replace("{name}", name), messages, None, None)
            .await?;
        // Tests that define a planned function themselves test their own
        // copy, never the code (SmolLM2's tests redefined the function and
        // passed against broken code): not used.
        let planned: Vec<String> = self.read(|s| s.specs.iter().map(|f| f.name.clone()).collect());
        if let Some(own) = defines_one_of(&code, &planned) {
            self.notice(
                NoticeLevel::Warning,
                format!(
                    "the tests of `{name}` define `{own}` themselves, so they would test their own copy: they are not used"
                ),
            )
            .await?;
            return Err(Stop::Failed);
        }
        let examples = self.read(|s| examples::from_task(&s.task, name));
        let (code, corrected) = examples::ground(&code, &examples);
        if !corrected.is_empty() {
            self.notice(
                NoticeLevel::Info,
                format!(
                    "the tests of `{name}` contradicted the task's own examples, which win: {}",
                    corrected.join("; ")
                ),
            )
            .await?;
        }
        self.record(Event::Tests {
            node: name.to_string(),
            code,
            source: CodeSource::Model,
        })
        .await?;
        Ok(())
    }

    /// Ask for `name`'s first code.
    pub(crate) async fn write_code(&self, name: &str) -> Result<(), Stop> {
        let purpose = Purpose::Code {
            node: name.to_string(),
        };
        self.may_ask(&purpose).await?;
        let Some(NodeCtx {
            spec,
            deps,
            task,
            inputs,
            plan,
            tests,
        }) = self.read(|s| node_ctx(s, name))
        else {
            return Err(Stop::Failed);
        };
        let tests = self.shown_tests(tests);
        // Go on with the conversation that wrote the tests, when they are
        // still its reply: a server's cache then computes only this turn.
        let after_tests = match tests.as_deref() {
            Some(t) => self.read(|s| conversation::after_tests(s, name, t, &deps)),
            None => None,
        };
        let messages = match after_tests {
            Some(mut messages) => {
                messages.push(ChatMessage {
                    role: Role::User,
                    content: self
                        .prompts
                        .render("code_next.md", minijinja::context! { spec, tests })?,
                });
                messages
            }
            None => self.messages(self.prompts.render(
                "code.md",
                minijinja::context! { task, inputs, plan, spec, deps, tests },
            )?)?,
        };
        let (_, code) = self
            .call_for_code(
                purpose,
                format!("code/{name}/1"),
                messages.clone(),
                Some(name),
                None,
            )
            .await?;
        // Several candidates (`--candidates N`): the one most agree with.
        let code = if self.opts.candidates > 1 {
            self.by_consensus(name, messages, code).await?
        } else {
            self.with_prelude(name, code)
        };
        // An edit that arrived while the model wrote wins: keep it.
        let node = name.to_string();
        self.tape
            .append_with(move |s| {
                let edited = s.nodes.get(&node).is_some_and(|n| !n.versions.is_empty());
                let events = if edited {
                    Vec::new()
                } else {
                    vec![Event::Code {
                        node,
                        iteration: 1,
                        code,
                        source: CodeSource::Model,
                    }]
                };
                (events, ())
            })
            .await?;
        Ok(())
    }

    /// Write iteration + 1 after the localized failure of `iteration`: a
    /// repair (the reflection and the fix in one call, or a fix of the tests
    /// when the reflection blames them), or a fresh start (see `attempt_kind`).
    pub(crate) async fn repair(&self, name: &str, iteration: u32) -> Result<(), Stop> {
        let kind = self.read(|s| attempt_kind(s, name, self.opts.fresh_start));
        if kind == AttemptKind::FreshStart {
            return self.fresh_start(name, iteration).await;
        }
        let may_fix_tests =
            !self.tests_given(name) && self.read(|s| testfix::may_fix_tests(s, name));
        let reply = self
            .repair_call(name, iteration, kind, may_fix_tests, None)
            .await?;
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
        let last = failures.last().map(|(_, l)| l);
        let error = last
            .map(Location::render)
            .unwrap_or_else(|| "the tests failed (no location)".into());
        let values = match last {
            Some(l) if self.opts.runtime_values => l.values_trace(),
            _ => String::new(),
        };
        // The same trace's coverage: the function with what ran marked.
        let coverage = match last {
            Some(l) if self.opts.runtime_values => l.executed_blocks(&code, name),
            _ => String::new(),
        };
        // What the review before running found in this version, if it was reviewed.
        let review: Vec<String> = self.read(|s| {
            s.nodes
                .get(name)
                .and_then(|n| n.reviews.iter().rev().find(|r| r.iteration == iteration))
                .map(|r| r.findings.iter().map(|f| f.line_text()).collect())
                .unwrap_or_default()
        });
        let different_approach = kind == AttemptKind::DifferentApproach;
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
                minijinja::context! { task, inputs, plan, spec, deps, tests },
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
        let messages = fitted.messages;
        let next = iteration + 1;
        self.record(Event::Attempt {
            node: name.to_string(),
            iteration: next,
            kind,
            runtime_values: !values.is_empty(),
        })
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
                purpose,
                format!("repair/{name}/{next}"),
                messages,
                want,
                different_approach.then_some(0.8),
            )
            .await?;
        let reflection = extract::prose_before_code(&reply);
        self.record(Event::Reflection {
            node: name.to_string(),
            iteration,
            text: reflection.clone(),
        })
        .await?;
        if may_fix_tests && testfix::verdict(&reflection) == testfix::Verdict::Tests {
            // The block that holds the tests, should the reply have code too.
            let tests = first_test
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
        Ok(RepairReply::Code(code))
    }

    /// Write iteration + 1 from the spec, the tests and the failures seen so
    /// far, without the failing code.
    async fn fresh_start(&self, name: &str, iteration: u32) -> Result<(), Stop> {
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
        let prompt = self.prompts.render(
            "fresh.md",
            minijinja::context! {
                task, inputs, plan, spec, deps, tests => self.shown_tests(tests), failures, hints,
            },
        )?;
        let messages = self.messages(prompt)?;
        let next = iteration + 1;
        self.record(Event::Attempt {
            node: name.to_string(),
            iteration: next,
            kind: AttemptKind::FreshStart,
            runtime_values: false,
        })
        .await?;
        self.notice(
            NoticeLevel::Info,
            format!("`{name}` failed after two repairs: starting fresh from the spec"),
        )
        .await?;
        self.status(name, NodeStatus::Generating).await?;
        let (_, code) = self
            .call_for_code(
                purpose,
                format!("fresh/{name}/{next}"),
                messages,
                Some(name),
                None,
            )
            .await?;
        self.write_version(name, iteration, code).await
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
                    vec![Event::Code {
                        node,
                        iteration: next,
                        code,
                        source: CodeSource::Model,
                    }]
                };
                (events, ())
            })
            .await?;
        Ok(())
    }

    /// The tests as the model may see them.
    pub(super) fn shown_tests(&self, tests: Option<String>) -> Option<String> {
        if self.given.as_ref().is_some_and(|g| g.hidden_tests) {
            None
        } else {
            tests
        }
    }

    /// `code` with the node's given prelude (a benchmark's imports and
    /// helpers) in front, unless it already holds it.
    pub(super) fn with_prelude(&self, name: &str, code: String) -> String {
        match self.given.as_ref().and_then(|g| g.preludes.get(name)) {
            Some(prelude) if !prelude.trim().is_empty() && !code.contains(prelude.trim()) => {
                format!("{}\n{code}", prelude.trim_end())
            }
            _ => code,
        }
    }
}

/// The first of `names` that `code` defines at its top level (`def name(`).
fn defines_one_of<'a>(code: &str, names: &'a [String]) -> Option<&'a str> {
    code.lines().find_map(|line| {
        let rest = line
            .strip_prefix("async def ")
            .or_else(|| line.strip_prefix("def "))?;
        let defined = rest.split('(').next()?.trim();
        names
            .iter()
            .find(|n| n.as_str() == defined)
            .map(String::as_str)
    })
}
