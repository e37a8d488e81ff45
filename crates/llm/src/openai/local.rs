//! Model servers running on this machine, found without being configured.
//!
//! The ports the well-known local servers listen on by default
//! (`WELL_KNOWN`) are asked all at once and briefly: a port nobody listens
//! on refuses at once, and each probe is bounded (`PROBE_ANSWER` a
//! question, `PROBE_WHOLE` in all). A port that answers with a model list
//! is asked what it is (`discover`, the same questions a configured server
//! gets) and which model it would answer with. A port another user
//! listens on (`owner.rs`) is not asked at all: it is named as theirs,
//! and never used unless the person names it.

use std::time::Duration;

use futures_util::future::join_all;

use super::owner::{Stranger, stranger_on};
use super::request::http_client;
use super::server::lm_studio_model;
use super::{LlmError, ServerKind, discover, list_models};

/// A port a local model server listens on by default, and who usually does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WellKnown {
    pub port: u16,
    /// Who listens there by default, in words (9931: the default llama.cpp
    /// announced for llama-server's coming versions).
    pub usually: &'static str,
}

/// The ports asked, in the order they are reported.
pub const WELL_KNOWN: [WellKnown; 5] = [
    WellKnown {
        port: 11434,
        usually: "Ollama",
    },
    WellKnown {
        port: 8080,
        usually: "llama.cpp's llama-server",
    },
    WellKnown {
        port: 9931,
        usually: "llama.cpp's next llama-server",
    },
    WellKnown {
        port: 1234,
        usually: "LM Studio",
    },
    WellKnown {
        port: 8000,
        usually: "llama-cpp-python and vLLM",
    },
];

/// How long one question of a probe may wait for its answer.
pub const PROBE_ANSWER: Duration = Duration::from_millis(1000);
/// How long the probe of one port may take in all (its model list, then
/// what the server is).
pub const PROBE_WHOLE: Duration = Duration::from_millis(2500);

/// The base URLs of `WELL_KNOWN`, on this machine.
pub fn well_known_urls() -> Vec<String> {
    WELL_KNOWN
        .iter()
        .map(|w| format!("http://localhost:{}/v1", w.port))
        .collect()
}

/// A model server that answered on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalServer {
    /// `http://localhost:PORT/v1`.
    pub base_url: String,
    /// What it is, in words ("llama.cpp's llama-server").
    pub server: String,
    /// The models it lists, in its order.
    pub models: Vec<String>,
    /// The model a session would use when none is named: the first listed
    /// (LM Studio: the first loaded LLM). None when it lists none.
    pub model: Option<String>,
}

/// What one port answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// Nobody listens there.
    Nothing { base_url: String },
    /// Something listens there but did not answer in time (a busy
    /// one-request-at-a-time server looks like this).
    Silent { base_url: String, waited: Duration },
    /// Something answers there, but not as a model server.
    NotAModelServer { base_url: String, why: String },
    /// A model server (which may list no model).
    Server(LocalServer),
    /// Another user listens there: not asked, and never used unless named.
    AnotherUser {
        base_url: String,
        stranger: Stranger,
    },
}

impl Probe {
    pub fn base_url(&self) -> &str {
        match self {
            Probe::Nothing { base_url }
            | Probe::Silent { base_url, .. }
            | Probe::NotAModelServer { base_url, .. }
            | Probe::AnotherUser { base_url, .. } => base_url,
            Probe::Server(server) => &server.base_url,
        }
    }

    /// The server, if a model server answered with a model to use.
    pub fn serving(&self) -> Option<&LocalServer> {
        match self {
            Probe::Server(server) if server.model.is_some() => Some(server),
            _ => None,
        }
    }
}

/// Ask every one of `base_urls` at once (each bounded by `answer` a
/// question, `whole` in all); the answers in the same order.
pub async fn probe_local(base_urls: &[String], answer: Duration, whole: Duration) -> Vec<Probe> {
    join_all(
        base_urls
            .iter()
            .map(|url| probe_one(url.clone(), answer, whole)),
    )
    .await
}

async fn probe_one(base_url: String, answer: Duration, whole: Duration) -> Probe {
    if let Some(stranger) = local_port(&base_url).and_then(stranger_on) {
        return Probe::AnotherUser { base_url, stranger };
    }
    match tokio::time::timeout(whole, ask(&base_url, answer)).await {
        Ok(probe) => probe,
        Err(_) => Probe::Silent {
            base_url,
            waited: whole,
        },
    }
}

async fn ask(base_url: &str, answer: Duration) -> Probe {
    let models = match list_models(base_url, None, answer).await {
        Ok(models) => models,
        Err(LlmError::Unreachable { .. }) => {
            return Probe::Nothing {
                base_url: base_url.to_string(),
            };
        }
        Err(LlmError::Timeout { .. }) => {
            return Probe::Silent {
                base_url: base_url.to_string(),
                waited: answer,
            };
        }
        Err(e) => {
            return Probe::NotAModelServer {
                base_url: base_url.to_string(),
                why: e.to_string(),
            };
        }
    };
    let Ok(http) = http_client(base_url, answer) else {
        return Probe::NotAModelServer {
            base_url: base_url.to_string(),
            why: "no HTTP client could be made for it".into(),
        };
    };
    let first = models.first().cloned();
    let facts = discover(
        &http,
        base_url,
        first.as_deref().unwrap_or_default(),
        None,
        answer,
    )
    .await;
    let model = match facts.server {
        ServerKind::LmStudio => lm_studio_model(&http, base_url, answer).await.or(first),
        _ => first,
    };
    Probe::Server(LocalServer {
        base_url: base_url.to_string(),
        server: facts.server.name().to_string(),
        models,
        model,
    })
}

/// The port of a base URL on this machine (localhost, 127.0.0.0/8, ::1).
fn local_port(base_url: &str) -> Option<u16> {
    let url = reqwest::Url::parse(base_url).ok()?;
    let host = url.host_str()?;
    let local = host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    local.then(|| url.port_or_known_default()).flatten()
}
