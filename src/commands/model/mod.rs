//! Choosing the model: the flags every model-using command flattens into its
//! own `Args`, and the rules that turn them and the config into a model.
//!
//! In order: `--scripted FILE` wins, then `--demo NAME`, then `--base-url`,
//! then the config's provider. A model profile (`[models.NAME]` in the
//! config, chosen by `--profile NAME`, `[model] profile`, or a `--model` /
//! `[model] model` that names a profile) replaces the `[model]` settings it
//! gives; flags still win over it. With provider "auto", a configured base URL
//! (config file, OPENAI_BASE_URL, CODELOOP_BASE_URL) is used; with none, the
//! ports of the well-known local servers (Ollama, llama-server, LM Studio,
//! llama-cpp-python, vLLM) are asked at once and briefly, and the one that
//! answers with a model is used; several are `SeveralServers`, an error that
//! names them (the workbench asks which instead); none, the bundled demo
//! model. A port another user listens on is not asked, and is named as
//! theirs; a server found is sent no API key (the key goes only to a
//! server the person named: a flag, the config, the environment). A configured server that cannot be reached is an error, never a
//! silent fallback to the demo, and a configured server or profile means
//! nothing is probed.

//!
//! By idea: `profile.rs` (the profile a choice names, laid over the
//! config), `provider.rs` (the config's provider, and what "auto" finds on
//! this machine), `server.rs` (an OpenAI-compatible server: asked for its
//! models, the model picked, the client built), `offline.rs` (the scripted
//! and the demo models), `chosen.rs` (the servers the person chose: the
//! config's, and those named before, which alone a tape's recorded server
//! may be: `resume::recorded_model`).

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::Config;
use crate::demos::{self, Demo};
use crate::llm::ChatModel;
use crate::llm::openai::{LocalServer, Probe, Stranger, well_known_urls};

pub(crate) mod chosen;
mod offline;
mod profile;
mod provider;
mod server;
#[cfg(test)]
mod tests;

/// Where Ollama listens (the provider "ollama" without a base URL).
pub(crate) const OLLAMA_URL: &str = "http://localhost:11434/v1";

#[derive(Debug, Clone, Default, clap::Args)]
pub struct ModelArgs {
    /// Base URL of an OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio, OpenAI), e.g. http://localhost:11434/v1
    #[arg(long, value_name = "URL")]
    pub(crate) base_url: Option<String>,
    /// The model's name on that server [default: the first one the server lists]
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Use the demo model with the authored replies of the bundled demo NAME (offline, no key)
    #[arg(long, value_name = "NAME")]
    pub(crate) demo: Option<String>,
    /// Answer from recorded replies: a replies file (JSON Lines of {"tag", "text"}) or a session's tape
    #[arg(long, value_name = "FILE")]
    pub(crate) scripted: Option<PathBuf>,
    /// Environment variable that holds the API key [default: OPENAI_API_KEY, or the config's api_key_env]
    #[arg(long, value_name = "VAR")]
    pub(crate) api_key_env: Option<String>,
    /// Speed of demo and scripted replies, characters a second; 0 = instant [default: 400 for demos, instant for --scripted]
    #[arg(long, value_name = "CHARS")]
    pub(crate) pace: Option<u32>,
    /// The model profile to use: a [models.NAME] section of the config
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// The longest reply, in tokens [default: the config's max_tokens, else the server's]
    #[arg(long, value_name = "TOKENS")]
    pub(crate) max_tokens: Option<u32>,
}

/// The chosen model and how to describe it to the person watching.
pub struct Selected {
    pub(crate) model: Arc<dyn ChatModel>,
    /// One line for the UI, e.g. "demo model: authored replies, offline (demo \"csv\")".
    pub description: String,
    /// The bundled demo whose replies the model answers with, if it is the
    /// demo model: its replies fit its own task, so callers offer that task.
    pub(crate) demo: Option<&'static Demo>,
    /// Why `select_model` fell back to the demo model when no model was
    /// asked for (None when the model was chosen, or asked for with --demo).
    pub(crate) fallback_reason: Option<String>,
    /// What each local port answered, when nothing was configured and they
    /// were asked (empty otherwise).
    pub(crate) probed: Vec<Probe>,
    /// The server's base URL when the person named it (a flag, the config,
    /// the environment), not found by probing: remembered as chosen
    /// (`chosen.rs`).
    pub(crate) named_server: Option<String>,
}

/// With nothing configured, more than one model server answers on this
/// machine: which one is the person's to say. `run`, `bench`, `resume`
/// and `models` fail with this (its words name them and how to choose);
/// the workbench asks.
#[derive(Debug)]
pub struct SeveralServers {
    /// What each port answered (at least two serve a model).
    pub(crate) probed: Vec<Probe>,
}

impl SeveralServers {
    /// The servers that answered with a model, in the order asked.
    pub(crate) fn servers(&self) -> Vec<&LocalServer> {
        self.probed.iter().filter_map(Probe::serving).collect()
    }
}

impl std::fmt::Display for SeveralServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let servers = self.servers();
        writeln!(
            f,
            "{} model servers answer on this machine, and none is configured:",
            servers.len()
        )?;
        let width = servers.iter().map(|s| s.base_url.len()).max().unwrap_or(0);
        for s in &servers {
            writeln!(f, "  {:width$}  {}", s.base_url, found_words(s))?;
        }
        let first = servers.first().map_or("URL", |s| s.base_url.as_str());
        write!(
            f,
            "Choose one with --base-url (e.g. --base-url {first}), or set base_url under [model] in {}",
            Config::default_file().display()
        )
    }
}

impl std::error::Error for SeveralServers {}

/// What a found server is and serves: "llama.cpp's llama-server, serves
/// smollm2".
pub(crate) fn found_words(s: &LocalServer) -> String {
    let serves = match (&s.model, s.models.len()) {
        (Some(m), 0 | 1) => format!("serves {m}"),
        (Some(m), n) => format!("serves {m} (of {n} models)"),
        (None, _) => "lists no model".to_string(),
    };
    format!("{}, {serves}", s.server)
}

/// Another user's listener on a port asked, and how to use it all the
/// same: "127.0.0.1:8000 is another user's (uid 1001) server: not used;
/// name it with --base-url http://localhost:8000/v1 to use it".
pub(crate) fn stranger_words(base_url: &str, s: &Stranger) -> String {
    format!(
        "{} is another user's (uid {}) server: not used; name it with --base-url {base_url} to use it",
        s.listener, s.uid
    )
}

/// The demo model a workbench offers while several servers wait for the
/// person's choice: its demos play; a task of one's own waits for the choice.
pub(crate) fn before_choosing(several: &SeveralServers) -> anyhow::Result<Selected> {
    let why = format!(
        "{} model servers answer on this machine: choose one first",
        several.servers().len()
    );
    let demo = offline::default_demo(demos::all(), &why)?;
    let mut selected = offline::demo_model(demo, &ModelArgs::default(), Some(why))?;
    selected.probed = several.probed.clone();
    Ok(selected)
}

impl std::fmt::Debug for Selected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Selected")
            .field("provider", &self.model.provider())
            .field("model", &self.model.model_name())
            .field("endpoint", &self.model.endpoint())
            .field("description", &self.description)
            .field("demo", &self.demo.map(|d| d.name))
            .field("fallback_reason", &self.fallback_reason)
            .field("probed", &self.probed)
            .finish()
    }
}

/// Choose the model for `config` and the command line's `args` (see the
/// module comment). Several local servers and nothing configured: a
/// `SeveralServers` error (`downcast_ref` finds it).
pub async fn select_model(config: &Config, args: &ModelArgs) -> anyhow::Result<Selected> {
    let selected = select_with(config, args, demos::all(), &well_known_urls()).await?;
    if let Some(url) = &selected.named_server {
        chosen::remember(config, url);
    }
    Ok(selected)
}

/// What a choice falls back on when nothing is configured: the bundled
/// demos, and the base URLs local servers would answer at (the tests put
/// their own of each here).
struct Local<'a> {
    demos: &'static [Demo],
    urls: &'a [String],
}

/// The rules in their order (see the module comment): a scripted model, a
/// demo, a `--base-url`, then the config's provider.
async fn select_with(
    config: &Config,
    args: &ModelArgs,
    demos: &'static [Demo],
    local_urls: &[String],
) -> anyhow::Result<Selected> {
    if let Some(path) = &args.scripted {
        return offline::scripted(path, args);
    }
    if let Some(name) = &args.demo {
        return offline::demo_model(offline::find_demo(demos, name)?, args, None);
    }
    let (config, model_flag) = profile::profiled(config, args)?;
    let config = config.as_ref();
    let wanted = server::Wanted::of(config, args, model_flag)?;
    if let Some(base_url) = &args.base_url {
        return server::connect(config, base_url, None, &wanted).await;
    }
    let local = Local {
        demos,
        urls: local_urls,
    };
    provider::from_config(config, args, &wanted, &local).await
}
