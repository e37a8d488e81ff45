//! A loopback model server that answers the way real ones do, and breaks the
//! way real ones break, one fault at a time.
//!
//! It serves a good OpenAI-style conversation on `POST /v1/chat/completions`
//! (a streamed reply, a finish_reason, a usage chunk, `[DONE]`) unless a test
//! queued other answers first: each queued [`Answer`] is used by one request,
//! in order. Other paths (`/props`, `/v1/models`, `/api/version`,
//! `/api/show`) answer what a test set for them with [`FaultServer::route`], or
//! 404. Every request is logged, so a test can count what the client sent.
//! The server can be stopped (connections refused) and started again on the
//! same port.
//!
//! What it imitates: llama.cpp's server (`/props`, usage in the finish chunk,
//! `reasoning_content`, its overflow error and empty 200 stream), vLLM
//! (`max_model_len` in `/v1/models`, its `{"object": "error"}` bodies),
//! Ollama (`/api/version`, `/api/show`, `reasoning`, its error shape) and
//! OpenAI (Retry-After, `context_length_exceeded`), from their documented and
//! observed wire formats.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub body: String,
}

impl Seen {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// One answer to one request.
#[derive(Debug, Clone)]
pub enum Answer {
    /// An event stream (chunked, one chunk an event), ended cleanly.
    Sse(Vec<String>),
    /// An event stream whose connection breaks after these events: closed,
    /// or reset (`reset: true`, a TCP RST) without the chunked end.
    SseCut { events: Vec<String>, reset: bool },
    /// A whole response: status, extra header lines (each ending in \r\n), body.
    Whole(u16, String, String),
    /// The connection is closed after the request, before any answer.
    CloseBeforeHead,
    /// An event stream that stops after these events and holds the
    /// connection open this long (a server that sends its finishing chunk
    /// and never `[DONE]`), then closes it.
    SseHold { events: Vec<String>, hold: Duration },
    /// An event stream of SSE comments alone (`: keep-alive`), one every
    /// `every`, for `total`, then closed: a server that holds a call
    /// without sending any data.
    Comments { every: Duration, total: Duration },
}

struct Shared {
    /// Chat requests being answered now, and the most there ever were.
    in_flight: usize,
    max_in_flight: usize,
    seen: Vec<Seen>,
    queue: Vec<Answer>,
    routes: HashMap<String, Answer>,
    good_text: String,
}

pub struct FaultServer {
    pub addr: SocketAddr,
    /// `http://127.0.0.1:PORT/v1`
    pub base_url: String,
    shared: Arc<Mutex<Shared>>,
    accept: Mutex<Option<JoinHandle<()>>>,
}

impl FaultServer {
    /// A server whose good conversation answers `good_text`.
    pub async fn start(good_text: &str) -> FaultServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Mutex::new(Shared {
            in_flight: 0,
            max_in_flight: 0,
            seen: Vec::new(),
            queue: Vec::new(),
            routes: HashMap::new(),
            good_text: good_text.to_string(),
        }));
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        FaultServer {
            addr,
            base_url: format!("http://{addr}/v1"),
            shared,
            accept: Mutex::new(Some(accept)),
        }
    }

    /// Queue answers for the next chat requests, before the good conversation.
    pub fn queue(&self, answers: impl IntoIterator<Item = Answer>) {
        self.shared.lock().unwrap().queue.extend(answers);
    }

    /// Answer `METHOD /path` with `answer`, every time.
    pub fn route(&self, method_and_path: &str, answer: Answer) {
        self.shared
            .lock()
            .unwrap()
            .routes
            .insert(method_and_path.to_string(), answer);
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.lock().unwrap().seen.clone()
    }

    /// How many chat requests arrived.
    pub fn chat_requests(&self) -> usize {
        self.seen()
            .iter()
            .filter(|s| s.path == "/v1/chat/completions")
            .count()
    }

    /// The most chat requests that were being answered at once.
    pub fn max_in_flight(&self) -> usize {
        self.shared.lock().unwrap().max_in_flight
    }

    /// Stop listening: new connections are refused.
    pub fn stop(&self) {
        if let Some(task) = self.accept.lock().unwrap().take() {
            task.abort();
        }
    }

    /// Listen again on the same port.
    pub async fn restart(&self) {
        let listener = TcpListener::bind(self.addr).await.unwrap();
        let task = tokio::spawn(accept_loop(listener, self.shared.clone()));
        *self.accept.lock().unwrap() = Some(task);
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Mutex<Shared>>) {
    while let Ok((socket, _)) = listener.accept().await {
        let _ = socket.set_nodelay(true);
        tokio::spawn(serve(socket, shared.clone()));
    }
}

async fn serve(mut socket: TcpStream, shared: Arc<Mutex<Shared>>) {
    let Some(seen) = read_request(&mut socket).await else {
        return;
    };
    let key = format!("{} {}", seen.method, seen.path);
    let answer =
        {
            let mut shared = shared.lock().unwrap();
            shared.seen.push(seen.clone());
            if key == "POST /v1/chat/completions" {
                shared.in_flight += 1;
                shared.max_in_flight = shared.max_in_flight.max(shared.in_flight);
                if shared.queue.is_empty() {
                    Answer::Sse(good_conversation(&shared.good_text))
                } else {
                    shared.queue.remove(0)
                }
            } else {
                shared.routes.get(&key).cloned().unwrap_or_else(|| {
                    Answer::Whole(404, String::new(), "404 page not found".into())
                })
            }
        };
    let mut left = false;
    match answer {
        Answer::Whole(status, headers, body) => {
            let head = format!(
                "HTTP/1.1 {status} Whatever\r\ncontent-length: {}\r\nconnection: close\r\n{headers}\r\n",
                body.len()
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
        Answer::CloseBeforeHead => {
            let _ = socket.shutdown().await;
        }
        Answer::Sse(events) => {
            // The reply is over once its last event goes out (the client may
            // ask again before the chunked end is written).
            let written = write_events_then(&mut socket, &events, || leave(&shared, &key)).await;
            left = true;
            if written {
                let _ = socket.write_all(b"0\r\n\r\n").await;
                let _ = socket.shutdown().await;
            }
        }
        Answer::SseCut { events, reset } => {
            if write_events(&mut socket, &events).await && reset {
                // Linger zero: closing sends a RST instead of a FIN.
                #[allow(deprecated)]
                let _ = socket.set_linger(Some(Duration::ZERO));
            }
            drop(socket);
        }
        Answer::Comments { every, total } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
            if socket.write_all(head.as_bytes()).await.is_ok() {
                let until = tokio::time::Instant::now() + total;
                let comment = ": keep-alive\n\n";
                while tokio::time::Instant::now() < until {
                    let framed = format!("{:x}\r\n{comment}\r\n", comment.len());
                    if socket.write_all(framed.as_bytes()).await.is_err() {
                        break;
                    }
                    tokio::time::sleep(every).await;
                }
            }
        }
        Answer::SseHold { events, hold } => {
            if write_events(&mut socket, &events).await {
                let mut byte = [0u8; 1];
                // Until the client goes away or the time is up.
                let _ = tokio::time::timeout(hold, socket.read(&mut byte)).await;
            }
        }
    }
    if !left {
        leave(&shared, &key);
    }
}

/// A chat request is no longer being answered (once per request).
fn leave(shared: &Mutex<Shared>, key: &str) {
    if key == "POST /v1/chat/completions" {
        let mut shared = shared.lock().unwrap();
        shared.in_flight -= 1;
    }
}

/// The head and each event as one HTTP chunk, a moment apart (so the client
/// reads them as separate pieces); false if the client went away.
async fn write_events(socket: &mut TcpStream, events: &[String]) -> bool {
    write_events_then(socket, events, || {}).await
}

/// `write_events`, calling `before_last` just before the last event goes
/// out (so the client cannot have read the end of the reply before it).
async fn write_events_then(
    socket: &mut TcpStream,
    events: &[String],
    before_last: impl FnOnce(),
) -> bool {
    let mut before_last = Some(before_last);
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    if socket.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    for (k, event) in events.iter().enumerate() {
        if k + 1 == events.len()
            && let Some(call) = before_last.take()
        {
            call();
        }
        let framed = format!("{:x}\r\n{event}\r\n", event.len());
        if socket.write_all(framed.as_bytes()).await.is_err() {
            return false;
        }
        let _ = socket.flush().await;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    if let Some(call) = before_last.take() {
        call();
    }
    true
}

async fn read_request(socket: &mut TcpStream) -> Option<Seen> {
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
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut first = head.lines().next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let length: usize = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..head_end + length]).into_owned();
    Some(Seen { method, path, body })
}

/// One SSE event holding `chunk` as its data.
pub fn event(chunk: Value) -> String {
    format!("data: {chunk}\n\n")
}

/// A chunk with a piece of content.
pub fn content(text: &str) -> String {
    event(
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}),
    )
}

/// A chunk with a piece of reasoning in the field `field`.
pub fn reasoning(field: &str, text: &str) -> String {
    event(
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {field: text, "content": null}, "finish_reason": null}]}),
    )
}

pub fn finish(reason: &str) -> String {
    event(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}))
}

pub fn usage(prompt: u64, completion: u64) -> String {
    event(
        json!({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}),
    )
}

pub fn done() -> String {
    "data: [DONE]\n\n".to_string()
}

/// The good conversation: the role, `text` in pieces of up to 8 characters,
/// a stop, the usage, [DONE].
pub fn good_conversation(text: &str) -> Vec<String> {
    let mut events = vec![event(
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
    )];
    let chars: Vec<char> = text.chars().collect();
    events.extend(
        chars
            .chunks(8)
            .map(|c| content(&c.iter().collect::<String>())),
    );
    events.push(finish("stop"));
    events.push(usage(21, (chars.len() as u64).div_ceil(4)));
    events.push(done());
    events
}

/// A whole JSON answer.
pub fn json_answer(status: u16, body: Value) -> Answer {
    Answer::Whole(
        status,
        "content-type: application/json\r\n".into(),
        body.to_string(),
    )
}
