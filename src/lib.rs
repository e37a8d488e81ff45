//! codeloop: a terminal workbench in which an LLM turns a task into tested
//! Python, and failures are localized, reflected on and repaired.
//!
//! The layers are crates, so an arrow the wrong way does not compile:
//! `codeloop-protocol` is the leaf; `codeloop-inputs` (input files
//! described) is a leaf beside it that session, engine and tui use;
//! `codeloop-session`, `codeloop-llm` and `codeloop-sandbox` use only those; `codeloop-eval` uses the sandbox;
//! `codeloop-engine` uses session, llm and sandbox; `codeloop-tui` uses the
//! engine and the session. This crate is the binary's: the subcommands, the
//! configuration and the bundled demos, with each layer re-exported under its
//! old module name but the sandbox, which everyone names by its crate,
//! `codeloop_sandbox`.
#![warn(unreachable_pub)]

pub mod commands;
pub mod config;
pub mod demos;

pub use codeloop_engine as engine;
pub use codeloop_eval as eval;
pub use codeloop_inputs as inputs;
pub use codeloop_llm as llm;
pub use codeloop_protocol as protocol;
pub use codeloop_session as session;
pub use codeloop_tui as tui;
