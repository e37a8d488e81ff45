//! An OpenAI-compatible server: asked for its models (does it answer, does
//! the key work, is the model there), the model picked when none is named,
//! and the client built.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};

use super::{ModelArgs, Selected};
use crate::config::Config;
use crate::llm::LlmError;
use crate::llm::openai::{ApiKey, OpenAiClient, OpenAiOptions, list_models, normalize_base_url};

/// How long a configured server has to answer the model list at start-up.
const SERVER_PROBE: Duration = Duration::from_secs(3);
pub(super) const OPENAI_URL: &str = "https://api.openai.com/v1";
/// Retries on 429/5xx at most, whatever the config says.
const MAX_RETRIES: u32 = 10;

/// What is asked of a server, whichever server it is.
#[derive(Debug, Clone)]
pub(super) struct Wanted {
    /// The model's name, if the flags or the config give one.
    model: Option<String>,
    /// The environment variable that holds the API key.
    key_env: String,
    max_tokens: Option<u32>,
    /// Where a server's address came from, to say what to change when it
    /// does not answer: `--base-url`, `CODELOOP_BASE_URL`, the config.
    base_url_from: String,
}

impl Wanted {
    /// From the flags over the (profiled) config; a key variable named with
    /// `--api-key-env` must be set.
    pub(super) fn of(
        config: &Config,
        args: &ModelArgs,
        model_flag: Option<String>,
    ) -> anyhow::Result<Wanted> {
        if let Some(var) = &args.api_key_env
            && ApiKey::from_env(var).is_none()
        {
            bail!(
                "--api-key-env {var}: the environment variable {var} is not set (or is empty); export the key in it first"
            );
        }
        Ok(Wanted {
            model: model_flag
                .or_else(|| (!config.model.model.is_empty()).then(|| config.model.model.clone())),
            key_env: args
                .api_key_env
                .clone()
                .unwrap_or_else(|| config.model.api_key_env.clone()),
            max_tokens: args.max_tokens.or(config.model.max_tokens),
            base_url_from: match &args.base_url {
                Some(_) => "--base-url".to_string(),
                None => crate::config::source_of("[model] base_url", |n| std::env::var(n).ok()),
            },
        })
    }

    /// The model's name, if one is asked for.
    pub(super) fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The same, with `model` when no model is named.
    pub(super) fn or_model(&self, model: Option<&str>) -> Wanted {
        Wanted {
            model: self.model.clone().or_else(|| model.map(str::to_string)),
            ..self.clone()
        }
    }
}

/// An OpenAI-compatible server: check that it answers, pick the model if
/// none is named, and build the client. `found`: the server was found by
/// probing (e.g. "Ollama"), not configured: it is sent no API key.
pub(super) async fn connect(
    config: &Config,
    base_url: &str,
    found: Option<&str>,
    wanted: &Wanted,
) -> anyhow::Result<Selected> {
    let base_url = normalize_base_url(base_url)?;
    // The key goes only to a server the person named: one found running
    // here could be anyone's.
    let key_held = ApiKey::from_env(&wanted.key_env);
    let api_key = key_held.clone().filter(|_| found.is_none());
    if base_url.starts_with(OPENAI_URL) && api_key.is_none() {
        bail!(
            "{base_url} needs an API key: put it in the environment variable {} (or name another variable with --api-key-env), or use --demo NAME to run offline",
            wanted.key_env
        );
    }
    let listed = list_models(&base_url, api_key.as_ref(), SERVER_PROBE).await;
    let model = pick_model(&base_url, wanted, listed)?;
    let mut description = format!(
        "{} at {base_url}",
        crate::protocol::present::model_shown(&model)
    );
    if let Some(profile) = &config.model.profile {
        description.push_str(&format!(" (profile \"{profile}\")"));
    }
    match found {
        Some(found) if key_held.is_some() => description.push_str(&format!(
            " ({found}, found running on this machine; ${} is not sent to it)",
            wanted.key_env
        )),
        Some(found) => description.push_str(&format!(" ({found}, found running on this machine)")),
        None if api_key.is_some() => {
            description.push_str(&format!(" (key from ${})", wanted.key_env))
        }
        None => {}
    }
    let named_server = found.is_none().then(|| base_url.clone());
    let client = client(config, &base_url, model, api_key, wanted)?;
    Ok(Selected {
        model: Arc::new(client),
        description,
        demo: None,
        fallback_reason: None,
        probed: Vec::new(),
        named_server,
    })
}

/// The model to use, from what the server listed (or why it cannot be
/// told): the one named, which the server must serve, else the first.
fn pick_model(
    base_url: &str,
    wanted: &Wanted,
    listed: Result<Vec<String>, LlmError>,
) -> anyhow::Result<String> {
    let what_to_do = format!(
        "Start the server, or point {} at one that runs, or use --demo NAME to run offline with the bundled demo model",
        wanted.base_url_from
    );
    Ok(match (wanted.model.clone(), listed) {
        (_, Err(e @ (LlmError::Unreachable { .. } | LlmError::Timeout { .. }))) => {
            bail!("{e}\n{what_to_do}")
        }
        (_, Err(LlmError::Status { status, body, .. })) if status == 401 || status == 403 => {
            bail!(
                "the model server at {base_url} refused the API key (HTTP {status}: {body}); check the key in the environment variable {}",
                wanted.key_env
            )
        }
        (_, Err(LlmError::Status { status: 404, .. })) if !base_url.ends_with("/v1") => bail!(
            "the server at {base_url} has no {base_url}/models: OpenAI-compatible servers usually serve their API under /v1, so try --base-url {base_url}/v1"
        ),
        // A name the server does not list is refused before any call: most
        // local servers answer any name with the one model they have, so a
        // typo would otherwise be used (and recorded) without a word.
        (Some(model), Ok(names)) if !names.is_empty() && !serves(&names, &model) => bail!(
            "the server at {base_url} has no model named \"{model}\"; it lists: {}. Use --model {} (or model = \"{}\" in {})",
            names.join(", "),
            names[0],
            names[0],
            Config::default_file().display()
        ),
        (Some(model), _) => model,
        (None, Ok(names)) => match names.into_iter().next() {
            Some(first) => first,
            None => bail!(
                "the model server at {base_url} lists no models: load or pull one, or name it with --model"
            ),
        },
        (None, Err(e)) => {
            bail!("cannot tell which model to use at {base_url} ({e}): name it with --model")
        }
    })
}

/// The client for `model` at `base_url`, with the config's limits.
fn client(
    config: &Config,
    base_url: &str,
    model: String,
    api_key: Option<ApiKey>,
    wanted: &Wanted,
) -> anyhow::Result<OpenAiClient> {
    let mut options = OpenAiOptions::new(base_url.to_string(), model);
    options.api_key = api_key;
    options.api_key_env = wanted.key_env.clone();
    options.request_timeout = Duration::from_secs(config.model.request_timeout_secs.max(1));
    options.retries = config.model.retries.min(MAX_RETRIES);
    options.temperature = config.model.temperature;
    options.max_tokens = wanted.max_tokens;
    options.context_window = config.model.context;
    options.max_parallel = config.model.parallel;
    // Learn the server and its window before the first call, so a prompt
    // Ollama would cut silently is refused with what to do instead.
    options.learn_context = true;
    OpenAiClient::new(options).with_context(|| format!("cannot set up the client for {base_url}"))
}

/// Whether a server that lists `names` serves `model` (Ollama serves
/// `name` as `name:latest`).
pub(super) fn serves(names: &[String], model: &str) -> bool {
    names
        .iter()
        .any(|n| n == model || n.strip_suffix(":latest") == Some(model))
}
