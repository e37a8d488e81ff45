//! Asking the server about itself: the models it offers, which software it
//! is, and the model's context window where the server tells it.
//!
//! - vLLM: `GET {base}/models` lists each model with `max_model_len`.
//! - Ollama: answers `GET {root}/api/version`; `POST {root}/api/show` gives the
//!   model's `parameters` (a `num_ctx` line when the model sets one) and
//!   `model_info["<arch>.context_length"]` (what the model was trained for).
//!   Without `num_ctx` Ollama runs the model with its default window, not the
//!   model's: 4096 tokens on most machines today (2048 before v0.6, more with
//!   much VRAM or `OLLAMA_CONTEXT_LENGTH`, which no API shows), so 4096 is
//!   assumed and said to be.
//! - llama.cpp's server: `GET {root}/props` gives
//!   `default_generation_settings.n_ctx` (the context it was started with)
//!   and `total_slots` (how many requests it serves at once).
//! - llama-cpp-python's server: answers `POST {root}/extras/tokenize/count`;
//!   it tells no window (learned from its first overflow, see `decode`) and
//!   serves one request at a time: a second one cuts the first's stream.
//! - LM Studio: `GET {root}/api/v0/models` lists every model it has with its
//!   `type` (`llm`, `vlm`, `embeddings`) and `state` (`loaded` or not); its
//!   `/v1/models` lists them all alike, embedding models included, so the
//!   model used when none is named is the first loaded LLM (`lm_studio_model`).
//!
//! How many requests may be in flight (`ServerFacts::slots`): what llama.cpp
//! says; one for llama-cpp-python and for an unknown server on this machine
//! (a local server is usually one model on one device); no limit for vLLM,
//! Ollama (which queues) and hosted APIs.

use std::time::Duration;

use serde_json::{Value, json};

use super::errors::{ServerKind, error_chain, error_excerpt, excerpt, read_limited};
use super::numbers;
use super::request::{http_client, normalize_base_url, root_url};
use super::retry::whole_secs;
use super::{ApiKey, LlmError};
use crate::ContextWindow;

/// Ollama's default num_ctx assumed when the model sets none (see the module comment).
pub const OLLAMA_DEFAULT_NUM_CTX: u64 = 4096;

/// What the server told about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerFacts {
    pub(crate) server: ServerKind,
    /// The window the server runs the model with, when it says.
    pub(crate) window: Option<ContextWindow>,
    /// The most the model itself supports, when the server says (Ollama).
    pub(crate) model_max: Option<u64>,
    /// How many requests the server serves at once; None for no known limit.
    pub(crate) slots: Option<usize>,
}

/// Ask the server at `base_url` what it is and how large `model`'s context
/// is. Each question gets `timeout`; one that fails is simply not answered.
pub(crate) async fn discover(
    http: &reqwest::Client,
    base_url: &str,
    model: &str,
    api_key: Option<&ApiKey>,
    timeout: Duration,
) -> ServerFacts {
    let ask = Asker {
        http,
        api_key,
        timeout,
    };
    let root = root_url(base_url);
    if let Some(facts) = ask
        .get(format!("{base_url}/models"))
        .await
        .and_then(|list| vllm(&list, model))
    {
        return facts;
    }
    if let Some(facts) = ollama(&ask, root, model).await {
        return facts;
    }
    if let Some(facts) = ask
        .get(format!("{root}/props"))
        .await
        .and_then(|props| llama_cpp(&props))
    {
        return facts;
    }
    if llama_cpp_python(&ask, root).await {
        return ServerFacts {
            server: ServerKind::LlamaCppPython,
            window: None,
            model_max: None,
            slots: Some(1),
        };
    }
    if ask
        .get(format!("{root}/api/v0/models"))
        .await
        .is_some_and(|list| is_lm_studio(&list))
    {
        return ServerFacts {
            server: ServerKind::LmStudio,
            window: None,
            model_max: None,
            slots: Some(1),
        };
    }
    let local = super::request::is_loopback(base_url);
    let server = if base_url.starts_with("https://api.openai.com") {
        ServerKind::OpenAi
    } else {
        ServerKind::Unknown
    };
    ServerFacts {
        server,
        window: None,
        model_max: None,
        slots: local.then_some(1),
    }
}

/// How discovery asks: the client, the key, each question's time.
struct Asker<'a> {
    http: &'a reqwest::Client,
    api_key: Option<&'a ApiKey>,
    timeout: Duration,
}

impl Asker<'_> {
    async fn get(&self, url: String) -> Option<Value> {
        let mut builder = self.http.get(url);
        if let Some(key) = self.api_key {
            builder = builder.bearer_auth(key.expose());
        }
        json_of(builder, self.timeout).await
    }

    async fn post(&self, url: String, body: Value) -> Option<Value> {
        json_of(self.http.post(url).json(&body), self.timeout).await
    }
}

/// vLLM: its model list gives the model's `max_model_len`.
fn vllm(list: &Value, model: &str) -> Option<ServerFacts> {
    let len = numbers::tokens(model_entry(list, model)?.get("max_model_len"))?;
    Some(ServerFacts {
        server: ServerKind::Vllm,
        window: Some(ContextWindow {
            tokens: len,
            source: "vLLM's max_model_len".into(),
        }),
        model_max: Some(len),
        slots: None,
    })
}

/// Ollama: it has a version; the model's num_ctx (or Ollama's default)
/// is the window, its trained context the most it could be.
async fn ollama(ask: &Asker<'_>, root: &str, model: &str) -> Option<ServerFacts> {
    let version = ask.get(format!("{root}/api/version")).await?;
    version.get("version").and_then(Value::as_str)?;
    let show = ask
        .post(format!("{root}/api/show"), json!({ "model": model }))
        .await;
    let num_ctx = show
        .as_ref()
        .and_then(|s| s.get("parameters"))
        .and_then(Value::as_str)
        .and_then(num_ctx_in);
    let window = match num_ctx {
        Some(n) => ContextWindow {
            tokens: n,
            source: format!("Ollama's num_ctx for {model}"),
        },
        None => ContextWindow {
            tokens: OLLAMA_DEFAULT_NUM_CTX,
            source: "Ollama's default num_ctx (assumed: the model sets none)".into(),
        },
    };
    Some(ServerFacts {
        server: ServerKind::Ollama,
        window: Some(window),
        model_max: show.as_ref().and_then(trained_context),
        slots: None,
    })
}

/// llama.cpp's server: /props gives n_ctx and its slots.
fn llama_cpp(props: &Value) -> Option<ServerFacts> {
    // /props with an n_ctx at all is llama.cpp's; what it says is believed
    // only within bounds (`numbers`).
    let n_ctx = props
        .get("default_generation_settings")
        .and_then(|s| s.get("n_ctx"))
        .or_else(|| props.get("n_ctx"))?;
    let window = numbers::tokens(Some(n_ctx)).map(|tokens| ContextWindow {
        tokens,
        source: "llama.cpp's n_ctx (/props)".into(),
    });
    Some(ServerFacts {
        server: ServerKind::LlamaCpp,
        window,
        model_max: None,
        slots: numbers::slots(props.get("total_slots")),
    })
}

/// llama-cpp-python's server: it counts tokens (and serves one at a time).
async fn llama_cpp_python(ask: &Asker<'_>, root: &str) -> bool {
    ask.post(
        format!("{root}/extras/tokenize/count"),
        json!({ "input": "codeloop" }),
    )
    .await
    .is_some_and(|c| c.get("count").and_then(Value::as_u64).is_some())
}

/// LM Studio's own model list: each entry says its type and whether it is loaded.
fn is_lm_studio(list: &Value) -> bool {
    list.get("data")
        .and_then(Value::as_array)
        .and_then(|models| models.first())
        .is_some_and(|m| m.get("state").is_some() && m.get("type").is_some())
}

/// The model LM Studio at `base_url` would answer best with: the first
/// loaded LLM (or vision model), else the first LLM it has; None when it
/// does not say (or is not LM Studio).
pub(crate) async fn lm_studio_model(
    http: &reqwest::Client,
    base_url: &str,
    timeout: Duration,
) -> Option<String> {
    let ask = Asker {
        http,
        api_key: None,
        timeout,
    };
    let list = ask
        .get(format!("{}/api/v0/models", root_url(base_url)))
        .await?;
    let models = list.get("data")?.as_array()?;
    let chat = |m: &&Value| {
        matches!(
            m.get("type").and_then(Value::as_str),
            Some("llm") | Some("vlm")
        )
    };
    let loaded = |m: &&Value| m.get("state").and_then(Value::as_str) == Some("loaded");
    models
        .iter()
        .filter(chat)
        .find(loaded)
        .or_else(|| models.iter().find(chat))
        .and_then(|m| m.get("id")?.as_str())
        .map(str::to_string)
}

/// The body of a successful answer, as JSON; None for anything else.
async fn json_of(builder: reqwest::RequestBuilder, timeout: Duration) -> Option<Value> {
    let response = tokio::time::timeout(timeout, builder.send())
        .await
        .ok()?
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body = read_limited(response, 4 << 20, timeout).await.ok()?;
    serde_json::from_slice(&body).ok()
}

/// The entry for `model` in a `{"data": [...]}` model list (the only one, if
/// the server lists one model under another name, as llama.cpp does).
fn model_entry<'a>(list: &'a Value, model: &str) -> Option<&'a Value> {
    let models = list.get("data")?.as_array()?;
    models
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (models.len() == 1).then(|| &models[0]))
}

/// `num_ctx` in Ollama's `parameters` text ("num_ctx    8192\nstop ...").
fn num_ctx_in(parameters: &str) -> Option<u64> {
    parameters.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("num_ctx"))
            .then(|| words.next()?.parse().ok().and_then(numbers::plausible))
            .flatten()
    })
}

/// `model_info["<arch>.context_length"]` in Ollama's `/api/show`.
fn trained_context(show: &Value) -> Option<u64> {
    let info = show.get("model_info")?;
    let arch = info.get("general.architecture")?.as_str()?;
    numbers::tokens(info.get(format!("{arch}.context_length")))
}

/// The model names the server offers (`GET {base_url}/models`), in its order.
/// Used to probe a server and to pick a model when none is named.
pub async fn list_models(
    base_url: &str,
    api_key: Option<&ApiKey>,
    timeout: Duration,
) -> Result<Vec<String>, LlmError> {
    let base = normalize_base_url(base_url)?;
    let url = format!("{base}/models");
    let http = http_client(&base, timeout)?;
    let mut builder = http.get(&url);
    if let Some(key) = api_key {
        builder = builder.bearer_auth(key.expose());
    }
    let scrub = |text: String| match api_key {
        Some(key) => key.scrub(&text),
        None => text,
    };
    let response = match tokio::time::timeout(timeout, builder.send()).await {
        Err(_) => {
            return Err(LlmError::Timeout {
                url,
                secs: whole_secs(timeout),
            });
        }
        Ok(Err(e)) => {
            return Err(LlmError::Unreachable {
                url,
                message: scrub(error_chain(&e)),
            });
        }
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    let body = read_limited(response, 4 << 20, timeout)
        .await
        .map_err(|message| LlmError::StreamCut {
            url: url.clone(),
            message,
        })?;
    let text = String::from_utf8_lossy(&body);
    if !status.is_success() {
        return Err(LlmError::Status {
            url,
            status: status.as_u16(),
            body: scrub(error_excerpt(&text)),
        });
    }
    let value: Value = serde_json::from_str(&text).map_err(|e| LlmError::Protocol {
        url: url.clone(),
        message: format!("the model list is not JSON ({e}): \"{}\"", excerpt(&text)),
    })?;
    // OpenAI, vLLM, llama.cpp, LM Studio and Ollama's /v1 say {"data": [{"id"}]};
    // Ollama's native API says {"models": [{"name"}]}.
    let names = value
        .get("data")
        .and_then(Value::as_array)
        .map(|models| {
            models
                .iter()
                .filter_map(|m| m.get("id").and_then(Value::as_str))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .or_else(|| {
            value.get("models").and_then(Value::as_array).map(|models| {
                models
                    .iter()
                    .filter_map(|m| m.get("name").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
        })
        .ok_or_else(|| LlmError::Protocol {
            url: url.clone(),
            message: format!("the model list has no \"data\": \"{}\"", excerpt(&text)),
        })?;
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ollama_parameters_and_model_info_are_read() {
        assert_eq!(
            num_ctx_in(
                "stop                           \"<|im_end|>\"\nnum_ctx                        8192"
            ),
            Some(8192)
        );
        assert_eq!(num_ctx_in("temperature 0.7"), None);
        let show =
            json!({"model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}});
        assert_eq!(trained_context(&show), Some(32768));
    }
}
