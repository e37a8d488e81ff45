//! What local servers do that hosted APIs do not, one quirk per test, from a
//! loopback server that answers as they do (testkit's `fault_server`): a
//! stream cut with `[DONE]` and no `finish_reason` (llama-cpp-python, when a
//! second request arrives), a finishing chunk and then silence, a refusal of
//! a structured-output shape, one request served at a time. The same client
//! against the real servers is in `real_models.rs`; these are the faults a
//! real server does not make on demand.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::sync::Arc;
use std::time::{Duration, Instant};

use codeloop_llm::openai::{OpenAiClient, OpenAiOptions};
use codeloop_llm::{ChatModel, ChatReply, ChatRequest, Delta, LlmError, ReplySchema, Structured};
use codeloop_protocol::ChatMessage;
use codeloop_testkit::fault_server;
use fault_server::*;
use serde_json::json;
use tokio::sync::mpsc;

const ANSWER: &str = "def add(a, b):\n    return a + b\n";

fn options(server: &FaultServer) -> OpenAiOptions {
    let mut o = OpenAiOptions::new(&server.base_url, "smollm2");
    o.request_timeout = Duration::from_secs(30);
    o.connect_timeout = Duration::from_secs(2);
    o.backoff_base = Duration::from_millis(20);
    o.retries = 3;
    o
}

fn request() -> ChatRequest {
    ChatRequest {
        tag: "plan".into(),
        messages: vec![ChatMessage::user("Plan: add two numbers.")],
        temperature: None,
        max_tokens: Some(256),
        schema: None,
        prefill: None,
    }
}

fn with_schema() -> ChatRequest {
    ChatRequest {
        schema: Some(ReplySchema {
            name: "plan".into(),
            schema: json!({"type": "object", "properties": {"functions": {"type": "array"}}, "required": ["functions"]}),
        }),
        ..request()
    }
}

async fn ask(
    model: &OpenAiClient,
    request: ChatRequest,
) -> (Result<ChatReply, LlmError>, Vec<Delta>) {
    let (tx, mut rx) = mpsc::channel(64);
    let collect = async move {
        let mut got = Vec::new();
        while let Some(d) = rx.recv().await {
            got.push(d);
        }
        got
    };
    tokio::join!(model.stream(request, tx), collect)
}

fn role() -> String {
    event(json!({"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": null}]}))
}

#[tokio::test]
async fn done_without_a_finish_reason_is_a_cut_stream_retried_and_said() {
    let server = FaultServer::start(ANSWER).await;
    let client = OpenAiClient::new(options(&server)).unwrap();
    // The first reply teaches that this server ends its replies with a finish_reason.
    assert_eq!(ask(&client, request()).await.0.unwrap().text, ANSWER);
    // llama-cpp-python's cut: part of the reply, then [DONE] and no finish_reason.
    server.queue([Answer::Sse(vec![role(), content("def add("), done()])]);
    let (reply, deltas) = ask(&client, request()).await;
    assert_eq!(
        reply.unwrap().text,
        ANSWER,
        "the cut reply is not taken as whole"
    );
    let restarts: Vec<&String> = deltas
        .iter()
        .filter_map(|d| match d {
            Delta::Restart(why) => Some(why),
            _ => None,
        })
        .collect();
    assert_eq!(restarts.len(), 1, "{deltas:?}");
    assert!(restarts[0].contains("no finish_reason"), "{}", restarts[0]);
    assert_eq!(server.chat_requests(), 3);

    // Even from a new client: an empty reply ended so (the role, then
    // [DONE]) is a cut, never a whole empty reply.
    let client = OpenAiClient::new(options(&server)).unwrap();
    server.queue([Answer::Sse(vec![role(), done()])]);
    let (reply, _) = ask(&client, request()).await;
    assert_eq!(reply.unwrap().text, ANSWER);
    assert_eq!(server.chat_requests(), 5);
}

#[tokio::test]
async fn a_reply_is_whole_at_its_finish_reason_even_if_the_server_then_holds_on() {
    let server = FaultServer::start(ANSWER).await;
    let mut events = good_conversation(ANSWER);
    events.pop(); // no [DONE]
    server.queue([Answer::SseHold {
        events,
        hold: Duration::from_secs(60),
    }]);
    let client = OpenAiClient::new(options(&server)).unwrap();
    let started = Instant::now();
    let reply = ask(&client, request()).await.0.unwrap();
    assert_eq!(reply.text, ANSWER);
    assert!(
        !reply.usage_estimated,
        "the usage sent after the finish was kept"
    );
    // The request timeout is 30 s: the reply ended at the short grace.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_schema_goes_down_the_ladder_of_shapes_and_the_shape_is_remembered() {
    let server = FaultServer::start("{\"functions\": []}").await;
    // llama-cpp-python answers json_schema with a 500 naming response_format.
    server.queue([json_answer(
        500,
        json!({"error": {"message": "1 validation error: ('body', 'response_format', 'type'): Input should be 'text' or 'json_object'", "type": "internal_server_error"}}),
    )]);
    let client = OpenAiClient::new(options(&server)).unwrap();
    let reply = ask(&client, with_schema()).await.0.unwrap();
    assert_eq!(reply.structured, Some(Structured::JsonObject));
    let seen = server.seen();
    assert_eq!(seen[0].json()["response_format"]["type"], "json_schema");
    assert_eq!(
        seen[0].json()["response_format"]["json_schema"]["name"],
        "plan"
    );
    assert_eq!(seen[1].json()["response_format"]["type"], "json_object");
    assert_eq!(
        seen[1].json()["response_format"]["schema"]["required"],
        json!(["functions"])
    );
    // Remembered: the next call starts where the server took it.
    let reply = ask(&client, with_schema()).await.0.unwrap();
    assert_eq!(reply.structured, Some(Structured::JsonObject));
    assert_eq!(server.chat_requests(), 3);
    // A server that takes neither: the prompt alone, said so.
    let refusal = || {
        json_answer(
            400,
            json!({"error": {"message": "unknown field: response_format"}}),
        )
    };
    server.queue([refusal()]);
    let reply = ask(&client, with_schema()).await.0.unwrap();
    assert_eq!(reply.structured, Some(Structured::PromptOnly));
    assert!(
        server
            .seen()
            .last()
            .unwrap()
            .json()
            .get("response_format")
            .is_none()
    );
    // A call without a schema sends none and says none.
    let reply = ask(&client, request()).await.0.unwrap();
    assert_eq!(reply.structured, None);
}

#[tokio::test]
async fn a_server_that_serves_one_request_at_a_time_never_gets_two() {
    let long = "x = 1\n".repeat(60);
    let server = FaultServer::start(&long).await;
    // llama-cpp-python answers its tokenizer route; that is how it is known.
    server.route(
        "POST /extras/tokenize/count",
        json_answer(200, json!({"count": 2})),
    );
    let mut o = options(&server);
    o.learn_context = true;
    let client = Arc::new(OpenAiClient::new(o).unwrap());
    assert_eq!(client.max_parallel().await, Some(1));
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { ask(&client, request()).await.0.unwrap() })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().text, long);
    }
    assert_eq!(server.chat_requests(), 3);
    assert_eq!(server.max_in_flight(), 1);

    // Two clients (as two codeloop processes would have: a bench beside
    // the workbench) share the server's one turn too.
    let other = Arc::new(
        OpenAiClient::new({
            let mut o = options(&server);
            o.learn_context = true;
            o
        })
        .unwrap(),
    );
    let calls: Vec<_> = [client.clone(), other.clone(), client.clone(), other]
        .into_iter()
        .map(|c| tokio::spawn(async move { ask(&c, request()).await.0.unwrap() }))
        .collect();
    for call in calls {
        call.await.unwrap();
    }
    assert_eq!(server.chat_requests(), 7);
    assert_eq!(server.max_in_flight(), 1, "two clients were served at once");

    // A server that serves many (no limit learned): calls overlap.
    let server = FaultServer::start(&long).await;
    let client = Arc::new(OpenAiClient::new(options(&server)).unwrap());
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { ask(&client, request()).await.0.unwrap() })
        })
        .collect();
    for call in calls {
        call.await.unwrap();
    }
    assert!(
        server.max_in_flight() > 1,
        "the imitation did not overlap calls"
    );
}

#[tokio::test]
async fn llama_cpp_slots_bound_the_calls_and_cache_prompt_is_asked() {
    let server = FaultServer::start(ANSWER).await;
    server.route(
        "GET /props",
        json_answer(
            200,
            json!({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 2}),
        ),
    );
    let mut o = options(&server);
    o.learn_context = true;
    let client = OpenAiClient::new(o).unwrap();
    assert_eq!(client.max_parallel().await, Some(2));
    ask(&client, request()).await.0.unwrap();
    let sent = server
        .seen()
        .into_iter()
        .rfind(|s| s.path == "/v1/chat/completions")
        .unwrap()
        .json();
    assert_eq!(sent["cache_prompt"], json!(true));
    // The reply limit asked (256) fits the window; a prompt that leaves
    // less gets less.
    assert_eq!(sent["max_tokens"], json!(256));
    let long = ChatRequest {
        messages: vec![ChatMessage::user("word ".repeat(2400))],
        max_tokens: Some(2048),
        ..request()
    };
    ask(&client, long).await.0.unwrap();
    let sent = server
        .seen()
        .into_iter()
        .rfind(|s| s.path == "/v1/chat/completions")
        .unwrap()
        .json();
    let fitted = sent["max_tokens"].as_u64().unwrap();
    assert!((64..2048).contains(&fitted), "{fitted}");
}
