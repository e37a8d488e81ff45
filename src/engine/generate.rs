//! Generation: a node's tests, its first code, and a repair (the reflection
//! on a localized failure and the next iteration, in one call), each with the
//! prompt context it is written from, read from the state when the call is
//! approved.

use serde::Serialize;

use super::context::{Core, Stop};
use super::extract;
use crate::protocol::Location;
use crate::session::state::HistoryEntry;
use crate::session::{CodeSource, Event, FunctionSpec, NodeStatus, NoticeLevel, Purpose, State};

/// Lines of a failed run's output shown to the repair.
const OUTPUT_LINES: usize = 30;

/// A dependency as the prompts show it.
#[derive(Serialize)]
struct DepCtx {
    name: String,
    purpose: String,
    code: String,
}

/// What the prompts of a node need: its spec, its direct dependencies, the
/// task, its tests.
struct NodeCtx {
    spec: FunctionSpec,
    deps: Vec<DepCtx>,
    task: String,
    tests: Option<String>,
}

#[derive(Serialize)]
struct HistoryCtx {
    iteration: u32,
    error: String,
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

fn node_ctx(s: &State, name: &str) -> Option<NodeCtx> {
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

impl Core {
    /// Ask for `name`'s tests; `tag` is a pattern in which `{name}` is replaced.
    pub async fn write_tests(&self, name: &str, tag: &str) -> Result<(), Stop> {
        let purpose = Purpose::Tests {
            node: name.to_string(),
        };
        self.may_ask(&purpose).await?;
        let Some(NodeCtx {
            spec, deps, task, ..
        }) = self.read(|s| node_ctx(s, name))
        else {
            return Err(Stop::Failed);
        };
        let prompt = self
            .prompts
            .render("tests.md", minijinja::context! { task, spec, deps })?;
        let messages = self.messages(prompt)?;
        let (_, code) = self
            .call_for_code(purpose, tag.replace("{name}", name), messages, None, None)
            .await?;
        self.record(Event::Tests {
            node: name.to_string(),
            code,
            source: CodeSource::Model,
        })
        .await?;
        Ok(())
    }

    /// Ask for `name`'s first code.
    pub async fn write_code(&self, name: &str) -> Result<(), Stop> {
        let purpose = Purpose::Code {
            node: name.to_string(),
        };
        self.may_ask(&purpose).await?;
        let Some(NodeCtx {
            spec,
            deps,
            task,
            tests,
        }) = self.read(|s| node_ctx(s, name))
        else {
            return Err(Stop::Failed);
        };
        let inputs = self.read(|s| s.inputs.clone());
        let prompt = self.prompts.render(
            "code.md",
            minijinja::context! { task, spec, deps, inputs, tests => self.shown_tests(tests) },
        )?;
        let messages = self.messages(prompt)?;
        let (_, code) = self
            .call_for_code(
                purpose,
                format!("code/{name}/1"),
                messages,
                Some(name),
                None,
            )
            .await?;
        // An edit that arrived while the model wrote wins: keep it.
        let code = self.with_prelude(name, code);
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

    /// Reflect on the localized failure of `iteration` and write iteration + 1.
    pub async fn repair(&self, name: &str, iteration: u32) -> Result<(), Stop> {
        let purpose = Purpose::Reflect {
            node: name.to_string(),
        };
        self.may_ask(&purpose).await?;
        let Some(RepairCtx {
            spec,
            code,
            tests,
            hints,
            failures,
            output,
            task,
        }) = self.read(|s| repair_ctx(s, name))
        else {
            return Err(Stop::Failed);
        };
        let error = failures
            .last()
            .map(|(_, l)| l.render())
            .unwrap_or_else(|| "the tests failed (no location)".into());
        let signature = |l: &Location| (l.error_type.clone(), l.line, l.test.clone());
        let different_approach = failures.len() >= 2
            && signature(&failures[failures.len() - 1].1)
                == signature(&failures[failures.len() - 2].1);
        let history: Vec<HistoryCtx> = failures
            .iter()
            .take(failures.len().saturating_sub(1))
            .map(|(it, l)| HistoryCtx {
                iteration: *it,
                error: l.to_string(),
            })
            .collect();
        let prompt = self.prompts.render(
            "repair.md",
            minijinja::context! {
                task, spec, iteration, code, error, output, history, hints,
                different_approach, tests => self.shown_tests(tests),
            },
        )?;
        let messages = self.messages(prompt)?;
        if different_approach {
            self.notice(
                NoticeLevel::Info,
                format!("`{name}` failed the same way twice: asking for a different approach"),
            )
            .await?;
        }
        self.status(name, NodeStatus::Generating).await?;
        let next = iteration + 1;
        let (reply, code) = self
            .call_for_code(
                purpose,
                format!("repair/{name}/{next}"),
                messages,
                Some(name),
                different_approach.then_some(0.8),
            )
            .await?;
        self.record(Event::Reflection {
            node: name.to_string(),
            iteration,
            text: extract::prose_before_code(&reply),
        })
        .await?;
        // An edit that arrived while the model wrote wins: keep it.
        let code = self.with_prelude(name, code);
        let node = name.to_string();
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
    fn shown_tests(&self, tests: Option<String>) -> Option<String> {
        if self.given.as_ref().is_some_and(|g| g.hidden_tests) {
            None
        } else {
            tests
        }
    }

    /// `code` with the node's given prelude (a benchmark's imports and
    /// helpers) in front, unless it already holds it.
    fn with_prelude(&self, name: &str, code: String) -> String {
        match self.given.as_ref().and_then(|g| g.preludes.get(name)) {
            Some(prelude) if !prelude.trim().is_empty() && !code.contains(prelude.trim()) => {
                format!("{}\n{code}", prelude.trim_end())
            }
            _ => code,
        }
    }
}
