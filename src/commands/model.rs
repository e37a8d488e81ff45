//! Choosing the model: the flags every model-using command flattens into its
//! own `Args`, and the rules that turn them and the config into a model.
//!
//! In order: `--scripted FILE` wins, then `--demo NAME`, then `--base-url`,
//! then the config's provider. A model profile (`[models.NAME]` in the
//! config, chosen by `--profile NAME`, `[model] profile`, or a `--model` /
//! `[model] model` that names a profile) replaces the `[model]` settings it
//! gives; flags still win over it. With provider "auto", a configured base URL
//! (config file, OPENAI_BASE_URL, CODELOOP_BASE_URL) is used; with none, Ollama
//! on localhost is probed briefly and used if it answers; failing that, the
//! bundled demo model. A configured server that cannot be reached is an error,
//! never a silent fallback to the demo.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};

use crate::config::Config;
use crate::demos::{self, Demo};
use crate::llm::openai::{ApiKey, OpenAiClient, OpenAiOptions, list_models, normalize_base_url};
use crate::llm::scripted::{Pacing, ScriptedModel};
use crate::llm::{ChatModel, LlmError};

/// Where Ollama listens when nothing else is configured.
pub(crate) const OLLAMA_URL: &str = "http://localhost:11434/v1";
/// How long the unconfigured Ollama probe may take: short, since the usual
/// answer on a machine without Ollama is a refused connection.
const OLLAMA_PROBE: Duration = Duration::from_millis(300);
/// How long a configured server has to answer the model list at start-up.
const SERVER_PROBE: Duration = Duration::from_secs(3);
const OPENAI_URL: &str = "https://api.openai.com/v1";
/// Retries on 429/5xx at most, whatever the config says.
const MAX_RETRIES: u32 = 10;

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
            .finish()
    }
}

/// Choose the model for `config` and the command line's `args` (see the module comment).
pub async fn select_model(config: &Config, args: &ModelArgs) -> anyhow::Result<Selected> {
    select_with(config, args, demos::all(), OLLAMA_URL, OLLAMA_PROBE).await
}

async fn select_with(
    config: &Config,
    args: &ModelArgs,
    bundled: &'static [Demo],
    ollama_url: &str,
    ollama_probe: Duration,
) -> anyhow::Result<Selected> {
    if let Some(path) = &args.scripted {
        let pacing = args
            .pace
            .map_or_else(Pacing::instant, Pacing::chars_per_second);
        let model = ScriptedModel::from_file(path, pacing)?;
        let description = format!(
            "scripted model: {} recorded replies from {}",
            model.remaining(),
            path.display()
        );
        return Ok(Selected {
            model: Arc::new(model),
            description,
            demo: None,
            fallback_reason: None,
        });
    }
    if let Some(name) = &args.demo {
        let demo = find_demo(bundled, name)?;
        return demo_model(demo, args, None);
    }
    let named = args
        .model
        .as_deref()
        .or(Some(config.model.model.as_str()).filter(|m| !m.is_empty()));
    let (config, model_flag) = match config
        .profile_model(args.profile.as_deref(), named)
        .map_err(anyhow::Error::msg)?
    {
        Some(model) => {
            // A --model that named the profile is not also the model's name.
            let by_name = args.profile.is_none()
                && config.model.profile.is_none()
                && args.model.as_deref() == model.profile.as_deref();
            let mut profiled = config.clone();
            profiled.model = model;
            let flag = if by_name { None } else { args.model.clone() };
            (Cow::Owned(profiled), flag)
        }
        None => (Cow::Borrowed(config), args.model.clone()),
    };
    let config = config.as_ref();
    if let Some(var) = &args.api_key_env
        && ApiKey::from_env(var).is_none()
    {
        bail!(
            "--api-key-env {var}: the environment variable {var} is not set (or is empty); export the key in it first"
        );
    }
    let key_env = args
        .api_key_env
        .clone()
        .unwrap_or_else(|| config.model.api_key_env.clone());
    let server = |base_url: String, found: Option<&str>| ServerChoice {
        base_url,
        model: model_flag
            .clone()
            .or_else(|| (!config.model.model.is_empty()).then(|| config.model.model.clone())),
        key_env: key_env.clone(),
        found: found.map(str::to_string),
        max_tokens: args.max_tokens.or(config.model.max_tokens),
    };
    if let Some(base_url) = &args.base_url {
        return connect(config, server(base_url.clone(), None)).await;
    }
    match config.model.provider.as_str() {
        "demo" => {
            let demo = default_demo(bundled, "the config's provider is \"demo\"")?;
            demo_model(demo, args, None)
        }
        "openai" => {
            let base_url = config
                .model
                .base_url
                .clone()
                .unwrap_or_else(|| OPENAI_URL.to_string());
            connect(config, server(base_url, None)).await
        }
        "ollama" => {
            let base_url = config
                .model
                .base_url
                .clone()
                .unwrap_or_else(|| ollama_url.to_string());
            connect(config, server(base_url, None)).await
        }
        "auto" => {
            if let Some(base_url) = &config.model.base_url {
                return connect(config, server(base_url.clone(), None)).await;
            }
            match list_models(ollama_url, None, ollama_probe).await {
                Ok(names) if !names.is_empty() => {
                    connect(config, server(ollama_url.to_string(), Some("Ollama"))).await
                }
                Ok(_) => {
                    let why = format!(
                        "Ollama answers at {ollama_url} but has no model: `ollama pull qwen2.5-coder:7b` gets one"
                    );
                    let demo = default_demo(bundled, &why)?;
                    demo_model(demo, args, Some(why))
                }
                Err(_) => {
                    let why = format!(
                        "no model server is configured and Ollama does not answer at {ollama_url}"
                    );
                    let demo = default_demo(bundled, &why)?;
                    demo_model(demo, args, Some(why))
                }
            }
        }
        other => bail!(
            "the config's model provider \"{other}\" is not one codeloop knows: use \"auto\", \"openai\", \"ollama\" or \"demo\""
        ),
    }
}

struct ServerChoice {
    base_url: String,
    model: Option<String>,
    key_env: String,
    /// Set when the server was found by probing (e.g. "Ollama"), not configured.
    found: Option<String>,
    max_tokens: Option<u32>,
}

/// An OpenAI-compatible server: check that it answers, pick the model if
/// none is named, and build the client.
async fn connect(config: &Config, choice: ServerChoice) -> anyhow::Result<Selected> {
    let base_url = normalize_base_url(&choice.base_url)?;
    let api_key = ApiKey::from_env(&choice.key_env);
    let is_openai = base_url.starts_with(OPENAI_URL);
    if is_openai && api_key.is_none() {
        bail!(
            "{base_url} needs an API key: put it in the environment variable {} (or name another variable with --api-key-env), or use --demo NAME to run offline",
            choice.key_env
        );
    }
    let what_to_do = format!(
        "Start the server, or point --base-url (or base_url in {}) at one that runs, or use --demo NAME to run offline with the bundled demo model",
        Config::default_file().display()
    );
    let listed = list_models(&base_url, api_key.as_ref(), SERVER_PROBE).await;
    let model = match (choice.model, listed) {
        (_, Err(e @ (LlmError::Unreachable { .. } | LlmError::Timeout { .. }))) => {
            bail!("{e}\n{what_to_do}")
        }
        (_, Err(LlmError::Status { status, body, .. })) if status == 401 || status == 403 => {
            bail!(
                "the model server at {base_url} refused the API key (HTTP {status}: {body}); check the key in the environment variable {}",
                choice.key_env
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
    };
    let mut options = OpenAiOptions::new(base_url.clone(), model.clone());
    options.api_key = api_key;
    options.api_key_env = choice.key_env.clone();
    options.request_timeout = Duration::from_secs(config.model.request_timeout_secs.max(1));
    options.retries = config.model.retries.min(MAX_RETRIES);
    options.temperature = config.model.temperature;
    options.max_tokens = choice.max_tokens;
    options.context_window = config.model.context;
    options.max_parallel = config.model.parallel;
    // Learn the server and its window before the first call, so a prompt
    // Ollama would cut silently is refused with what to do instead.
    options.learn_context = true;
    let has_key = options.api_key.is_some();
    let client = OpenAiClient::new(options)
        .with_context(|| format!("cannot set up the client for {base_url}"))?;
    let mut description = format!("{model} at {base_url}");
    if let Some(profile) = &config.model.profile {
        description.push_str(&format!(" (profile \"{profile}\")"));
    }
    match &choice.found {
        Some(found) => description.push_str(&format!(" ({found}, found running on this machine)")),
        None if has_key => description.push_str(&format!(" (key from ${})", choice.key_env)),
        None => {}
    }
    Ok(Selected {
        model: Arc::new(client),
        description,
        demo: None,
        fallback_reason: None,
    })
}

fn demo_model(
    demo: &'static Demo,
    args: &ModelArgs,
    why: Option<String>,
) -> anyhow::Result<Selected> {
    let pacing = args
        .pace
        .map_or_else(Pacing::demo, Pacing::chars_per_second);
    let model = ScriptedModel::demo(demo.name, demo.replies, pacing)
        .with_context(|| format!("the bundled demo \"{}\" is damaged", demo.name))?;
    let mut description = format!(
        "demo model: authored replies, offline (demo \"{}\": {})",
        demo.name, demo.title
    );
    if let Some(why) = &why {
        description.push_str(&format!("; {why}"));
    }
    Ok(Selected {
        model: Arc::new(model),
        description,
        demo: Some(demo),
        fallback_reason: why,
    })
}

fn find_demo(bundled: &'static [Demo], name: &str) -> anyhow::Result<&'static Demo> {
    if let Some(demo) = bundled.iter().find(|d| d.name == name) {
        return Ok(demo);
    }
    if bundled.is_empty() {
        bail!("there is no demo called \"{name}\": this build has no bundled demos");
    }
    let names: Vec<&str> = bundled.iter().map(|d| d.name).collect();
    bail!(
        "there is no demo called \"{name}\"; the bundled demos are: {}",
        names.join(", ")
    )
}

fn default_demo(bundled: &'static [Demo], why: &str) -> anyhow::Result<&'static Demo> {
    match bundled.first() {
        Some(demo) => Ok(demo),
        None => bail!(
            "{why}, and this build has no bundled demo model to fall back on. Start Ollama (`ollama serve`, then `ollama pull qwen2.5-coder:7b`), or pass --base-url URL --model NAME for another OpenAI-compatible server"
        ),
    }
}

/// Whether a server that lists `names` serves `model` (Ollama serves
/// `name` as `name:latest`).
fn serves(names: &[String], model: &str) -> bool {
    names
        .iter()
        .any(|n| n == model || n.strip_suffix(":latest") == Some(model))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    static DEMOS: [Demo; 2] = [
        Demo {
            name: "csv",
            title: "parse a CSV line",
            task: "Parse a CSV line.",
            replies: "{\"tag\":\"plan\",\"text\":\"a plan\"}\n",
            tape: "",
            inputs: &[],
            review: false,
        },
        Demo {
            name: "dates",
            title: "parse dates",
            task: "Parse dates.",
            replies: "{\"tag\":\"plan\",\"text\":\"another plan\"}\n",
            tape: "",
            inputs: &[],
            review: false,
        },
    ];

    /// A server that answers every request with `body` (HTTP 200, JSON), and
    /// counts the requests.
    async fn model_list_server(body: &'static str) -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let paths = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = paths.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut buf = vec![0u8; 8192];
                let n = socket.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                let path = head.split(' ').nth(1).unwrap_or("").to_string();
                seen.lock().unwrap().push(path);
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            }
        });
        (url, paths)
    }

    fn refused_url() -> String {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}/v1", l.local_addr().unwrap().port())
    }

    #[tokio::test]
    async fn scripted_wins_then_demo() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.jsonl");
        std::fs::write(&file, "{\"tag\":\"plan\",\"text\":\"x\"}\n").unwrap();
        let args = ModelArgs {
            scripted: Some(file),
            demo: Some("csv".into()),
            base_url: Some(refused_url()),
            ..Default::default()
        };
        let s = select_with(
            &Config::default(),
            &args,
            &DEMOS,
            &refused_url(),
            OLLAMA_PROBE,
        )
        .await
        .unwrap();
        assert_eq!(s.model.provider(), "scripted");
        assert!(
            s.description.contains("1 recorded replies"),
            "{}",
            s.description
        );

        let args = ModelArgs {
            demo: Some("dates".into()),
            base_url: Some(refused_url()),
            ..Default::default()
        };
        let s = select_with(
            &Config::default(),
            &args,
            &DEMOS,
            &refused_url(),
            OLLAMA_PROBE,
        )
        .await
        .unwrap();
        assert_eq!(s.model.provider(), "demo");
        assert_eq!(s.demo.map(|d| d.name), Some("dates"));
        assert!(
            s.description
                .starts_with("demo model: authored replies, offline"),
            "{}",
            s.description
        );
    }

    #[tokio::test]
    async fn an_unknown_demo_lists_the_ones_there_are() {
        let args = ModelArgs {
            demo: Some("nope".into()),
            ..Default::default()
        };
        let err = select_with(
            &Config::default(),
            &args,
            &DEMOS,
            &refused_url(),
            OLLAMA_PROBE,
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("\"nope\"") && err.contains("csv, dates"),
            "{err}"
        );
        let err = select_with(&Config::default(), &args, &[], &refused_url(), OLLAMA_PROBE)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("no bundled demos"), "{err}");
    }

    #[tokio::test]
    async fn an_unreachable_configured_server_is_an_error_not_a_fallback() {
        let url = refused_url();
        let mut config = Config::default();
        config.model.base_url = Some(url.clone());
        config.model.model = "m".into();
        let err = select_with(
            &config,
            &ModelArgs::default(),
            &DEMOS,
            &refused_url(),
            OLLAMA_PROBE,
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains(&url), "{err}");
        assert!(
            err.contains("Start the server") && err.contains("--demo"),
            "{err}"
        );

        let args = ModelArgs {
            base_url: Some(url.clone()),
            ..Default::default()
        };
        let err = select_with(
            &Config::default(),
            &args,
            &DEMOS,
            &refused_url(),
            OLLAMA_PROBE,
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains(&url), "{err}");
    }

    #[tokio::test]
    async fn auto_uses_ollama_when_it_answers_with_its_first_model() {
        let (ollama, paths) = model_list_server(
            r#"{"object":"list","data":[{"id":"qwen2.5-coder:7b"},{"id":"llama3.2:latest"}]}"#,
        )
        .await;
        let s = select_with(
            &Config::default(),
            &ModelArgs::default(),
            &DEMOS,
            &ollama,
            OLLAMA_PROBE,
        )
        .await
        .unwrap();
        assert_eq!(s.model.provider(), "openai-compatible");
        assert_eq!(s.model.model_name(), "qwen2.5-coder:7b");
        assert_eq!(s.model.endpoint(), ollama);
        assert!(
            s.description.contains("Ollama, found running"),
            "{}",
            s.description
        );
        assert!(s.demo.is_none());
        assert!(paths.lock().unwrap().iter().all(|p| p == "/v1/models"));

        let args = ModelArgs {
            model: Some("llama3.2:latest".into()),
            ..Default::default()
        };
        let s = select_with(&Config::default(), &args, &DEMOS, &ollama, OLLAMA_PROBE)
            .await
            .unwrap();
        assert_eq!(s.model.model_name(), "llama3.2:latest");
    }

    #[tokio::test]
    async fn auto_falls_back_to_the_demo_and_says_so() {
        let s = select_with(
            &Config::default(),
            &ModelArgs::default(),
            &DEMOS,
            &refused_url(),
            OLLAMA_PROBE,
        )
        .await
        .unwrap();
        assert_eq!(s.model.provider(), "demo");
        assert_eq!(s.demo.map(|d| d.name), Some("csv"));
        assert!(
            s.description
                .starts_with("demo model: authored replies, offline")
        );
        assert!(
            s.description.contains("Ollama does not answer"),
            "{}",
            s.description
        );
        assert!(
            s.fallback_reason
                .as_deref()
                .is_some_and(|why| why.contains("Ollama does not answer")),
            "{:?}",
            s.fallback_reason
        );

        let (empty_ollama, _) = model_list_server(r#"{"object":"list","data":[]}"#).await;
        let s = select_with(
            &Config::default(),
            &ModelArgs::default(),
            &DEMOS,
            &empty_ollama,
            OLLAMA_PROBE,
        )
        .await
        .unwrap();
        assert_eq!(s.model.provider(), "demo");
        assert!(s.description.contains("ollama pull"), "{}", s.description);

        // No demo to fall back on: a clear error saying what to do.
        let err = select_with(
            &Config::default(),
            &ModelArgs::default(),
            &[],
            &refused_url(),
            OLLAMA_PROBE,
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("no bundled demo model") && err.contains("--base-url"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_configured_server_without_a_model_name_uses_the_first_it_lists() {
        let (url, _) =
            model_list_server(r#"{"data":[{"id":"Qwen/Qwen2.5-Coder-7B-Instruct"}]}"#).await;
        let mut config = Config::default();
        config.model.base_url = Some(format!("{url}/"));
        config.model.api_key_env = "CODELOOP_TEST_UNSET_KEY_VARIABLE".into();
        let s = select_with(
            &config,
            &ModelArgs::default(),
            &DEMOS,
            &refused_url(),
            OLLAMA_PROBE,
        )
        .await
        .unwrap();
        assert_eq!(s.model.model_name(), "Qwen/Qwen2.5-Coder-7B-Instruct");
        assert_eq!(s.model.endpoint(), url);
        assert_eq!(
            s.description,
            format!("Qwen/Qwen2.5-Coder-7B-Instruct at {url}")
        );
    }

    #[tokio::test]
    async fn a_named_key_variable_that_is_unset_is_an_error() {
        let args = ModelArgs {
            base_url: Some(refused_url()),
            api_key_env: Some("CODELOOP_TEST_UNSET_KEY_VARIABLE".into()),
            ..Default::default()
        };
        let err = select_with(
            &Config::default(),
            &args,
            &DEMOS,
            &refused_url(),
            OLLAMA_PROBE,
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("CODELOOP_TEST_UNSET_KEY_VARIABLE is not set"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_base_url_missing_v1_is_pointed_out() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let root = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut buf = vec![0u8; 8192];
                let _ = socket.read(&mut buf).await;
                let _ = socket
                    .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 18\r\nconnection: close\r\n\r\n404 page not found")
                    .await;
            }
        });
        let args = ModelArgs {
            base_url: Some(root.clone()),
            model: Some("m".into()),
            ..Default::default()
        };
        let err = select_with(
            &Config::default(),
            &args,
            &DEMOS,
            &refused_url(),
            OLLAMA_PROBE,
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains(&format!("try --base-url {root}/v1")), "{err}");
    }

    #[tokio::test]
    async fn a_profile_is_chosen_by_flag_or_by_model_name_and_flags_still_win() {
        let (url, _) =
            model_list_server(r#"{"data":[{"id":"qwen2.5-coder:7b"},{"id":"llama3.2"}]}"#).await;
        let mut config = Config::from_toml(&format!(
            "[models.local]\nbase_url = \"{url}\"\nmodel = \"qwen2.5-coder:7b\"\ncontext = 16384\n"
        ))
        .unwrap();
        config.model.api_key_env = "CODELOOP_TEST_UNSET_KEY_VARIABLE".into();
        for args in [
            ModelArgs {
                profile: Some("local".into()),
                ..Default::default()
            },
            ModelArgs {
                model: Some("local".into()),
                ..Default::default()
            },
        ] {
            let s = select_with(&config, &args, &DEMOS, &refused_url(), OLLAMA_PROBE)
                .await
                .unwrap();
            assert_eq!(s.model.model_name(), "qwen2.5-coder:7b", "{args:?}");
            assert_eq!(s.model.endpoint(), url);
            assert!(
                s.description.contains("profile \"local\""),
                "{}",
                s.description
            );
            // The configured window is known without asking the server.
            assert_eq!(
                s.model.context_window().await.map(|w| w.tokens),
                Some(16384)
            );
        }
        let args = ModelArgs {
            profile: Some("local".into()),
            model: Some("llama3.2".into()),
            ..Default::default()
        };
        let s = select_with(&config, &args, &DEMOS, &refused_url(), OLLAMA_PROBE)
            .await
            .unwrap();
        assert_eq!(s.model.model_name(), "llama3.2");
        // A name the server does not list is refused, with the names it does.
        let args = ModelArgs {
            profile: Some("local".into()),
            model: Some("gpt-99".into()),
            ..Default::default()
        };
        let err = select_with(&config, &args, &DEMOS, &refused_url(), OLLAMA_PROBE)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"gpt-99\"") && err.contains("qwen2.5-coder:7b, llama3.2"),
            "{err}"
        );
        let args = ModelArgs {
            profile: Some("hosted".into()),
            ..Default::default()
        };
        let err = select_with(&config, &args, &DEMOS, &refused_url(), OLLAMA_PROBE)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"hosted\"") && err.contains("local"), "{err}");
    }

    #[tokio::test]
    async fn an_unknown_provider_is_named() {
        let mut config = Config::default();
        config.model.provider = "anthropic".into();
        let err = select_with(
            &config,
            &ModelArgs::default(),
            &DEMOS,
            &refused_url(),
            OLLAMA_PROBE,
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("\"anthropic\"") && err.contains("\"auto\""),
            "{err}"
        );
    }
}
