//! The terminal workbench: a view over the session's events.
//!
//! `app` holds the state and turns keys into actions, `view` and `panes`
//! draw, `event_loop` multiplexes terminal input, engine records, the replay
//! clock and highlighting results, and draws only when something changed.

pub mod app;
pub mod event_loop;
pub mod help;
pub mod highlight;
pub mod panes;
pub mod sanitize;
pub mod terminal;
pub mod theme;
pub mod view;

pub use app::{Action, App, Focus, Info, Mode, Msg, StartRequest};
pub use theme::Theme;
