//! The config's provider: "demo", "openai", "ollama", or "auto" (a
//! configured base URL, else the model server running on this machine, else
//! the bundled demo model, saying why).

use anyhow::bail;

use super::server::{self, OPENAI_URL, Wanted};
use super::{Local, ModelArgs, OLLAMA_URL, Selected, SeveralServers, offline, stranger_words};
use crate::config::Config;
use crate::llm::openai::{LocalServer, PROBE_ANSWER, PROBE_WHOLE, Probe, probe_local};

pub(super) async fn from_config(
    config: &Config,
    args: &ModelArgs,
    wanted: &Wanted,
    local: &Local<'_>,
) -> anyhow::Result<Selected> {
    let configured_or = |default: &str| {
        config
            .model
            .base_url
            .clone()
            .unwrap_or_else(|| default.to_string())
    };
    match config.model.provider.as_str() {
        "demo" => {
            let demo = offline::default_demo(local.demos, "the config's provider is \"demo\"")?;
            offline::demo_model(demo, args, None)
        }
        "openai" => server::connect(config, &configured_or(OPENAI_URL), None, wanted).await,
        "ollama" => server::connect(config, &configured_or(OLLAMA_URL), None, wanted).await,
        "auto" => auto(config, args, wanted, local).await,
        other => bail!(
            "the config's model provider \"{other}\" is not one codeloop knows: use \"auto\", \"openai\", \"ollama\" or \"demo\""
        ),
    }
}

/// "auto": the configured base URL; with none, the model servers running
/// on this machine (`Local::urls`, asked at once): the one that answers
/// with a model (of those that serve `--model NAME`, when given); several:
/// `SeveralServers`, naming them; none: the demo model and why.
async fn auto(
    config: &Config,
    args: &ModelArgs,
    wanted: &Wanted,
    local: &Local<'_>,
) -> anyhow::Result<Selected> {
    if let Some(base_url) = &config.model.base_url {
        return server::connect(config, base_url, None, wanted).await;
    }
    let probed = probe_local(local.urls, PROBE_ANSWER, PROBE_WHOLE).await;
    let serving: Vec<&LocalServer> = probed.iter().filter_map(Probe::serving).collect();
    let named = wanted.model().map(|name| {
        serving
            .iter()
            .copied()
            .filter(|s| server::serves(&s.models, name))
            .collect::<Vec<_>>()
    });
    // A model named that one server serves chooses it among several.
    let serving = match named {
        Some(named) if !named.is_empty() => named,
        _ => serving,
    };
    match serving.as_slice() {
        [found] => {
            let wanted = wanted.or_model(found.model.as_deref());
            let mut selected =
                server::connect(config, &found.base_url, Some(&found.server), &wanted).await?;
            selected.probed = probed;
            Ok(selected)
        }
        [] => {
            let why = nothing_found(&probed);
            let demo = offline::default_demo(local.demos, &why)?;
            let mut selected = offline::demo_model(demo, args, Some(why))?;
            selected.probed = probed;
            Ok(selected)
        }
        _ => Err(SeveralServers { probed }.into()),
    }
}

/// Why no local server was used, and what to do.
fn nothing_found(probed: &[Probe]) -> String {
    let strangers: Vec<String> = probed
        .iter()
        .filter_map(|p| match p {
            Probe::AnotherUser { base_url, stranger } => Some(stranger_words(base_url, stranger)),
            _ => None,
        })
        .collect();
    if !strangers.is_empty() {
        return strangers.join("; ");
    }
    let empty = probed.iter().find_map(|p| match p {
        Probe::Server(s) if s.model.is_none() => Some(s),
        _ => None,
    });
    match empty {
        Some(s) if s.server == "Ollama" => format!(
            "Ollama answers at {} but has no model: `ollama pull qwen2.5-coder:7b` gets one",
            s.base_url
        ),
        Some(s) => format!(
            "{} answers at {} but lists no model: load one in it",
            s.server, s.base_url
        ),
        None => "no model server is configured and none answers on this machine (Ollama, llama-server, LM Studio, llama-cpp-python and vLLM were looked for on their default ports)".to_string(),
    }
}
