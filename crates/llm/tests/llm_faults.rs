//! The OpenAI-compatible client against a loopback server that answers as
//! llama.cpp, vLLM, Ollama and OpenAI do, one fault or quirk per test (see
//! testkit's `fault_server`). Each test asserts on the reply or the error
//! and on how many requests the server saw.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::time::{Duration, SystemTime};

use codeloop_llm::openai::{OpenAiClient, OpenAiOptions};
use codeloop_llm::{
    ChatModel, ChatReply, ChatRequest, Delta, FinishReason, LlmError, LlmErrorKind, tokens,
};
use codeloop_protocol::ChatMessage;
use codeloop_testkit::fault_server;
use fault_server::*;
use serde_json::json;
use tokio::sync::mpsc;

const ANSWER: &str = "def add(a, b):\n    return a + b\n";

fn options(server: &FaultServer) -> OpenAiOptions {
    let mut o = OpenAiOptions::new(&server.base_url, "qwen2.5-coder:7b");
    o.request_timeout = Duration::from_secs(10);
    o.connect_timeout = Duration::from_secs(2);
    o.backoff_base = Duration::from_millis(20);
    o.retries = 3;
    o
}

fn client(server: &FaultServer) -> OpenAiClient {
    OpenAiClient::new(options(server)).unwrap()
}

fn request() -> ChatRequest {
    ChatRequest {
        tag: "code/add/1".into(),
        messages: vec![
            ChatMessage::system("You write Python."),
            ChatMessage::user("Write add(a, b)."),
        ],
        temperature: Some(0.2),
        max_tokens: None,
        schema: None,
        prefill: None,
    }
}

/// One call with `request`, collecting every delta of the reply (the
/// word that it began, `Delta::Began`, apart: `llm_prefill` tests it).
async fn ask(
    model: &dyn ChatModel,
    request: ChatRequest,
) -> (Result<ChatReply, LlmError>, Vec<Delta>) {
    let (tx, mut rx) = mpsc::channel(16);
    let collect = async move {
        let mut got = Vec::new();
        while let Some(d) = rx.recv().await {
            if !matches!(d, Delta::Began { .. }) {
                got.push(d);
            }
        }
        got
    };
    tokio::join!(model.stream(request, tx), collect)
}

/// What a consumer of the deltas shows at the end: (answer, reasoning).
fn shown(deltas: &[Delta]) -> (String, String) {
    let (mut answer, mut reasoning) = (String::new(), String::new());
    for d in deltas {
        match d {
            Delta::Content(t) => answer.push_str(t),
            Delta::Reasoning(t) => reasoning.push_str(t),
            Delta::Restart(_) => {
                answer.clear();
                reasoning.clear();
            }
            Delta::Status(_) | Delta::Began { .. } => {}
        }
    }
    (answer, reasoning)
}

fn restarts(deltas: &[Delta]) -> usize {
    deltas
        .iter()
        .filter(|d| matches!(d, Delta::Restart(_)))
        .count()
}

#[tokio::test]
async fn the_good_conversation_arrives_whole_with_the_servers_usage() {
    let server = FaultServer::start(ANSWER).await;
    let (reply, deltas) = ask(&client(&server), request()).await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, ANSWER);
    assert_eq!(reply.reasoning, "");
    assert_eq!(reply.finish_reason, FinishReason::Stop);
    assert!(!reply.usage_estimated);
    assert_eq!(reply.usage.map(|u| u.prompt_tokens), Some(21));
    assert_eq!(shown(&deltas), (ANSWER.to_string(), String::new()));
    assert_eq!(server.chat_requests(), 1);
    assert!(server.seen()[0].json().get("max_tokens").is_none());

    // --max-tokens (the options', the person's) is sent when the request sets
    // none, and wins over the request's (the engine's default for its kind).
    let mut o = options(&server);
    o.max_tokens = Some(256);
    let model = OpenAiClient::new(o).unwrap();
    ask(&model, request()).await.0.unwrap();
    let mut own = request();
    own.max_tokens = Some(64);
    ask(&model, own).await.0.unwrap();
    let seen = server.seen();
    assert_eq!(seen[1].json()["max_tokens"], json!(256));
    assert_eq!(seen[2].json()["max_tokens"], json!(256));
    let model = OpenAiClient::new(options(&server)).unwrap();
    let mut own = request();
    own.max_tokens = Some(64);
    ask(&model, own).await.0.unwrap();
    assert_eq!(server.seen()[3].json()["max_tokens"], json!(64));
}

#[tokio::test]
async fn reasoning_fields_of_each_server_are_kept_apart_from_the_answer() {
    // vLLM, DeepSeek and llama.cpp say reasoning_content; Ollama and OpenRouter say reasoning.
    for field in ["reasoning_content", "reasoning"] {
        let server = FaultServer::start(ANSWER).await;
        server.queue([Answer::Sse(vec![
            reasoning(field, "First, a draft: "),
            reasoning(field, "def add(a, b): pass"),
            content("def add(a, b):\n"),
            content("    return a + b\n"),
            finish("stop"),
            usage(30, 40),
            done(),
        ])]);
        let (reply, deltas) = ask(&client(&server), request()).await;
        let reply = reply.unwrap();
        assert_eq!(reply.text, ANSWER, "{field}");
        assert_eq!(reply.reasoning, "First, a draft: def add(a, b): pass");
        assert_eq!(
            deltas[0],
            Delta::Reasoning("First, a draft: ".into()),
            "{field}"
        );
        assert_eq!(
            shown(&deltas),
            (reply.text.clone(), reply.reasoning.clone())
        );
        assert_eq!(server.chat_requests(), 1);
    }
}

#[tokio::test]
async fn a_think_block_split_across_chunks_is_reasoning_never_answer() {
    let server = FaultServer::start(ANSWER).await;
    server.queue([Answer::Sse(vec![
        content("<thi"),
        content("nk>\nmaybe def add(a, b): return a - b"),
        content("? no.</th"),
        content("ink>\n\n"),
        content(ANSWER),
        finish("stop"),
        done(),
    ])]);
    let (reply, deltas) = ask(&client(&server), request()).await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, ANSWER);
    assert_eq!(reply.reasoning, "maybe def add(a, b): return a - b? no.");
    for d in &deltas {
        if let Delta::Content(t) = d {
            assert!(!t.contains("think") && !t.contains("return a - b"), "{d:?}");
        }
    }
    // No usage came: the estimate counts the reasoning too.
    assert!(reply.usage_estimated);
    assert_eq!(
        reply.usage,
        Some(tokens::estimate_usage(
            &request().messages,
            &reply.text,
            &reply.reasoning
        ))
    );
}

#[tokio::test]
async fn a_reply_that_began_inside_the_block_is_restarted_as_reasoning() {
    // The chat template opened <think>; the model writes only its end.
    let server = FaultServer::start(ANSWER).await;
    server.queue([Answer::Sse(vec![
        content("Let me think"),
        content(" about it."),
        content("</think>\n"),
        content(ANSWER),
        finish("stop"),
        done(),
    ])]);
    let (reply, deltas) = ask(&client(&server), request()).await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, ANSWER);
    assert_eq!(reply.reasoning, "Let me think about it.");
    assert_eq!(restarts(&deltas), 1);
    assert_eq!(
        shown(&deltas),
        (reply.text.clone(), reply.reasoning.clone())
    );
}

#[tokio::test]
async fn an_unclosed_block_at_the_end_is_reasoning_and_the_answer_is_empty() {
    let server = FaultServer::start(ANSWER).await;
    server.queue([Answer::Sse(vec![
        content("<think>still going when the limit came"),
        finish("length"),
        usage(20, 512),
        done(),
    ])]);
    let (reply, _) = ask(&client(&server), request()).await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, "");
    assert_eq!(reply.reasoning, "still going when the limit came");
    assert!(reply.is_cut_off());
}

#[tokio::test]
async fn a_reply_cut_at_the_length_limit_is_marked_and_continued() {
    let server = FaultServer::start("    return a + b\n").await;
    server.queue([Answer::Sse(vec![
        content("def add(a, b):\n"),
        finish("length"),
        usage(20, 6),
        done(),
    ])]);
    let model = client(&server);
    let first = request();
    let (reply, _) = ask(&model, first.clone()).await;
    let mut reply = reply.unwrap();
    assert_eq!(reply.finish_reason, FinishReason::Length);
    assert!(reply.is_cut_off());
    let next = first.continuation(&reply);
    let (more, _) = ask(&model, next).await;
    reply.extend(more.unwrap());
    assert_eq!(reply.text, ANSWER);
    assert!(!reply.is_cut_off());
    let seen = server.seen();
    assert_eq!(server.chat_requests(), 2);
    let messages = &seen[1].json()["messages"];
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": "def add(a, b):\n"})
    );
    assert_eq!(messages[3]["role"], json!("user"));
}

#[tokio::test]
async fn no_usage_from_the_server_is_estimated_and_marked() {
    // llama-cpp-python sends no usage when streaming.
    let server = FaultServer::start(ANSWER).await;
    server.queue([Answer::Sse(vec![content(ANSWER), finish("stop"), done()])]);
    let (reply, _) = ask(&client(&server), request()).await;
    let reply = reply.unwrap();
    assert!(reply.usage_estimated);
    let usage = reply.usage.unwrap();
    assert_eq!(
        usage.prompt_tokens,
        tokens::estimate_prompt_tokens(&request().messages)
    );
    assert_eq!(usage.completion_tokens, tokens::estimate_tokens(ANSWER));
    assert!(usage.completion_tokens > 0);
}

#[tokio::test]
async fn a_server_that_went_down_mid_session_is_waited_for() {
    let server = FaultServer::start(ANSWER).await;
    let mut o = options(&server);
    o.retries = 8;
    let model = OpenAiClient::new(o).unwrap();
    assert_eq!(ask(&model, request()).await.0.unwrap().text, ANSWER);
    server.stop();
    let back = async {
        tokio::time::sleep(Duration::from_millis(150)).await;
        server.restart().await;
    };
    let ((reply, deltas), ()) = tokio::join!(ask(&model, request()), back);
    assert_eq!(reply.unwrap().text, ANSWER);
    assert_eq!(restarts(&deltas), 0);
    // The refused attempts never reached it: one request each call.
    assert_eq!(server.chat_requests(), 2);
}

#[tokio::test]
async fn eof_before_the_head_and_a_reset_before_any_content_are_retried() {
    let server = FaultServer::start(ANSWER).await;
    server.queue([
        Answer::CloseBeforeHead,
        Answer::SseCut {
            events: vec![event(
                json!({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
            )],
            reset: true,
        },
    ]);
    let (reply, deltas) = ask(&client(&server), request()).await;
    assert_eq!(reply.unwrap().text, ANSWER);
    // Nothing had been shown, but the stream that broke says why the call
    // was made again (a request that never got its head is only retried).
    assert_eq!(restarts(&deltas), 1);
    assert_eq!(server.chat_requests(), 3);
}

#[tokio::test]
async fn a_reset_after_content_is_asked_again_once_then_an_error() {
    let cut = || Answer::SseCut {
        events: vec![content("def add(a, b):\n")],
        reset: true,
    };
    let server = FaultServer::start(ANSWER).await;
    server.queue([cut()]);
    let (reply, deltas) = ask(&client(&server), request()).await;
    assert_eq!(reply.unwrap().text, ANSWER);
    assert_eq!(restarts(&deltas), 1);
    assert_eq!(shown(&deltas).0, ANSWER);
    assert_eq!(server.chat_requests(), 2);

    let server = FaultServer::start(ANSWER).await;
    server.queue([cut(), cut()]);
    let (reply, _) = ask(&client(&server), request()).await;
    let err = reply.unwrap_err();
    assert!(matches!(err, LlmError::StreamCut { .. }), "{err:?}");
    assert_eq!(err.kind(), LlmErrorKind::BadReply);
    assert!(err.to_string().contains("each of 2 attempts"), "{err}");
    assert_eq!(server.chat_requests(), 2);
}

#[tokio::test]
async fn a_429_is_waited_out_whether_retry_after_is_seconds_or_a_date() {
    let date = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(1));
    for retry_after in ["1".to_string(), date] {
        let server = FaultServer::start(ANSWER).await;
        server.queue([Answer::Whole(
            429,
            format!("retry-after: {retry_after}\r\n"),
            r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#.into(),
        )]);
        let (reply, _) = ask(&client(&server), request()).await;
        assert_eq!(reply.unwrap().text, ANSWER, "Retry-After: {retry_after}");
        assert_eq!(server.chat_requests(), 2);
    }
}

#[tokio::test]
async fn each_servers_overflow_body_is_a_context_overflow_not_retried() {
    let cases = [
        (
            "vLLM",
            json_answer(
                400,
                json!({"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.", "type": "BadRequestError", "param": null, "code": 400}),
            ),
            Some(4096),
            Some(5000),
            "--max-model-len",
        ),
        (
            "llama.cpp",
            json_answer(
                400,
                json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 5000, "n_ctx": 4096}}),
            ),
            Some(4096),
            Some(5000),
            "--ctx-size",
        ),
        (
            "older llama.cpp",
            json_answer(
                500,
                json!({"error": {"code": 500, "message": "the request exceeds the available context size. try increasing the context size or enable context shift", "type": "server_error"}}),
            ),
            None,
            None,
            "--ctx-size",
        ),
        (
            "OpenAI",
            json_answer(
                400,
                json!({"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9100 tokens. Please reduce the length of the messages.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
            ),
            Some(8192),
            Some(9100),
            "larger context window",
        ),
        (
            "Ollama",
            json_answer(
                400,
                json!({"error": {"message": "prompt too long; exceeded max context length by 100 tokens", "type": "api_error"}}),
            ),
            None,
            None,
            "shorter prompt",
        ),
    ];
    for (name, answer, window, prompt, advice) in cases {
        let server = FaultServer::start(ANSWER).await;
        server.queue([answer]);
        let (reply, _) = ask(&client(&server), request()).await;
        let err = reply.unwrap_err();
        let LlmError::ContextOverflow {
            window: w,
            prompt_tokens: p,
            ..
        } = &err
        else {
            panic!("{name}: {err:?}");
        };
        assert_eq!((*w, *p), (window, prompt), "{name}");
        assert_eq!(err.kind(), LlmErrorKind::ContextOverflow);
        assert!(!err.is_unrecoverable() && err.is_model_failure());
        assert!(err.to_string().contains(advice), "{name}: {err}");
        assert_eq!(server.chat_requests(), 1, "{name}: not retried");
    }
}

#[tokio::test]
async fn llama_cpps_empty_200_stream_is_a_context_overflow() {
    for events in [vec![finish("length"), usage(4096, 0), done()], vec![done()]] {
        let server = FaultServer::start(ANSWER).await;
        server.queue([Answer::Sse(events.clone())]);
        let (reply, deltas) = ask(&client(&server), request()).await;
        let err = reply.unwrap_err();
        assert!(
            matches!(err, LlmError::ContextOverflow { .. }),
            "{events:?}: {err:?}"
        );
        assert!(err.to_string().contains("empty reply"), "{err}");
        assert!(deltas.is_empty());
        assert_eq!(server.chat_requests(), 1);
    }
}

#[tokio::test]
async fn llama_cpps_props_give_the_context_window_once() {
    let server = FaultServer::start(ANSWER).await;
    server.route(
        "GET /props",
        json_answer(
            200,
            json!({"default_generation_settings": {"n_ctx": 8192, "temperature": 0.8}, "total_slots": 1}),
        ),
    );
    let model = client(&server);
    let window = model.context_window().await.unwrap();
    assert_eq!(window.tokens, 8192);
    assert!(window.source.contains("llama.cpp"), "{}", window.source);
    let asked = server.seen().len();
    assert_eq!(model.context_window().await.unwrap().tokens, 8192);
    assert_eq!(server.seen().len(), asked, "asked once, then remembered");
    let paths: Vec<String> = server.seen().iter().map(|s| s.path.clone()).collect();
    assert_eq!(paths, ["/v1/models", "/api/version", "/props"]);
}

#[tokio::test]
async fn vllms_model_list_gives_max_model_len() {
    let server = FaultServer::start(ANSWER).await;
    server.route(
        "GET /v1/models",
        json_answer(
            200,
            json!({"object": "list", "data": [{"id": "other", "max_model_len": 2048}, {"id": "qwen2.5-coder:7b", "object": "model", "owned_by": "vllm", "max_model_len": 32768}]}),
        ),
    );
    let window = client(&server).context_window().await.unwrap();
    assert_eq!(window.tokens, 32768);
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test]
async fn an_unknown_window_is_none_and_a_configured_one_wins_without_asking() {
    let server = FaultServer::start(ANSWER).await;
    assert_eq!(client(&server).context_window().await, None);
    let asked = server.seen().len();
    let mut o = options(&server);
    o.context_window = Some(12000);
    let window = OpenAiClient::new(o)
        .unwrap()
        .context_window()
        .await
        .unwrap();
    assert_eq!(
        (window.tokens, window.source.as_str()),
        (12000, "the config")
    );
    assert_eq!(server.seen().len(), asked);
}

fn ollama(server: &FaultServer, parameters: &str) {
    server.route(
        "GET /api/version",
        json_answer(200, json!({"version": "0.6.8"})),
    );
    server.route(
        "POST /api/show",
        json_answer(
            200,
            json!({"parameters": parameters, "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}}),
        ),
    );
}

#[tokio::test]
async fn ollama_is_found_and_a_prompt_past_its_num_ctx_is_refused_before_sending() {
    let server = FaultServer::start(ANSWER).await;
    ollama(&server, "stop \"<|im_end|>\"\nnum_ctx 2048");
    let mut o = options(&server);
    o.learn_context = true;
    let model = OpenAiClient::new(o).unwrap();
    assert_eq!(model.context_window().await.unwrap().tokens, 2048);
    let show = server
        .seen()
        .into_iter()
        .find(|s| s.path == "/api/show")
        .unwrap();
    assert_eq!(show.json()["model"], json!("qwen2.5-coder:7b"));

    // A prompt that fits goes through.
    assert_eq!(ask(&model, request()).await.0.unwrap().text, ANSWER);
    // One that does not is refused, saying how to raise num_ctx.
    let mut long = request();
    long.messages.push(ChatMessage::user("x".repeat(4 * 2048)));
    let (reply, _) = ask(&model, long).await;
    let err = reply.unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::ContextOverflow {
                window: Some(2048),
                ..
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    for needle in [
        "OLLAMA_CONTEXT_LENGTH",
        "num_ctx",
        "supports 32768",
        "context = ",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from: {text}");
    }
    assert_eq!(server.chat_requests(), 1, "the long prompt was never sent");
}

#[tokio::test]
async fn ollama_without_num_ctx_is_taken_at_its_default() {
    let server = FaultServer::start(ANSWER).await;
    ollama(&server, "temperature 0.7");
    let window = client(&server).context_window().await.unwrap();
    assert_eq!(window.tokens, codeloop_llm::openai::OLLAMA_DEFAULT_NUM_CTX);
    assert!(window.source.contains("assumed"), "{}", window.source);
}

#[tokio::test]
async fn errors_say_whether_the_model_call_failed_or_was_cancelled() {
    let server = FaultServer::start(ANSWER).await;
    server.queue([json_answer(
        401,
        json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}),
    )]);
    let err = ask(&client(&server), request()).await.0.unwrap_err();
    assert_eq!(err.kind(), LlmErrorKind::Auth);
    assert!(err.is_unrecoverable() && err.is_model_failure());
    assert_eq!(server.chat_requests(), 1);

    // Never reached: refused at once, not waited for.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let model = OpenAiClient::new(OpenAiOptions::new(
        format!("http://127.0.0.1:{port}/v1"),
        "m",
    ))
    .unwrap();
    let err = ask(&model, request()).await.0.unwrap_err();
    assert_eq!(err.kind(), LlmErrorKind::Unreachable);
    assert!(err.is_unrecoverable());
}

#[tokio::test]
async fn a_stream_of_keep_alive_comments_alone_is_silence() {
    // Comments every 100 ms for 30 s, the silence allowed 1 s: only data
    // counts as the server being at work, so the call ends as stalled
    // (not when the server lets go, with the stream ended).
    let server = FaultServer::start(ANSWER).await;
    server.queue([Answer::Comments {
        every: Duration::from_millis(100),
        total: Duration::from_secs(30),
    }]);
    let mut o = options(&server);
    o.request_timeout = Duration::from_secs(1);
    o.retries = 0;
    let model = OpenAiClient::new(o).unwrap();
    let (result, _) = ask(&model, request()).await;
    let err = result.unwrap_err();
    assert!(matches!(err, LlmError::Stalled { secs: 1, .. }), "{err}");
    assert!(
        err.to_string().contains("keep-alive comments are not data"),
        "{err}"
    );
}

#[tokio::test]
async fn numbers_a_lying_server_states_are_bounded() {
    // llama.cpp's /props saying 2^64-1 slots (a semaphore of that many
    // panics) and a window of 2^64-1 tokens; usage past any real count.
    let server = FaultServer::start(ANSWER).await;
    server.route(
        "GET /props",
        json_answer(
            200,
            json!({"default_generation_settings": {"n_ctx": u64::MAX}, "total_slots": u64::MAX}),
        ),
    );
    let mut events = vec![content(ANSWER), finish("stop")];
    events.push(event(json!({
        "choices": [],
        "usage": {"prompt_tokens": u64::MAX, "completion_tokens": u64::MAX},
        "timings": {"prompt_n": u64::MAX, "cache_n": u64::MAX}
    })));
    events.push(done());
    server.queue([Answer::Sse(events)]);
    let mut o = options(&server);
    o.learn_context = true;
    let model = OpenAiClient::new(o).unwrap();
    assert_eq!(model.max_parallel().await, Some(256));
    assert_eq!(
        model.context_window().await,
        None,
        "a window of 2^64-1 is not believed"
    );
    let (result, _) = ask(&model, request()).await;
    let reply = result.unwrap();
    assert_eq!(reply.text, ANSWER);
    assert!(reply.usage_estimated, "{:?}", reply.usage);
}

#[tokio::test]
async fn a_retry_after_of_any_length_is_a_wait_too_long_not_a_panic() {
    for (header, value) in [
        ("retry-after", "1e300"),
        ("retry-after-ms", "1e308"),
        ("retry-after", "18446744073709551616"),
    ] {
        let server = FaultServer::start(ANSWER).await;
        server.queue([Answer::Whole(
            429,
            format!("{header}: {value}\r\n"),
            "{\"error\": {\"message\": \"slow down\"}}".into(),
        )]);
        let (result, _) = ask(&client(&server), request()).await;
        let err = result.unwrap_err();
        assert!(
            err.to_string().contains("slow down") || err.to_string().contains("wait"),
            "{header}: {err}"
        );
    }
}
