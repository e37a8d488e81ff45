//! The terminal workbench: a view over the session's events.
//!
//! Architecture Invariant: the workbench is a view. It depends on the
//! session, the protocol and the input descriptions, never on the engine
//! or a model client (`Cargo.toml`): a live session is the session's
//! `EngineHandle`, what it shows of the tape is the story's
//! (`codeloop_session::story`), and what only the engine's side can do
//! (start a session, describe a file, re-run a run) comes in as hooks
//! from the binary (`event_loop::Hooks`).
//!
//! `app` holds the panes, the mode and the tape's cursor and turns what the
//! person meant into engine commands; `panes` are the components (each owns
//! its state, its keys and its drawing); `keymap` is the keys as data (one
//! table drives dispatch, footer and help); `timeline` is the cursor over the
//! tape and the replay clock, pure and given the time; `event_loop`
//! multiplexes terminal input, engine records, the clock and highlighting
//! results, and draws only when something changed.
#![warn(unreachable_pub)]

pub mod app;
pub mod describe;
pub mod event_loop;
pub mod external_editor;
pub mod graphics;
pub mod highlight;
pub mod keymap;
pub mod loader;
pub mod log_reader;
pub mod notify;
pub mod panes;
pub mod picture;
pub mod terminal;
pub mod theme;
pub mod timeline;

pub use app::{Action, App, Focus, Info, Mode, Msg, StartRequest};
/// Program output is stripped of control sequences (the one filter, shared
/// with the commands that print such text).
pub use codeloop_protocol::sanitize;
pub use theme::Theme;
