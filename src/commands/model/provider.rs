//! The config's provider: "demo", "openai", "ollama", or "auto" (a
//! configured base URL, else Ollama if it answers on this machine, else the
//! bundled demo model, saying why).

use anyhow::bail;

use super::server::{self, OPENAI_URL, Wanted};
use super::{Local, ModelArgs, Selected, offline};
use crate::config::Config;
use crate::llm::openai::list_models;

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
        "ollama" => server::connect(config, &configured_or(local.ollama_url), None, wanted).await,
        "auto" => auto(config, args, wanted, local).await,
        other => bail!(
            "the config's model provider \"{other}\" is not one codeloop knows: use \"auto\", \"openai\", \"ollama\" or \"demo\""
        ),
    }
}

/// "auto": the configured base URL; with none, Ollama on this machine if it
/// answers with a model; failing that, the demo model and why.
async fn auto(
    config: &Config,
    args: &ModelArgs,
    wanted: &Wanted,
    local: &Local<'_>,
) -> anyhow::Result<Selected> {
    if let Some(base_url) = &config.model.base_url {
        return server::connect(config, base_url, None, wanted).await;
    }
    let ollama_url = local.ollama_url;
    let why = match list_models(ollama_url, None, local.ollama_probe).await {
        Ok(names) if !names.is_empty() => {
            return server::connect(config, ollama_url, Some("Ollama"), wanted).await;
        }
        Ok(_) => format!(
            "Ollama answers at {ollama_url} but has no model: `ollama pull qwen2.5-coder:7b` gets one"
        ),
        Err(_) => {
            format!("no model server is configured and Ollama does not answer at {ollama_url}")
        }
    };
    let demo = offline::default_demo(local.demos, &why)?;
    offline::demo_model(demo, args, Some(why))
}
