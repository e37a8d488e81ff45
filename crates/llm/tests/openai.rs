//! The OpenAI-compatible client against a real HTTP server on loopback. The
//! server is hand-written so every byte on the wire is controlled: responses
//! are written in pieces with pauses between them, split wherever a test wants.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codeloop_llm::openai::{ApiKey, OpenAiClient, OpenAiOptions, list_models};
use codeloop_llm::{ChatModel, ChatReply, ChatRequest, Delta, LlmError};
use codeloop_protocol::{ChatMessage, Role, Usage};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

const KEY: &str = "sk-test-7f3a9c1e5b";

/// A request as the server received it.
#[derive(Debug, Clone)]
struct Received {
    method: String,
    path: String,
    headers: HashMap<String, String>,
    body: String,
    at: Instant,
}

impl Received {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

enum Part {
    Bytes(Vec<u8>),
    Pause(Duration),
    /// Keep the connection open and wait for the client to close it (or the
    /// time to pass); counts it in `Server::client_closed`.
    AwaitClientClose(Duration),
}

/// One scripted answer; the connection is closed after it.
struct Answer(Vec<Part>);

struct Server {
    base_url: String,
    received: Arc<Mutex<Vec<Received>>>,
    client_closed: Arc<Mutex<u32>>,
}

impl Server {
    async fn start(answers: Vec<Answer>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let client_closed = Arc::new(Mutex::new(0));
        let answers = Arc::new(Mutex::new(answers.into_iter().collect::<Vec<_>>()));
        {
            let received = received.clone();
            let client_closed = client_closed.clone();
            tokio::spawn(async move {
                loop {
                    let Ok((socket, _)) = listener.accept().await else {
                        return;
                    };
                    socket.set_nodelay(true).unwrap();
                    let received = received.clone();
                    let client_closed = client_closed.clone();
                    let answers = answers.clone();
                    tokio::spawn(async move {
                        serve(socket, received, client_closed, answers).await;
                    });
                }
            });
        }
        Server {
            base_url,
            received,
            client_closed,
        }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

async fn serve(
    mut socket: TcpStream,
    received: Arc<Mutex<Vec<Received>>>,
    client_closed: Arc<Mutex<u32>>,
    answers: Arc<Mutex<Vec<Answer>>>,
) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    received.lock().unwrap().push(request);
    let answer = {
        let mut answers = answers.lock().unwrap();
        if answers.is_empty() {
            None
        } else {
            Some(answers.remove(0))
        }
    };
    let parts = match answer {
        Some(Answer(parts)) => parts,
        None => vec![Part::Bytes(
            plain(
                500,
                "",
                "{\"error\":\"the test server has no answer left\"}",
            )
            .to_vec(),
        )],
    };
    for part in parts {
        match part {
            Part::Bytes(bytes) => {
                if socket.write_all(&bytes).await.is_err() {
                    return;
                }
                let _ = socket.flush().await;
            }
            Part::Pause(d) => tokio::time::sleep(d).await,
            Part::AwaitClientClose(limit) => {
                let mut buf = [0u8; 1024];
                let closed = tokio::time::timeout(limit, async {
                    loop {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(_) => {}
                        }
                    }
                })
                .await
                .is_ok();
                if closed {
                    *client_closed.lock().unwrap() += 1;
                }
                return;
            }
        }
    }
    let _ = socket.shutdown().await;
}

async fn read_request(socket: &mut TcpStream) -> Option<Received> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let at = Instant::now();
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..head_end + length]).into_owned();
    Some(Received {
        method,
        path,
        headers,
        body,
        at,
    })
}

/// A whole response with a Content-Length. `headers` are extra lines ending in \r\n.
fn plain(status: u16, headers: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} Whatever\r\ncontent-length: {}\r\nconnection: close\r\n{headers}\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// An SSE response in chunked encoding, one HTTP chunk per piece, 5 ms apart.
/// `finished: false` leaves out the last chunk: the connection drops mid-body.
fn sse_pieces(pieces: &[&[u8]], finished: bool) -> Answer {
    let mut parts = vec![Part::Bytes(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
            .to_vec(),
    )];
    for piece in pieces {
        let mut framed = format!("{:x}\r\n", piece.len()).into_bytes();
        framed.extend_from_slice(piece);
        framed.extend_from_slice(b"\r\n");
        parts.push(Part::Bytes(framed));
        parts.push(Part::Pause(Duration::from_millis(5)));
    }
    if finished {
        parts.push(Part::Bytes(b"0\r\n\r\n".to_vec()));
    }
    Answer(parts)
}

fn sse(text: &str) -> Answer {
    sse_pieces(&[text.as_bytes()], true)
}

fn delta(text: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
    )
}

fn finish(reason: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    )
}

fn usage_chunk(prompt: u64, completion: u64) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}})
    )
}

fn options(server: &Server) -> OpenAiOptions {
    let mut o = OpenAiOptions::new(&server.base_url, "qwen2.5-coder:7b");
    o.api_key = ApiKey::new(KEY);
    o.api_key_env = "TEST_LLM_KEY".into();
    o.request_timeout = Duration::from_secs(10);
    o.connect_timeout = Duration::from_secs(2);
    o.backoff_base = Duration::from_millis(10);
    o.retries = 3;
    o
}

fn request() -> ChatRequest {
    ChatRequest {
        tag: "plan".into(),
        messages: vec![
            ChatMessage {
                role: Role::System,
                content: "You write Python.".into(),
            },
            ChatMessage {
                role: Role::User,
                content: "Parse a CSV line.".into(),
            },
        ],
        temperature: Some(0.2),
        max_tokens: None,
        schema: None,
        prefill: None,
    }
}

/// Run one call, collecting the deltas it streamed.
async fn call(client: &OpenAiClient) -> (Result<ChatReply, LlmError>, Vec<String>) {
    let (tx, mut rx) = mpsc::channel(16);
    let collector = tokio::spawn(async move {
        let mut got = Vec::new();
        while let Some(d) = rx.recv().await {
            got.push(d);
        }
        got
    });
    let reply = client.stream_chat(request(), tx).await;
    (reply, collector.await.unwrap())
}

/// Run one call, collecting every delta (restarts included).
async fn call_deltas(client: &OpenAiClient) -> (Result<ChatReply, LlmError>, Vec<Delta>) {
    let (tx, mut rx) = mpsc::channel(16);
    let collector = tokio::spawn(async move {
        let mut got = Vec::new();
        while let Some(d) = rx.recv().await {
            got.push(d);
        }
        got
    });
    let reply = client.stream(request(), tx).await;
    (reply, collector.await.unwrap())
}

fn assert_names(err: &LlmError, server: &Server, needles: &[&str]) {
    let text = err.to_string();
    eprintln!("error message: {text}");
    assert!(
        text.contains(&format!("{}/chat/completions", server.base_url)),
        "no URL in: {text}"
    );
    for needle in needles {
        assert!(text.contains(needle), "{needle:?} missing from: {text}");
    }
    assert!(!text.contains(KEY), "the key leaked into: {text}");
    assert!(
        !format!("{err:?}").contains(KEY),
        "the key leaked into {err:?}"
    );
}

#[tokio::test]
async fn a_stream_split_mid_event_and_mid_character_arrives_whole() {
    let stream = [
        format!(
            "data: {}\r\n\r\n",
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
        ),
        ": keep-alive\r\n\r\n".to_string(),
        delta("Hé"),
        delta("llo → wörld 😀\n"),
        delta("def f():\n    return 1\n"),
        finish("stop"),
        usage_chunk(42, 17),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat();
    let bytes = stream.as_bytes();
    // Cut inside "data:", mid-character (é, →, 😀), between \r and \n, mid-JSON.
    let after = |needle: &str, extra: usize| stream.find(needle).unwrap() + extra;
    let mut cuts = vec![
        3,
        after("\r\n\r\n", 1),
        after("é", 1),
        after("→", 2),
        after("😀", 1),
        after("😀", 3),
        after("return", 3),
        after("[DONE]", 2),
    ];
    cuts.sort();
    let mut pieces: Vec<&[u8]> = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([bytes.len()]) {
        pieces.push(&bytes[start..cut]);
        start = cut;
    }
    let server = Server::start(vec![sse_pieces(&pieces, true)]).await;
    let client = OpenAiClient::new(options(&server)).unwrap();

    let (reply, deltas) = call(&client).await;
    let reply = reply.unwrap();
    let expected = "Héllo → wörld 😀\ndef f():\n    return 1\n";
    assert_eq!(reply.text, expected);
    assert_eq!(
        deltas,
        vec!["Hé", "llo → wörld 😀\n", "def f():\n    return 1\n"]
    );
    assert_eq!(reply.usage, Some(Usage::new(42, 17)));
    assert!(!reply.usage_estimated);

    // What the server was asked.
    let received = server.received();
    assert_eq!(received.len(), 1);
    let r = &received[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(
        r.headers.get("authorization").map(String::as_str),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        r.headers.get("content-type").map(String::as_str),
        Some("application/json")
    );
    let body = r.json();
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["model"], json!("qwen2.5-coder:7b"));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You write Python."},
            {"role": "user", "content": "Parse a CSV line."}
        ])
    );
    assert!((body["temperature"].as_f64().unwrap() - 0.2).abs() < 1e-6);
    assert!(body.get("max_tokens").is_none());
}

#[tokio::test]
async fn without_a_key_no_authorization_is_sent_and_a_finish_reason_ends_a_stream() {
    // Usage in the finish chunk (llama.cpp) and no [DONE] (some llama.cpp forks).
    let last = format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}], "usage": {"prompt_tokens": 5, "completion_tokens": 2}})
    );
    let server = Server::start(vec![sse(&(delta("ok") + &last))]).await;
    let mut o = options(&server);
    o.api_key = None;
    let client = OpenAiClient::new(o).unwrap();
    let (reply, _) = call(&client).await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, "ok");
    assert_eq!(reply.usage.map(|u| u.prompt_tokens), Some(5));
    assert!(!server.received()[0].headers.contains_key("authorization"));
}

#[tokio::test]
async fn the_prompt_tokens_a_server_took_from_its_cache_are_counted() {
    // The usage chunk as llama.cpp's llama-server (b1-0c1e570) sent it for a
    // second request sharing its first 38 tokens with the one before.
    let llama_server = format!(
        "data: {}\n\n",
        json!({"choices": [], "object": "chat.completion.chunk",
            "usage": {"completion_tokens": 8, "prompt_tokens": 45, "total_tokens": 53,
                "prompt_tokens_details": {"cached_tokens": 38}},
            "timings": {"cache_n": 38, "prompt_n": 7, "prompt_ms": 21.452, "predicted_n": 8}})
    );
    // A llama.cpp server that ignores `stream_options`: timings, no usage.
    let timings_only = format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "timings": {"cache_n": 30, "prompt_n": 12, "predicted_n": 5}})
    );
    let server = Server::start(vec![
        sse(&(delta("ok") + &finish("stop") + &llama_server)),
        sse(&(delta("ok") + &timings_only)),
        sse(&(delta("ok") + &finish("stop") + &usage_chunk(9, 2))),
    ])
    .await;
    let client = OpenAiClient::new(options(&server)).unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(call(&client).await.0.unwrap().usage);
    }
    let with = |p, c, cached| {
        Some(Usage {
            cached_tokens: cached,
            ..Usage::new(p, c)
        })
    };
    assert_eq!(
        got,
        vec![
            with(45, 8, Some(38)),
            with(42, 5, Some(30)),
            with(9, 2, None)
        ]
    );
}

#[tokio::test]
async fn a_429_with_retry_after_is_waited_out_then_retried() {
    let server = Server::start(vec![
        Answer(vec![Part::Bytes(plain(
            429,
            "retry-after: 1\r\ncontent-type: application/json\r\n",
            r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#,
        ))]),
        sse(&(delta("after the wait") + "data: [DONE]\n\n")),
    ])
    .await;
    let client = OpenAiClient::new(options(&server)).unwrap();
    let started = Instant::now();
    let (reply, _) = call(&client).await;
    assert_eq!(reply.unwrap().text, "after the wait");
    let received = server.received();
    assert_eq!(received.len(), 2, "one retry");
    let gap = received[1].at - received[0].at;
    assert!(
        gap >= Duration::from_secs(1),
        "retried after {gap:?}, asked 1 s"
    );
    // A sanity bound only: Retry-After plus at most 10% jitter, plus slack.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // The retry is the same request.
    assert_eq!(received[0].body, received[1].body);
}

#[tokio::test]
async fn a_500_is_retried_then_reported_with_url_status_and_body() {
    let boom = || {
        Answer(vec![Part::Bytes(plain(
            500,
            "",
            "upstream crashed: CUDA out of memory",
        ))])
    };
    let server = Server::start(vec![boom(), boom(), boom()]).await;
    let mut o = options(&server);
    o.retries = 2;
    let client = OpenAiClient::new(o).unwrap();
    let (reply, deltas) = call(&client).await;
    let err = reply.unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::RetriesExhausted {
                status: 500,
                attempts: 3,
                ..
            }
        ),
        "{err:?}"
    );
    assert_names(
        &err,
        &server,
        &["HTTP 500", "CUDA out of memory", "3 attempts"],
    );
    assert_eq!(server.received().len(), 3);
    assert!(deltas.is_empty());
}

#[tokio::test]
async fn a_401_is_not_retried_names_url_status_and_the_variable_never_the_key() {
    // The server echoes the key back, as some do.
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY}.","type":"invalid_request_error"}}}}"#
    );
    let server = Server::start(vec![Answer(vec![Part::Bytes(plain(
        401,
        "content-type: application/json\r\n",
        &body,
    ))])])
    .await;
    let client = OpenAiClient::new(options(&server)).unwrap();
    let (reply, _) = call(&client).await;
    let err = reply.unwrap_err();
    assert!(
        matches!(err, LlmError::Status { status: 401, .. }),
        "{err:?}"
    );
    assert_names(
        &err,
        &server,
        &["HTTP 401", "Incorrect API key provided", "TEST_LLM_KEY"],
    );
    assert_eq!(server.received().len(), 1, "a 401 is not retried");
}

#[tokio::test]
async fn a_404_says_to_check_the_base_url_and_model() {
    let server = Server::start(vec![Answer(vec![Part::Bytes(plain(
        404,
        "",
        r#"{"error":{"message":"model \"qwen2.5-coder:7b\" not found, try pulling it first","type":"api_error"}}"#,
    ))])])
    .await;
    let client = OpenAiClient::new(options(&server)).unwrap();
    let err = call(&client).await.0.unwrap_err();
    assert_names(
        &err,
        &server,
        &["HTTP 404", "try pulling it first", "model named"],
    );
}

#[tokio::test]
async fn a_stream_cut_off_before_done_is_an_error_after_the_deltas_it_had() {
    // The connection drops mid-body (the chunked encoding never ends), on
    // the first attempt and on the one more a cut-off reply gets.
    let cut = || sse_pieces(&[delta("def f(").as_bytes(), b"data: {\"choi"], false);
    let server = Server::start(vec![cut(), cut()]).await;
    let client = OpenAiClient::new(options(&server)).unwrap();
    let (reply, deltas) = call(&client).await;
    let err = reply.unwrap_err();
    assert!(matches!(err, LlmError::StreamCut { .. }), "{err:?}");
    assert_names(&err, &server, &["cut off"]);
    // Plain-text deltas cannot tell the restart between the two attempts.
    assert_eq!(deltas, vec!["def f(", "def f("]);
    assert_eq!(server.received().len(), 2);

    // The body ends cleanly, but without [DONE] or a finish_reason.
    let server = Server::start(vec![sse(&delta("def f(")), sse(&delta("def f("))]).await;
    let client = OpenAiClient::new(options(&server)).unwrap();
    let err = call(&client).await.0.unwrap_err();
    assert!(matches!(err, LlmError::StreamCut { .. }), "{err:?}");
    assert_names(&err, &server, &["without [DONE]", "6 characters"]);
}

#[tokio::test]
async fn a_body_that_is_not_an_event_stream_is_named_for_what_it_is() {
    let server = Server::start(vec![Answer(vec![Part::Bytes(plain(
        200,
        "content-type: text/html\r\n",
        "<html><body>Welcome to nginx!</body></html>",
    ))])])
    .await;
    let client = OpenAiClient::new(options(&server)).unwrap();
    let err = call(&client).await.0.unwrap_err();
    assert!(matches!(err, LlmError::Protocol { .. }), "{err:?}");
    assert_names(&err, &server, &["text/html", "Welcome to nginx", "/v1"]);

    // An event whose data is not JSON is a stream damaged on its way: asked
    // again like a cut one, and whole when the next answer is.
    let server = Server::start(vec![
        sse("data: hello there\n\n"),
        sse(&(delta("def f(): pass") + &finish("stop") + "data: [DONE]\n\n")),
    ])
    .await;
    let client = OpenAiClient::new(options(&server)).unwrap();
    let (reply, _) = call(&client).await;
    assert_eq!(reply.unwrap().text, "def f(): pass");
    assert_eq!(server.received().len(), 2);
    // Damaged every time: the error names it.
    let server = Server::start((0..4).map(|_| sse("data: hello there\n\n")).collect()).await;
    let client = OpenAiClient::new(options(&server)).unwrap();
    let err = call(&client).await.0.unwrap_err();
    assert!(matches!(err, LlmError::StreamCut { .. }), "{err:?}");
    assert_names(&err, &server, &["not JSON", "hello there"]);
}

#[tokio::test]
async fn an_error_object_in_the_stream_ends_it_with_its_message() {
    let server = Server::start(vec![sse(&(delta("par")
        + "data: {\"error\":{\"message\":\"model overloaded\",\"type\":\"server_error\"}}\n\n"))])
    .await;
    let client = OpenAiClient::new(options(&server)).unwrap();
    let (reply, deltas) = call(&client).await;
    let err = reply.unwrap_err();
    assert!(matches!(err, LlmError::InStream { .. }), "{err:?}");
    assert_names(&err, &server, &["model overloaded"]);
    assert_eq!(deltas, vec!["par"]);
}

#[tokio::test]
async fn an_unreachable_port_names_the_url_and_what_to_do() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut o = OpenAiOptions::new(format!("http://127.0.0.1:{port}/v1"), "m");
    o.api_key = ApiKey::new(KEY);
    o.connect_timeout = Duration::from_secs(2);
    let client = OpenAiClient::new(o).unwrap();
    let started = Instant::now();
    let err = call(&client).await.0.unwrap_err();
    assert!(matches!(err, LlmError::Unreachable { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(&format!("http://127.0.0.1:{port}/v1/chat/completions")),
        "{text}"
    );
    assert!(text.contains("refused"), "{text}");
    assert!(text.contains("Is the server running there?"), "{text}");
    assert!(!text.contains(KEY));
    assert!(started.elapsed() < Duration::from_secs(5), "not retried");
}

#[tokio::test]
async fn a_silent_server_times_out() {
    // No answer at all.
    let server = Server::start(vec![Answer(vec![Part::Pause(Duration::from_secs(20))])]).await;
    let mut o = options(&server);
    o.request_timeout = Duration::from_millis(300);
    let client = OpenAiClient::new(o).unwrap();
    let started = Instant::now();
    let err = call(&client).await.0.unwrap_err();
    assert!(matches!(err, LlmError::Timeout { .. }), "{err:?}");
    assert_names(&err, &server, &["request_timeout_secs"]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    // An answer that starts, then goes quiet.
    let mut answer = sse_pieces(&[delta("a").as_bytes()], false);
    answer.0.push(Part::Pause(Duration::from_secs(20)));
    let server = Server::start(vec![answer]).await;
    let mut o = options(&server);
    o.request_timeout = Duration::from_millis(300);
    let client = OpenAiClient::new(o).unwrap();
    let (reply, deltas) = call(&client).await;
    let err = reply.unwrap_err();
    assert!(matches!(err, LlmError::Stalled { .. }), "{err:?}");
    assert_eq!(deltas, vec!["a"]);
}

#[tokio::test]
async fn a_server_rejecting_stream_options_is_asked_again_without_them() {
    let reject = Answer(vec![Part::Bytes(plain(
        400,
        "",
        r#"{"error":{"message":"Unrecognized request argument supplied: stream_options"}}"#,
    ))]);
    let ok = || sse(&(delta("fine") + "data: [DONE]\n\n"));
    let server = Server::start(vec![reject, ok(), ok()]).await;
    let mut o = options(&server);
    o.retries = 0; // not a retry: it happens even with none allowed
    let client = OpenAiClient::new(o).unwrap();
    assert_eq!(call(&client).await.0.unwrap().text, "fine");
    assert_eq!(call(&client).await.0.unwrap().text, "fine");
    let bodies: Vec<Value> = server.received().iter().map(Received::json).collect();
    assert_eq!(bodies.len(), 3);
    assert!(bodies[0].get("stream_options").is_some());
    assert!(bodies[1].get("stream_options").is_none());
    assert!(bodies[2].get("stream_options").is_none(), "remembered");
}

#[tokio::test]
async fn a_server_ignoring_stream_true_answers_in_one_piece() {
    let completion = json!({
        "id": "x", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "whole reply"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2}
    })
    .to_string();
    let server = Server::start(vec![Answer(vec![Part::Bytes(plain(
        200,
        "content-type: application/json\r\n",
        &completion,
    ))])])
    .await;
    let client = OpenAiClient::new(options(&server)).unwrap();
    let (reply, deltas) = call(&client).await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, "whole reply");
    assert_eq!(deltas, vec!["whole reply"]);
    assert_eq!(reply.usage.map(|u| u.completion_tokens), Some(2));
}

#[tokio::test]
async fn a_retry_after_beyond_the_limit_ends_the_call_at_once() {
    let server = Server::start(vec![Answer(vec![Part::Bytes(plain(
        429,
        "retry-after: 3600\r\n",
        "slow down",
    ))])])
    .await;
    let client = OpenAiClient::new(options(&server)).unwrap();
    let started = Instant::now();
    let err = call(&client).await.0.unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::RetryTooLong {
                wait_secs: 3600,
                ..
            }
        ),
        "{err:?}"
    );
    assert_names(&err, &server, &["3600 s", "slow down"]);
    assert_eq!(server.received().len(), 1);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn dropping_the_call_closes_the_connection() {
    let mut answer = sse_pieces(&[delta("first").as_bytes()], false);
    answer
        .0
        .push(Part::AwaitClientClose(Duration::from_secs(5)));
    let server = Server::start(vec![answer]).await;
    let client = Arc::new(OpenAiClient::new(options(&server)).unwrap());
    let (tx, mut rx) = mpsc::channel(4);
    let task = {
        let client = client.clone();
        tokio::spawn(async move { client.stream_chat(request(), tx).await })
    };
    assert_eq!(rx.recv().await.as_deref(), Some("first"));
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let deadline = Instant::now() + Duration::from_secs(6);
    while *server.client_closed.lock().unwrap() == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        *server.client_closed.lock().unwrap(),
        1,
        "the server saw the client hang up"
    );
}

#[tokio::test]
async fn models_are_listed_in_the_servers_order() {
    let list = json!({"object": "list", "data": [{"id": "llama3.2:latest", "object": "model"}, {"id": "qwen2.5-coder:7b", "object": "model"}]}).to_string();
    let server = Server::start(vec![Answer(vec![Part::Bytes(plain(
        200,
        "content-type: application/json\r\n",
        &list,
    ))])])
    .await;
    let key = ApiKey::new(KEY);
    let names = list_models(&server.base_url, key.as_ref(), Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(names, vec!["llama3.2:latest", "qwen2.5-coder:7b"]);
    let r = &server.received()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("GET", "/v1/models"));
    assert!(r.headers.contains_key("authorization"));
}

#[tokio::test]
async fn a_reasoning_model_rejecting_temperature_and_max_tokens_is_asked_as_it_wants() {
    // OpenAI's o-series answers like this.
    let reject = |message: &str| {
        Answer(vec![Part::Bytes(plain(
            400,
            "content-type: application/json\r\n",
            &json!({"error": {"message": message, "type": "invalid_request_error"}}).to_string(),
        ))])
    };
    let server = Server::start(vec![
        reject("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."),
        reject("Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported."),
        sse(&(delta("thought through") + "data: [DONE]\n\n")),
        // The same parameter rejected again is an error, not a loop.
        reject("Unsupported parameter: 'max_completion_tokens' is too large."),
    ])
    .await;
    let mut o = options(&server);
    o.retries = 0;
    let client = OpenAiClient::new(o).unwrap();
    let mut req = request();
    req.max_tokens = Some(256);
    let (tx, _rx) = mpsc::channel(16);
    let reply = client.stream_chat(req.clone(), tx).await.unwrap();
    assert_eq!(reply.text, "thought through");
    let bodies: Vec<Value> = server.received().iter().map(Received::json).collect();
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[0]["max_tokens"], json!(256));
    assert_eq!(bodies[1]["max_completion_tokens"], json!(256));
    assert!(bodies[1].get("max_tokens").is_none());
    assert!(bodies[1].get("temperature").is_some());
    assert!(bodies[2].get("temperature").is_none());
    assert_eq!(bodies[2]["max_completion_tokens"], json!(256));

    let (tx, _rx) = mpsc::channel(16);
    let err = client.stream_chat(req, tx).await.unwrap_err();
    assert!(
        matches!(err, LlmError::Status { status: 400, .. }),
        "{err:?}"
    );
    assert_eq!(server.received().len(), 4);
}

#[tokio::test]
async fn the_body_is_read_by_what_it_holds_not_by_its_content_type() {
    // An event stream labelled as JSON, after a few blank lines.
    let stream = format!("\n\n{}data: [DONE]\n\n", delta("streamed anyway"));
    let server = Server::start(vec![
        Answer(vec![Part::Bytes(plain(
            200,
            "content-type: application/json\r\n",
            &stream,
        ))]),
        Answer(vec![Part::Bytes(plain(200, "", ""))]),
    ])
    .await;
    let client = OpenAiClient::new(options(&server)).unwrap();
    assert_eq!(call(&client).await.0.unwrap().text, "streamed anyway");

    // An empty stream that is no overflow (the same request unstreamed is
    // answered) is asked again, and the tape is told why.
    let server = Server::start(vec![
        Answer(vec![Part::Bytes(plain(200, "", ""))]),
        Answer(vec![Part::Bytes(plain(
            200,
            "content-type: application/json\r\n",
            r#"{"choices": [{"index": 0, "message": {"content": "x"}, "finish_reason": "length"}]}"#,
        ))]),
        sse(&(delta("def f(): pass") + "data: [DONE]\n\n")),
    ])
    .await;
    let client = OpenAiClient::new(options(&server)).unwrap();
    let (reply, deltas) = call_deltas(&client).await;
    assert_eq!(reply.unwrap().text, "def f(): pass");
    assert!(
        deltas
            .iter()
            .any(|d| matches!(d, Delta::Restart(why) if why.contains("empty stream"))),
        "{deltas:?}"
    );
    let received = server.received();
    assert_eq!(received.len(), 3);
    assert_eq!(
        received[1].json()["stream"],
        json!(false),
        "{:?}",
        received[1]
    );
}

#[tokio::test]
async fn an_empty_stream_from_llama_cpp_python_is_its_overflow_and_teaches_the_window() {
    // llama-cpp-python raises "Requested tokens (N) exceed context window of
    // W" inside its stream: the answer is a 200 with nothing in it. The
    // same request unstreamed gets the plain error, which names the window.
    let overflow = r#"{"error":{"message":"This model's maximum context length is 2048 tokens. However, you requested 3051 tokens (3031 in the messages, 20 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let server = Server::start(vec![
        Answer(vec![Part::Bytes(plain(
            200,
            "content-type: text/event-stream; charset=utf-8\r\n",
            "",
        ))]),
        Answer(vec![Part::Bytes(plain(
            400,
            "content-type: application/json\r\n",
            overflow,
        ))]),
    ])
    .await;
    let mut o = options(&server);
    o.max_tokens = Some(512);
    let client = OpenAiClient::new(o).unwrap();
    let err = call(&client).await.0.unwrap_err();
    match &err {
        LlmError::ContextOverflow { window, .. } => assert_eq!(*window, Some(2048)),
        other => panic!("{other:?}"),
    }
    assert_eq!(server.received().len(), 2);
    // The window is known now: a prompt that leaves no room for a reply is
    // refused before it is sent, and the reply limit sent fits what is left.
    let long = ChatRequest {
        messages: vec![ChatMessage::user("word ".repeat(2000))],
        ..request()
    };
    let err = client.stream(long, mpsc::channel(8).0).await.unwrap_err();
    assert!(matches!(err, LlmError::ContextOverflow { .. }), "{err:?}");
    assert!(err.to_string().contains("2048"), "{err}");
    assert_eq!(server.received().len(), 2, "nothing more was sent");
}

#[tokio::test]
async fn an_exhausted_quota_is_not_retried() {
    let server = Server::start(vec![Answer(vec![Part::Bytes(plain(
        429,
        "retry-after: 1\r\n",
        r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}"#,
    ))])])
    .await;
    let client = OpenAiClient::new(options(&server)).unwrap();
    let err = call(&client).await.0.unwrap_err();
    assert!(
        matches!(err, LlmError::Status { status: 429, .. }),
        "{err:?}"
    );
    assert_names(&err, &server, &["exceeded your current quota", "billing"]);
    assert_eq!(server.received().len(), 1);
}
