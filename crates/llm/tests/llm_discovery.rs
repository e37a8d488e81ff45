//! Finding the model servers of this machine (`openai::probe_local`):
//! each well-known kind imitated at the wire by a loopback server that
//! answers as it does (testkit's `fault_server`), beside a port nobody
//! listens on, one that listens and never answers, and an HTTP server that
//! is no model server. All asked at once; each says what it is and the model
//! it would answer with. The real llama-server and llama-cpp-python on
//! their default ports: `tests/real_discovery.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::time::Duration;

use codeloop_llm::openai::{LocalServer, Probe, probe_local, well_known_urls};
use codeloop_testkit::fault_server;
use fault_server::*;
use serde_json::json;

const ANSWER: Duration = Duration::from_millis(500);
const WHOLE: Duration = Duration::from_millis(1500);

async fn imitation(routes: &[(&str, serde_json::Value)]) -> FaultServer {
    let server = FaultServer::start("ok").await;
    for (route, body) in routes {
        server.route(route, json_answer(200, body.clone()));
    }
    server
}

fn served(probe: &Probe) -> &LocalServer {
    match probe {
        Probe::Server(server) => server,
        other => panic!("not a model server: {other:?}"),
    }
}

#[tokio::test]
async fn each_kind_is_told_apart_with_the_model_it_would_use() {
    let llama_cpp = imitation(&[
        (
            "GET /v1/models",
            json!({"object": "list", "data": [{"id": "smollm2", "meta": {"n_ctx_train": 8192}}]}),
        ),
        (
            "GET /props",
            json!({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 2}),
        ),
    ])
    .await;
    let llama_cpp_python = imitation(&[
        (
            "GET /v1/models",
            json!({"object": "list", "data": [{"id": "local", "owned_by": "me"}]}),
        ),
        ("POST /extras/tokenize/count", json!({"count": 3})),
    ])
    .await;
    let vllm = imitation(&[(
        "GET /v1/models",
        json!({"object": "list", "data": [{"id": "Qwen/Qwen2.5-Coder-7B-Instruct", "max_model_len": 32768}]}),
    )])
    .await;
    let ollama = imitation(&[
        ("GET /v1/models", json!({"object": "list", "data": [{"id": "qwen2.5-coder:7b"}, {"id": "llama3.2:latest"}]})),
        ("GET /api/version", json!({"version": "0.6.2"})),
        ("POST /api/show", json!({"parameters": "num_ctx 8192"})),
    ])
    .await;
    // LM Studio lists every model it has, an embedding model first; its
    // own API says which is a loaded LLM.
    let lm_studio = imitation(&[
        (
            "GET /v1/models",
            json!({"object": "list", "data": [
                {"id": "text-embedding-nomic-embed-text-v1.5", "object": "model", "owned_by": "organization_owner"},
                {"id": "meta-llama-3.1-8b-instruct", "object": "model", "owned_by": "organization_owner"},
                {"id": "qwen2.5-coder-7b-instruct", "object": "model", "owned_by": "organization_owner"}
            ]}),
        ),
        (
            "GET /api/v0/models",
            json!({"object": "list", "data": [
                {"id": "text-embedding-nomic-embed-text-v1.5", "type": "embeddings", "state": "loaded", "max_context_length": 2048},
                {"id": "meta-llama-3.1-8b-instruct", "type": "llm", "state": "not-loaded", "max_context_length": 131072},
                {"id": "qwen2.5-coder-7b-instruct", "type": "llm", "state": "loaded", "max_context_length": 32768}
            ]}),
        ),
    ])
    .await;
    let empty_ollama = imitation(&[
        ("GET /v1/models", json!({"object": "list", "data": []})),
        ("GET /api/version", json!({"version": "0.6.2"})),
    ])
    .await;
    let urls: Vec<String> = [
        &llama_cpp,
        &llama_cpp_python,
        &vllm,
        &ollama,
        &lm_studio,
        &empty_ollama,
    ]
    .iter()
    .map(|s| s.base_url.clone())
    .collect();
    let probes = probe_local(&urls, ANSWER, WHOLE).await;
    let said: Vec<(&str, Option<&str>)> = probes
        .iter()
        .map(|p| {
            let s = served(p);
            (s.server.as_str(), s.model.as_deref())
        })
        .collect();
    assert_eq!(
        said,
        [
            ("llama.cpp's llama-server", Some("smollm2")),
            ("llama-cpp-python's server", Some("local")),
            ("vLLM", Some("Qwen/Qwen2.5-Coder-7B-Instruct")),
            ("Ollama", Some("qwen2.5-coder:7b")),
            ("LM Studio", Some("qwen2.5-coder-7b-instruct")),
            ("Ollama", None),
        ]
    );
    // In the order asked, each with its URL and whole list.
    for (probe, url) in probes.iter().zip(&urls) {
        assert_eq!(probe.base_url(), url);
    }
    assert_eq!(served(&probes[3]).models.len(), 2);
    // Only a server with a model serves.
    assert!(probes[..5].iter().all(|p| p.serving().is_some()));
    assert!(probes[5].serving().is_none());
}

#[tokio::test]
async fn nothing_silence_and_another_kind_of_server_are_told_apart() {
    // Nobody listens.
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}/v1", l.local_addr().unwrap().port())
    };
    // Listens, takes the connection, never answers.
    let mute = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mute_url = format!("http://{}/v1", mute.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = mute.accept().await {
            held.push(socket);
        }
    });
    // An HTTP server that is no model server: 404 for the model list.
    let web = FaultServer::start("ok").await;
    let probes = probe_local(
        &[refused.clone(), mute_url.clone(), web.base_url.clone()],
        ANSWER,
        WHOLE,
    )
    .await;
    assert_eq!(probes[0], Probe::Nothing { base_url: refused });
    assert!(
        matches!(&probes[1], Probe::Silent { base_url, .. } if *base_url == mute_url),
        "{:?}",
        probes[1]
    );
    assert!(
        matches!(&probes[2], Probe::NotAModelServer { why, .. } if why.contains("404")),
        "{:?}",
        probes[2]
    );
    assert!(probes.iter().all(|p| p.serving().is_none()));
}

#[test]
fn the_well_known_ports_are_asked_on_localhost() {
    assert_eq!(
        well_known_urls(),
        [
            "http://localhost:11434/v1",
            "http://localhost:8080/v1",
            "http://localhost:9931/v1",
            "http://localhost:1234/v1",
            "http://localhost:8000/v1",
        ]
    );
}
