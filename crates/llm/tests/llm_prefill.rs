//! The answer's start (`ChatRequest::prefill`) at the wire, each server its
//! own way: llama.cpp renders the chat with its `/apply-template` and goes
//! on from the prefill through `/completions`; vLLM continues a final
//! assistant message; llama-cpp-python (whose chat template closes a final
//! assistant message and starts a new turn) is asked without it, and the
//! reply says so. Imitations at the wire of what the real servers answered
//! (llama-server's `/apply-template` was asked for real: it returns the
//! rendered prompt with the assistant's turn opened).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::time::Duration;

use codeloop_llm::openai::{OpenAiClient, OpenAiOptions};
use codeloop_llm::{ChatModel, ChatReply, ChatRequest, Delta, LlmError, Prefill, Prefilled};
use codeloop_protocol::ChatMessage;
use codeloop_testkit::fault_server;
use fault_server::*;
use serde_json::json;
use tokio::sync::mpsc;

const PREFILL: &str = "```python\ndef add(a, b):\n    ";
const BODY: &str = "return a + b\n";
const TEMPLATE: &str = "<|im_start|>system\nYou write Python.<|im_end|>\n<|im_start|>user\nWrite add.<|im_end|>\n<|im_start|>assistant\n";

fn client(server: &FaultServer) -> OpenAiClient {
    let mut o = OpenAiOptions::new(&server.base_url, "smollm2");
    o.request_timeout = Duration::from_secs(10);
    o.connect_timeout = Duration::from_secs(2);
    o.backoff_base = Duration::from_millis(20);
    OpenAiClient::new(o).unwrap()
}

fn request() -> ChatRequest {
    ChatRequest {
        tag: "code/add/1".into(),
        messages: vec![
            ChatMessage::system("You write Python."),
            ChatMessage::user("Write add."),
        ],
        prefill: Some(Prefill {
            text: PREFILL.into(),
            stop: vec!["```".into()],
        }),
        ..ChatRequest::default()
    }
}

async fn ask(model: &dyn ChatModel) -> (Result<ChatReply, LlmError>, Vec<Delta>) {
    let (tx, mut rx) = mpsc::channel(16);
    let collect = async move {
        let mut got = Vec::new();
        while let Some(d) = rx.recv().await {
            got.push(d);
        }
        got
    };
    tokio::join!(model.stream(request(), tx), collect)
}

fn answer(deltas: &[Delta]) -> String {
    deltas
        .iter()
        .filter_map(|d| match d {
            Delta::Content(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// A `/completions` stream: text pieces, its finish, its usage, `[DONE]`.
fn completion(text: &str) -> Answer {
    let mut events: Vec<String> = text
        .as_bytes()
        .chunks(5)
        .map(|c| event(json!({"choices": [{"index": 0, "text": String::from_utf8_lossy(c)}]})))
        .collect();
    events.push(event(
        json!({"choices": [{"index": 0, "text": "", "finish_reason": "stop"}], "usage": {"prompt_tokens": 40, "completion_tokens": 4}}),
    ));
    events.push(done());
    Answer::Sse(events)
}

#[tokio::test]
async fn llama_cpp_goes_on_from_the_prefill_through_apply_template_and_completions() {
    let server = FaultServer::start("unused").await;
    server.route(
        "GET /props",
        json_answer(
            200,
            json!({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}),
        ),
    );
    server.route(
        "POST /apply-template",
        json_answer(200, json!({ "prompt": TEMPLATE })),
    );
    server.route("POST /v1/completions", completion(BODY));
    let (reply, deltas) = ask(&client(&server)).await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, format!("{PREFILL}{BODY}"));
    assert_eq!(reply.prefilled, Some(Prefilled::Completions));
    assert_eq!(reply.usage.map(|u| u.completion_tokens), Some(4));
    assert!(!reply.usage_estimated);
    // The reply says how it went as it begins (a reply stopped before its
    // end keeps it), then the prefill is the answer's first piece, as if
    // the model had written it.
    assert_eq!(
        deltas[0],
        Delta::Began {
            structured: None,
            prefilled: Some(Prefilled::Completions)
        }
    );
    assert_eq!(deltas[1], Delta::Content(PREFILL.into()));
    assert_eq!(answer(&deltas), reply.text);
    let seen = server.seen();
    let template = seen.iter().find(|s| s.path == "/apply-template").unwrap();
    assert_eq!(template.json()["messages"][1]["content"], "Write add.");
    let sent = seen
        .iter()
        .find(|s| s.path == "/v1/completions")
        .unwrap()
        .json();
    assert_eq!(sent["prompt"], format!("{TEMPLATE}{PREFILL}"));
    assert_eq!(sent["stop"], json!(["```"]));
    assert_eq!(sent["stream"], true);
    assert!(sent.get("messages").is_none(), "{sent}");
    assert_eq!(server.chat_requests(), 0);
}

#[tokio::test]
async fn llama_cpp_without_apply_template_is_asked_in_the_chat_without_the_prefill() {
    let server = FaultServer::start(BODY).await;
    server.route(
        "GET /props",
        json_answer(
            200,
            json!({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}),
        ),
    );
    let (reply, _) = ask(&client(&server)).await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, BODY);
    assert_eq!(reply.prefilled, Some(Prefilled::NotContinued));
    let chat = server
        .seen()
        .into_iter()
        .find(|s| s.path == "/v1/chat/completions")
        .unwrap();
    assert_eq!(chat.json()["messages"].as_array().unwrap().len(), 2);
    assert!(chat.json().get("stop").is_none());
}

#[tokio::test]
async fn vllm_continues_a_final_assistant_message() {
    let server = FaultServer::start(BODY).await;
    server.route(
        "GET /v1/models",
        json_answer(
            200,
            json!({"object": "list", "data": [{"id": "smollm2", "max_model_len": 2048}]}),
        ),
    );
    let (reply, deltas) = ask(&client(&server)).await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, format!("{PREFILL}{BODY}"));
    assert_eq!(reply.prefilled, Some(Prefilled::ContinueFinal));
    assert_eq!(answer(&deltas), reply.text);
    let sent = server
        .seen()
        .into_iter()
        .find(|s| s.path == "/v1/chat/completions")
        .unwrap()
        .json();
    assert_eq!(sent["continue_final_message"], true);
    assert_eq!(sent["add_generation_prompt"], false);
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["content"], PREFILL);
    assert_eq!(sent["stop"], json!(["```"]));
}

#[tokio::test]
async fn llama_cpp_python_is_asked_without_the_prefill_and_says_so() {
    let server = FaultServer::start(BODY).await;
    server.route(
        "POST /extras/tokenize/count",
        json_answer(200, json!({"count": 3})),
    );
    let (reply, deltas) = ask(&client(&server)).await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, BODY);
    assert_eq!(reply.prefilled, Some(Prefilled::NotContinued));
    assert_eq!(answer(&deltas), BODY);
    let sent = server
        .seen()
        .into_iter()
        .find(|s| s.path == "/v1/chat/completions")
        .unwrap()
        .json();
    assert_eq!(sent["messages"].as_array().unwrap().len(), 2);
    assert!(sent.get("continue_final_message").is_none());
    // The stop belongs to the prefill: a reply written whole opens its own
    // block, which a stop at "```" would end before its first line.
    assert!(sent.get("stop").is_none(), "{sent}");
}
