//! The terminal workbench: a view over the session's events.
