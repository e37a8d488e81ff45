//! What codeloop's tests share, written once: model servers at the wire
//! (`fault_server`: the faults real servers make; `prompt_server`: answers
//! by what the prompt asks; `real_servers`: the real ones with a real small
//! model), the real binary with a data folder of its own and what it
//! prints (`cli`), an ordinary user to run codeloop as (`ordinary_user`,
//! `copy_binary`), a tmux server of a test's own (`tmux_server`),
//! headless Chromium (`cdp`), the input files that lie (`attack_files`),
//! a model's replies written as models write them (`py`, `plan_json`),
//! and, behind a feature
//! named for the crate they need: a scripted model's reply (`reply`,
//! `llm`), what a session's records asked (`messages_of`, `prompt_of`;
//! `session`), a sandbox with a given helper and a person's own venv
//! (`sandbox_options`, `sandbox`, `venv`; `sandbox`), an engine session
//! set up and read to its end (`engine`), the evaluator's cases
//! (`eval_cases`, `eval`) and the workbench's scripted session
//! (`tui_support`, `tui`).
//!
//! A dev-dependency only (`publish = false`): each crate's tests name it
//! by its crate name, as `codeloop_testkit::...`.
// Test support fails the test that called it by panicking, as a test does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

pub mod attack_files;
pub mod cdp;
pub mod cli;
pub mod copy_binary;
#[cfg(feature = "engine")]
pub mod engine;
#[cfg(feature = "eval")]
pub mod eval_cases;
pub mod fault_server;
pub mod lasting_state;
pub mod ordinary_user;
pub mod prompt_server;
pub mod real_servers;
pub mod tmux_server;
#[cfg(feature = "tui")]
pub mod tui_support;
#[cfg(feature = "sandbox")]
pub mod venv;

/// The workspace's root folder (its assets, fixtures and scripts).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A scripted model's reply to the call tagged `tag` (`plan`,
/// `tests/NAME`, `code/NAME/1`, ...), with no usage of its own.
#[cfg(feature = "llm")]
pub fn reply(tag: &str, text: &str) -> codeloop_llm::scripted::ScriptedReply {
    codeloop_llm::scripted::ScriptedReply {
        tag: tag.into(),
        text: text.into(),
        usage: None,
    }
}

/// `code` as a model writes it: in a python fence.
pub fn py(code: &str) -> String {
    format!("```python\n{code}```\n")
}

/// A plan reply: each function `(name, depends_on)`, its purpose its name,
/// in a JSON fence.
pub fn plan_json(functions: &[(&str, &[&str])]) -> String {
    let items: Vec<String> = functions
        .iter()
        .map(|(name, deps)| {
            let deps: Vec<String> = deps.iter().map(|d| format!("\"{d}\"")).collect();
            format!(
                "{{\"name\": \"{name}\", \"purpose\": \"{name}\", \"inputs\": \"x\", \"output\": \"y\", \"depends_on\": [{}]}}",
                deps.join(", ")
            )
        })
        .collect();
    format!("```json\n{{\"functions\": [{}]}}\n```", items.join(", "))
}

/// The messages of the request tagged `tag` in a session's records.
#[cfg(feature = "session")]
pub fn messages_of(
    records: &[codeloop_session::Record],
    tag: &str,
) -> Vec<codeloop_protocol::ChatMessage> {
    use codeloop_session::{Event, ModelRequestEvent};
    records
        .iter()
        .find_map(|r| match &r.event {
            Event::ModelRequest(ModelRequestEvent {
                tag: t, messages, ..
            }) if t == tag => Some(messages.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no request tagged {tag}"))
}

/// The user prompt (the last message) of the request tagged `tag` in a
/// session's records.
#[cfg(feature = "session")]
pub fn prompt_of(records: &[codeloop_session::Record], tag: &str) -> String {
    messages_of(records, tag).last().unwrap().content.clone()
}

/// The sandbox's options from the environment, with `helper` as its
/// helper: a crate's tests pass the binary cargo built for them
/// (`env!("CARGO_BIN_EXE_codeloop-sandbox-helper")` in the sandbox's,
/// `env!("CARGO_BIN_EXE_codeloop-engine-child")` in the engine's), so no
/// test runs a stale helper or none.
#[cfg(feature = "sandbox")]
pub fn sandbox_options(helper: &str) -> codeloop_sandbox::SandboxOptions {
    codeloop_sandbox::SandboxOptions {
        helper: Some(PathBuf::from(helper)),
        ..codeloop_sandbox::SandboxOptions::from_env()
    }
}

/// A sandbox probed with [`sandbox_options`].
#[cfg(feature = "sandbox")]
pub fn sandbox(helper: &str) -> std::sync::Arc<codeloop_sandbox::Sandbox> {
    std::sync::Arc::new(codeloop_sandbox::Sandbox::probe(&sandbox_options(helper)))
}
