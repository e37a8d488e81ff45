//! Generation: a node's tests and its first code, with the prompt context
//! every prompt about a node is written from (`node_ctx`), read from the
//! state when the call is approved. What follows a failure is `repair`.

use serde::Serialize;

use super::context::{Core, Stop};
use super::conversation;
use super::examples;
use super::prompts::{PromptInput, prompt_inputs};
use super::tag::Tag;
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
    /// Ask for `name`'s tests (`again`: once more, as they did not load).
    pub(crate) async fn write_tests(&self, name: &str, again: bool) -> Result<(), Stop> {
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
            .call_for_code(
                purpose,
                Tag::Tests {
                    node: name.to_string(),
                    again,
                },
                messages,
                None,
                None,
            )
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
        self.record(Event::Tests(TestsEvent {
            node: name.to_string(),
            code,
            source: CodeSource::Model,
        }))
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
                Tag::first_code(name),
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
                    vec![Event::Code(CodeEvent {
                        node,
                        iteration: 1,
                        code,
                        source: CodeSource::Model,
                    })]
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
