//! `codeloop models`: what a model server is and what it takes, before a
//! session relies on it: the models it lists, its software, its context
//! window, how many requests it serves at once (codeloop never sends more),
//! and the shape of structured reply it took, tried with one tiny request.

use std::time::Instant;

use crate::config::Config;

use super::model::{ModelArgs, select_model};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
}

/// A line on stdout: what the server said (its model ids, its software's
/// name) stripped of control sequences, never raw.
macro_rules! say {
    ($($arg:tt)*) => {
        println!("{}", crate::protocol::sanitize::for_terminal(&format!($($arg)*)))
    };
}

pub async fn run(args: Args, config: Config) -> anyhow::Result<i32> {
    let selected = select_model(&config, &args.model).await?;
    let model = selected.model;
    say!("model        {}", selected.description);
    if let Some(why) = &selected.fallback_reason {
        say!("             (the demo model: {why})");
    }
    let started = Instant::now();
    let Some(report) = model.server_report().await else {
        say!(
            "server       none: the {} model answers from recorded replies, offline",
            model.provider()
        );
        return Ok(0);
    };
    say!("server       {} at {}", report.server, model.endpoint());
    if !report.models.is_empty() {
        say!("lists        {}", report.models.join(", "));
    }
    match &report.window {
        Some(w) => say!("window       {} tokens ({})", w.tokens, w.source),
        None => say!(
            "window       not told by the server (learned from its first overflow; `context = N` in the config sets it)"
        ),
    }
    match report.slots {
        Some(n) => {
            say!("requests at once: {n} (codeloop sends no more, whatever --workers says)")
        }
        None => say!("requests at once: no limit known"),
    }
    match &report.structured {
        Ok(shape) => say!(
            "structured replies: {} (tried in {:.1} s)",
            shape.as_str(),
            started.elapsed().as_secs_f64()
        ),
        Err(e) => {
            say!("structured replies: the trial call failed: {e}");
            return Ok(1);
        }
    }
    Ok(0)
}
