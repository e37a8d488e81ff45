//! Generation: a node's tests and its first code, with the prompt context
//! every prompt about a node is written from (`node_ctx`), read from the
//! state when the call is approved. What follows a failure is `repair`.

use serde::Serialize;

use super::arity;
use super::calls::Ask;
use super::cases::{self, TestsFormat};
use super::context::{Core, Stop};
use super::conversation;
use super::examples;
use super::extract;
use super::named;
use super::prompts::{PromptInput, prompt_inputs};
use super::schemas;
use super::tag::Tag;
use super::tidy;
use codeloop_protocol::{ChatMessage, Role};
use codeloop_session::{
    CodeEvent, CodeSource, Event, FunctionSpec, NoticeLevel, Purpose, State, TestsEvent,
};

/// A dependency as the prompts show it.
#[derive(Serialize)]
pub(super) struct DepCtx {
    name: String,
    purpose: String,
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

impl Core {
    /// Ask for `name`'s tests (`again`: once more, as they did not load):
    /// as cases or as a test file (`EngineOptions::tests`), each way falling
    /// back to the other when its reply is unusable (`cases.rs`).
    pub(crate) async fn write_tests(&self, name: &str, again: bool) -> Result<(), Stop> {
        let purpose = Purpose::Tests {
            node: name.to_string(),
        };
        self.may_ask(&purpose).await?;
        let Some(ctx) = self.read(|s| node_ctx(s, name)) else {
            return Err(Stop::Failed);
        };
        let tag = Tag::Tests {
            node: name.to_string(),
            again,
        };
        let examples = self.read(|s| examples::from_task(&s.task, name));
        let code = match self.model_tests(name, tag, &ctx).await {
            Ok(code) => code,
            // The model gave no tests it could use, but the task states
            // examples: they are the node's tests, as given with the task.
            Err(Stop::Failed | Stop::Model) if !examples.is_empty() => {
                let (code, _) = examples::ground("", &examples);
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "the model gave no tests of `{name}` it could use: the task's own examples are its tests ({})",
                        examples.len()
                    ),
                )
                .await?;
                self.record(Event::Tests(TestsEvent {
                    node: name.to_string(),
                    code: code.trim_start().to_string(),
                    source: CodeSource::Given,
                }))
                .await?;
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        // The signature the task gave is a fact: a test that calls the
        // function with arguments it cannot take is left out before any
        // code runs. (A planned one is the model's own guess, as its tests
        // are: not held against them.)
        let arity = ctx
            .spec
            .head
            .as_deref()
            .and_then(|h| arity::Arity::of_def(h, name));
        let code = match arity {
            Some(arity) => {
                let (kept, left_out) = arity::without_misfits(&code, name, arity);
                if !left_out.is_empty() {
                    self.notice(
                        NoticeLevel::Info,
                        format!(
                            "{} of `{name}` left out: {} with arguments it cannot take (it {}): {}",
                            codeloop_protocol::present::count(left_out.len(), "test"),
                            if left_out.len() == 1 {
                                "it calls it"
                            } else {
                                "they call it"
                            },
                            arity.words(),
                            left_out.join(", ")
                        ),
                    )
                    .await?;
                    // Nothing left to judge by, and no example to add.
                    if examples.is_empty() && !kept.contains("assert") && !kept.contains("raise") {
                        return Err(Stop::Failed);
                    }
                }
                kept
            }
            None => code,
        };
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
        self.record(Event::Tests(TestsEvent {
            node: name.to_string(),
            code,
            source: CodeSource::Model,
        }))
        .await?;
        Ok(())
    }

    /// The model's tests of `name`: as cases or as a test file
    /// (`EngineOptions::tests`), each way falling back to the other when
    /// its reply is unusable.
    async fn model_tests(&self, name: &str, tag: Tag, ctx: &NodeCtx) -> Result<String, Stop> {
        Ok(match self.opts.tests {
            TestsFormat::Data => match self.tests_as_data(name, tag.clone(), ctx).await? {
                Some(code) => code,
                None => self.tests_as_code(name, tag.retry(), ctx, false).await?,
            },
            TestsFormat::Code => match self.tests_as_code(name, tag.clone(), ctx, true).await {
                Err(Stop::Failed) => match self.tests_as_data(name, tag.retry(), ctx).await? {
                    Some(code) => code,
                    None => return Err(Stop::Failed),
                },
                other => other?,
            },
        })
    }

    /// `name`'s tests asked for as cases (`tag`), rendered into a test
    /// file; a reply that holds a test file instead is taken as one. None
    /// when the reply gave neither (said in a notice).
    async fn tests_as_data(
        &self,
        name: &str,
        tag: Tag,
        ctx: &NodeCtx,
    ) -> Result<Option<String>, Stop> {
        let NodeCtx {
            spec,
            deps,
            task,
            inputs,
            plan,
            ..
        } = ctx;
        let prompt = self.prompts.render(
            "cases.md",
            minijinja::context! { task, inputs, plan, spec, deps },
        )?;
        let purpose = Purpose::Tests {
            node: name.to_string(),
        };
        let ask = Ask::new(purpose, tag.clone(), self.messages(prompt)?)
            .with_schema(schemas::cases())
            .with_temperature(self.opts.first_temperature);
        let reply = self.ask(ask).await?;
        match cases::read(&reply, name) {
            Ok((cases, left_out)) => {
                if left_out > 0 {
                    self.notice(
                        NoticeLevel::Info,
                        format!(
                            "{} of the test cases of `{name}` left out (not literals, or a call given twice)",
                            left_out
                        ),
                    )
                    .await?;
                }
                Ok(Some(cases::render(name, &cases)))
            }
            Err(why) => {
                if let Some(code) = extract::extract_code(&reply, None)
                    && code.contains("def test")
                {
                    self.notice(
                        NoticeLevel::Info,
                        format!("the reply to {tag} was a test file, not cases: it is used as one"),
                    )
                    .await?;
                    return self.usable_tests(name, code).await.map(Some);
                }
                self.notice(
                    NoticeLevel::Warning,
                    format!("the test cases of `{name}` could not be used ({why})"),
                )
                .await?;
                Ok(None)
            }
        }
    }

    /// `name`'s tests asked for as a test file (`tag`).
    /// `fallback`: the cases are asked for next when the reply has no code
    /// (else the test file is asked for once more).
    async fn tests_as_code(
        &self,
        name: &str,
        tag: Tag,
        ctx: &NodeCtx,
        fallback: bool,
    ) -> Result<String, Stop> {
        let NodeCtx {
            spec,
            deps,
            task,
            inputs,
            plan,
            ..
        } = ctx;
        let prompt = self.prompts.render(
            "tests.md",
            minijinja::context! { task, inputs, plan, spec, deps },
        )?;
        let purpose = Purpose::Tests {
            node: name.to_string(),
        };
        let ask = Ask::new(purpose, tag, self.messages(prompt)?)
            .with_prefill(self.tests_prefill(name))
            .with_temperature(self.opts.first_temperature);
        // Asked as code first, the fallback to cases is the second ask.
        let ask = if fallback { ask.once() } else { ask };
        let (_, code) = self.call_for_code(ask, None).await?;
        self.usable_tests(name, code).await
    }

    /// Test code the model wrote, without its own definitions of the
    /// plan's functions (a test of its own copy tests nothing): their
    /// assertions are kept and call the real code.
    async fn usable_tests(&self, name: &str, code: String) -> Result<String, Stop> {
        let planned: Vec<String> = self.read(|s| s.specs.iter().map(|f| f.name.clone()).collect());
        let (code, dropped) = cases::without_redefinitions(&code, &planned);
        if dropped > 0 {
            self.notice(
                NoticeLevel::Info,
                format!(
                    "the tests of `{name}` defined {} of the plan's functions themselves: {} taken out, their assertions kept (they test the real code)",
                    codeloop_protocol::present::count(dropped, "function"),
                    if dropped == 1 { "it is" } else { "they are" }
                ),
            )
            .await?;
        }
        let (code, calls) = tidy::without_calls(&code);
        if !calls.is_empty() {
            self.notice(
                NoticeLevel::Info,
                format!(
                    "the tests of `{name}` called their own tests at import ({}): taken out, the harness runs each test itself",
                    calls.join(", ")
                ),
            )
            .await?;
        }
        let (code, split) = tidy::one_assert_each(&code);
        if split > 0 {
            self.notice(
                NoticeLevel::Info,
                format!(
                    "{} of `{name}` taken apart, one assert a test, so each assert is judged alone",
                    codeloop_protocol::present::count(split, "test")
                ),
            )
            .await?;
        }
        if !code.contains("assert") && !code.contains("raise") {
            self.notice(
                NoticeLevel::Warning,
                format!("the tests of `{name}` assert nothing: they are not used"),
            )
            .await?;
            return Err(Stop::Failed);
        }
        // `class TestX(unittest.TestCase)` under `from unittest import *`
        // alone (the coder model writes it so): the module is imported.
        let imported = code
            .lines()
            .any(|l| l.trim() == "import unittest" || l.trim().starts_with("import unittest "));
        if code.contains("unittest.") && !imported {
            self.notice(
                NoticeLevel::Info,
                format!("the tests of `{name}` use `unittest` without importing it: `import unittest` added"),
            )
            .await?;
            return Ok(format!("import unittest\n{code}"));
        }
        Ok(code)
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
        // The model's own tests, where the policy keeps them from the
        // first code: it is written from the task alone, and they judge it.
        let own = self.read(|s| s.nodes.get(name).is_some_and(|n| n.tests_by_model));
        let tests = if own && !self.opts.policy.first_code_sees_model_tests {
            None
        } else {
            self.shown_tests(tests)
        };
        // Go on with the conversation that wrote the tests, when they are
        // still its reply: a server's cache then computes only this turn.
        let after_tests = match tests.as_deref() {
            Some(t) => self.read(|s| conversation::after_tests(s, name, t, &deps)),
            None => None,
        };
        let head = self.read(|s| s.nodes.get(name).and_then(|n| named::head_of(&n.spec)));
        let messages = match after_tests {
            Some(mut messages) => {
                messages.push(ChatMessage {
                    role: Role::User,
                    content: self
                        .prompts
                        .render("code_next.md", minijinja::context! { spec, tests, head })?,
                });
                messages
            }
            None => self.messages(self.prompts.render(
                "code.md",
                minijinja::context! { task, inputs, plan, spec, deps, tests, head },
            )?)?,
        };
        let prefill = self.prefill(head.as_deref());
        let (_, code) = self
            .call_for_code(
                Ask::new(purpose, Tag::first_code(name), messages.clone())
                    .with_prefill(prefill.clone())
                    .with_temperature(self.opts.first_temperature),
                Some(name),
            )
            .await?;
        // Several candidates (`--candidates N`): the one most agree with.
        let code = if self.opts.candidates > 1 {
            self.by_consensus(name, (messages, prefill), code).await?
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
                    vec![Event::Code(CodeEvent {
                        node,
                        iteration: 1,
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

    /// The start of a code reply for a function whose head is `head`: its
    /// code block opened, its `def` line written and its body begun
    /// (`EngineOptions::prefill`). Not its docstring: after a whole
    /// docstring SmolLM2-135M closed the block at once, or wrote other
    /// functions; from the `def` line it wrote the body (3 of 5 right).
    pub(super) fn prefill(&self, head: Option<&str>) -> Option<String> {
        let head = head.filter(|_| self.opts.prefill)?;
        Some(format!("```python\n{}\n    ", named::def_lines(head)))
    }

    /// The start of a tests reply (`EngineOptions::prefill`): a test
    /// function begun and its first assertion calling `name`, so the model
    /// writes the arguments and the value. Without it SmolLM2-135M wrote a
    /// test file that defined the function again, or prose; held to a JSON
    /// schema for cases, it copied the prompt's placeholders.
    fn tests_prefill(&self, name: &str) -> Option<String> {
        self.opts
            .prefill
            .then(|| format!("```python\ndef test_{name}():\n    assert {name}("))
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
