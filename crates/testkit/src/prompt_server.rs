//! A loopback model server for tests that run the real binary: it speaks
//! the OpenAI chat-completions protocol (`GET /v1/models`, a streamed
//! `POST /v1/chat/completions` with a usage chunk and `[DONE]`, 404 for
//! every other probe) and answers each chat request by what its prompt asks
//! for, through the test's own `reply_for`. Each SSE event is written in two
//! halves, so the client meets events split across reads.
//!
//! Every request is kept, so a test can count what the client asked; a
//! request can be held unanswered (the client waits on it) to kill the
//! client mid-call. For faults of the wire itself (cuts, resets, error
//! bodies of each server) see `fault_server.rs`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub request_line: String,
    pub headers: Vec<String>,
    pub body: String,
}

type ReplyFor = fn(&str) -> &'static str;
type HoldIf = fn(&str) -> bool;

struct Shared {
    reply_for: ReplyFor,
    seen: Mutex<Vec<Exchange>>,
    hold_if: Mutex<Option<(HoldIf, mpsc::Sender<()>)>>,
    holding: AtomicBool,
}

#[derive(Clone)]
pub struct PromptServer {
    /// `http://127.0.0.1:PORT/v1`
    pub base_url: String,
    shared: Arc<Shared>,
}

impl PromptServer {
    /// A server answering each chat request with `reply_for(prompt)`, the
    /// prompt being the request's messages' contents joined.
    pub fn start(reply_for: ReplyFor) -> PromptServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let shared = Arc::new(Shared {
            reply_for,
            seen: Mutex::new(Vec::new()),
            hold_if: Mutex::new(None),
            holding: AtomicBool::new(false),
        });
        let s = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let s = s.clone();
                std::thread::spawn(move || serve(stream, &s));
            }
        });
        PromptServer { base_url, shared }
    }

    /// From now on, chat requests whose prompt `hold_if` accepts are never
    /// answered; the receiver hears of each as it arrives.
    pub fn hold(&self, hold_if: HoldIf) -> mpsc::Receiver<()> {
        let (tx, rx) = mpsc::channel();
        *self.shared.hold_if.lock().unwrap() = Some((hold_if, tx));
        self.shared.holding.store(true, Ordering::SeqCst);
        rx
    }

    /// Answer every request again.
    pub fn release(&self) {
        self.shared.holding.store(false, Ordering::SeqCst);
    }

    /// Every request so far, in order of arrival.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// The bodies of the chat requests so far.
    pub fn posts(&self) -> Vec<String> {
        self.exchanges()
            .into_iter()
            .filter(|e| e.request_line.starts_with("POST /v1/chat/completions"))
            .map(|e| e.body)
            .collect()
    }
}

fn read_request(stream: &TcpStream) -> Option<Exchange> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let request_line = line.trim().to_string();
    let mut headers = Vec::new();
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let h = line.trim().to_string();
        if h.is_empty() {
            break;
        }
        if let Some(v) = h.to_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        headers.push(h);
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Exchange {
        request_line,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn serve(mut stream: TcpStream, shared: &Shared) {
    let Some(exchange) = read_request(&stream) else {
        return;
    };
    shared.seen.lock().unwrap().push(exchange.clone());
    let Exchange {
        request_line, body, ..
    } = exchange;
    if request_line.starts_with("GET /v1/models") {
        let json = r#"{"object":"list","data":[{"id":"loopback-coder","object":"model"}]}"#;
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{json}",
            json.len()
        );
        return;
    }
    if !request_line.starts_with("POST /v1/chat/completions") {
        // What a server that is not llama.cpp or Ollama answers to their probes.
        let _ = write!(
            stream,
            "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        );
        return;
    }
    let request: serde_json::Value = serde_json::from_str(&body).unwrap();
    let prompt: String = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or(""))
        .collect();
    if shared.holding.load(Ordering::SeqCst) {
        let hold = shared.hold_if.lock().unwrap().clone();
        if let Some((hold_if, told)) = hold
            && hold_if(&prompt)
        {
            // Never answered: the client is killed while it waits.
            let _ = told.send(());
            std::thread::park();
            return;
        }
    }
    let text = (shared.reply_for)(&prompt);
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
    );
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(7) {
        let s: String = piece.iter().collect();
        let event = serde_json::json!({
            "id": "c1", "object": "chat.completion.chunk", "model": "loopback-coder",
            "choices": [{"index": 0, "delta": {"content": s}, "finish_reason": null}]
        });
        let line = format!("data: {event}\n\n");
        let (a, b) = line.split_at(line.len() / 2);
        let _ = stream.write_all(a.as_bytes());
        let _ = stream.flush();
        let _ = stream.write_all(b.as_bytes());
    }
    let usage = serde_json::json!({
        "id": "c1", "object": "chat.completion.chunk", "model": "loopback-coder",
        "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    });
    let _ = write!(stream, "data: {usage}\n\ndata: [DONE]\n\n");
}
