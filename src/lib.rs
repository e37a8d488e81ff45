//! codeloop: a terminal workbench in which an LLM turns a task into tested
//! Python, and failures are localized, reflected on and repaired.
//!
//! Arrows point one way: `tui` and `commands` use `engine`, `session`, `llm`,
//! `exec`; `engine` uses `llm`, `exec`, `session`; `session`, `llm` and `exec`
//! use nothing of each other.

pub mod commands;
pub mod config;
pub mod demos;
pub mod engine;
pub mod eval;
pub mod exec;
pub mod llm;
pub mod protocol;
pub mod session;
pub mod tui;
