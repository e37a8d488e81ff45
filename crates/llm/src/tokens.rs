//! Token counts when the model gives none: the estimate is the protocol's
//! (`codeloop_protocol::tokens`), which the views use too.

pub use codeloop_protocol::tokens::{
    estimate_prompt_tokens, estimate_tokens, estimate_usage, fits,
};
