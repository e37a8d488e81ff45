//! `codeloop models`: what a model server is and what it takes, before a
//! session relies on it: the models it lists, its software, its context
//! window, how many requests it serves at once (codeloop never sends more),
//! and the shape of structured reply it took, tried with one tiny request.
//! With nothing configured, first what each well-known local port answered;
//! several servers: the list, and how to choose one.

use std::time::Instant;

use crate::config::Config;
use crate::llm::openai::{Probe, WELL_KNOWN};

use super::model::{ModelArgs, SeveralServers, found_words, select_model, stranger_words};

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
    let selected = match select_model(&config, &args.model).await {
        Ok(selected) => selected,
        Err(e) => match e.downcast::<SeveralServers>() {
            Ok(several) => {
                print_probed(&several.probed);
                let first = several.servers().first().map(|s| s.base_url.clone());
                say!(
                    "{} model servers answer: choose one with --base-url (`codeloop models --base-url {}` tells what it takes)",
                    several.servers().len(),
                    first.as_deref().unwrap_or("URL")
                );
                return Ok(0);
            }
            Err(e) => return Err(e),
        },
    };
    print_probed(&selected.probed);
    let model = selected.model;
    match &selected.fallback_reason {
        // Nothing configured: said once, with what there is instead (no
        // demo is chosen yet, so none is named).
        Some(why) => {
            say!("model        none configured: {why}");
            println!(
                "             the demo model plays the bundled demos offline (`codeloop run --demo NAME`); a server of your own: --base-url URL (README: Use your own model)"
            );
        }
        None => say!("model        {}", selected.description),
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

/// What each local port answered, one line a port (nothing when they were
/// not asked: a server or profile is configured). What a server said (its
/// model ids, its name, why it is no model server) is never printed raw.
fn print_probed(probed: &[Probe]) {
    if probed.is_empty() {
        return;
    }
    println!("looked for model servers on this machine (none is configured):");
    let width = probed.iter().map(|p| p.base_url().len()).max().unwrap_or(0);
    for probe in probed {
        let said = match probe {
            Probe::Server(server) => found_words(server),
            Probe::Nothing { .. } => format!("nothing listens{}", usually(probe.base_url())),
            Probe::Silent { waited, .. } => format!(
                "something listens but said nothing in {:.1} s (busy with another request?){}",
                waited.as_secs_f64(),
                usually(probe.base_url())
            ),
            Probe::NotAModelServer { why, .. } => format!("not a model server: {why}"),
            Probe::AnotherUser { base_url, stranger } => stranger_words(base_url, stranger),
        };
        say!("  {:width$}  {said}", probe.base_url());
    }
}

/// " (default port of Ollama)": who listens on this URL's port by default.
fn usually(base_url: &str) -> String {
    let port = reqwest::Url::parse(base_url)
        .ok()
        .and_then(|u| u.port_or_known_default());
    WELL_KNOWN
        .iter()
        .find(|w| Some(w.port) == port)
        .map(|w| format!(" (default port of {})", w.usually))
        .unwrap_or_default()
}
