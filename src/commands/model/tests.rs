//! The rules of choosing a model, against servers on loopback.
use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

static DEMOS: [Demo; 2] = [
    Demo {
        name: "csv",
        title: "parse a CSV line",
        task: "Parse a CSV line.",
        replies: "{\"tag\":\"plan\",\"text\":\"a plan\"}\n",
        tape: "",
        inputs: &[],
        review: false,
    },
    Demo {
        name: "dates",
        title: "parse dates",
        task: "Parse dates.",
        replies: "{\"tag\":\"plan\",\"text\":\"another plan\"}\n",
        tape: "",
        inputs: &[],
        review: false,
    },
];

/// A server that answers `GET /v1/models` with `body` (HTTP 200, JSON)
/// and every other path with 404, and logs the paths asked.
async fn model_list_server(body: &'static str) -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
    routed_server(&[("/v1/models", body)]).await
}

/// A server that answers each of `routes`' paths with its JSON body, any
/// other with 404, and logs the paths asked.
async fn routed_server(
    routes: &[(&'static str, &'static str)],
) -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let paths = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = paths.clone();
    let routes = routes.to_vec();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = vec![0u8; 8192];
            let n = socket.read(&mut buf).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).into_owned();
            let path = head.split(' ').nth(1).unwrap_or("").to_string();
            seen.lock().unwrap().push(path.clone());
            let response = match routes.iter().find(|(p, _)| *p == path) {
                Some((_, body)) => format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                ),
                None => "HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\nconnection: close\r\n\r\nnot found".to_string(),
            };
            let _ = socket.write_all(response.as_bytes()).await;
        }
    });
    (url, paths)
}

/// `select_with` with the default config, the test's demos and no Ollama
/// to find.
async fn select(args: &ModelArgs) -> anyhow::Result<Selected> {
    select_with(&Config::default(), args, &DEMOS, &[refused_url()]).await
}

fn refused_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://127.0.0.1:{}/v1", l.local_addr().unwrap().port())
}

#[tokio::test]
async fn scripted_wins_then_demo() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.jsonl");
    std::fs::write(&file, "{\"tag\":\"plan\",\"text\":\"x\"}\n").unwrap();
    let args = ModelArgs {
        scripted: Some(file),
        demo: Some("csv".into()),
        base_url: Some(refused_url()),
        ..Default::default()
    };
    let s = select(&args).await.unwrap();
    assert_eq!(s.model.provider(), "scripted");
    assert!(
        s.description.contains("1 recorded replies"),
        "{}",
        s.description
    );

    let args = ModelArgs {
        demo: Some("dates".into()),
        base_url: Some(refused_url()),
        ..Default::default()
    };
    let s = select(&args).await.unwrap();
    assert_eq!(s.model.provider(), "demo");
    assert_eq!(s.demo.map(|d| d.name), Some("dates"));
    assert!(
        s.description
            .starts_with("demo model: authored replies, offline"),
        "{}",
        s.description
    );
}

#[tokio::test]
async fn an_unknown_demo_lists_the_ones_there_are() {
    let args = ModelArgs {
        demo: Some("nope".into()),
        ..Default::default()
    };
    let err = select(&args).await.unwrap_err().to_string();
    assert!(
        err.contains("\"nope\"") && err.contains("csv, dates"),
        "{err}"
    );
    let err = select_with(&Config::default(), &args, &[], &[refused_url()])
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no bundled demos"), "{err}");
}

#[tokio::test]
async fn an_unreachable_configured_server_is_an_error_not_a_fallback() {
    let url = refused_url();
    let mut config = Config::default();
    config.model.base_url = Some(url.clone());
    config.model.model = "m".into();
    let err = select_with(&config, &ModelArgs::default(), &DEMOS, &[refused_url()])
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains(&url), "{err}");
    assert!(
        err.contains("Start the server") && err.contains("--demo"),
        "{err}"
    );

    let args = ModelArgs {
        base_url: Some(url.clone()),
        ..Default::default()
    };
    let err = select(&args).await.unwrap_err().to_string();
    assert!(err.contains(&url), "{err}");
}

#[tokio::test]
async fn auto_uses_the_one_local_server_that_answers_with_its_first_model() {
    let (ollama, paths) = routed_server(&[
        (
            "/v1/models",
            r#"{"object":"list","data":[{"id":"qwen2.5-coder:7b"},{"id":"llama3.2:latest"}]}"#,
        ),
        ("/api/version", r#"{"version":"0.6.2"}"#),
    ])
    .await;
    let s = select_with(
        &Config::default(),
        &ModelArgs::default(),
        &DEMOS,
        &[refused_url(), ollama.clone(), refused_url()],
    )
    .await
    .unwrap();
    assert_eq!(s.model.provider(), "openai-compatible");
    assert_eq!(s.model.model_name(), "qwen2.5-coder:7b");
    assert_eq!(s.model.endpoint(), ollama);
    assert!(
        s.description
            .contains("(Ollama, found running on this machine)"),
        "{}",
        s.description
    );
    // What each place answered is kept for `codeloop models`.
    assert_eq!(s.probed.len(), 3);
    assert!(s.probed[1].serving().is_some());
    assert!(s.demo.is_none());
    assert_eq!(paths.lock().unwrap()[0], "/v1/models");

    let args = ModelArgs {
        model: Some("llama3.2:latest".into()),
        ..Default::default()
    };
    let s = select_with(
        &Config::default(),
        &args,
        &DEMOS,
        std::slice::from_ref(&ollama),
    )
    .await
    .unwrap();
    assert_eq!(s.model.model_name(), "llama3.2:latest");
}

#[tokio::test]
async fn auto_falls_back_to_the_demo_and_says_so() {
    let s = select_with(
        &Config::default(),
        &ModelArgs::default(),
        &DEMOS,
        &[refused_url()],
    )
    .await
    .unwrap();
    assert_eq!(s.model.provider(), "demo");
    assert_eq!(s.demo.map(|d| d.name), Some("csv"));
    assert!(
        s.description
            .starts_with("demo model: authored replies, offline")
    );
    assert!(
        s.description.contains("none answers on this machine"),
        "{}",
        s.description
    );
    assert!(
        s.fallback_reason
            .as_deref()
            .is_some_and(|why| why.contains("none answers on this machine")
                && why.contains("on their default ports")),
        "{:?}",
        s.fallback_reason
    );

    let (empty_ollama, _) = routed_server(&[
        ("/v1/models", r#"{"object":"list","data":[]}"#),
        ("/api/version", r#"{"version":"0.6.2"}"#),
    ])
    .await;
    let s = select_with(
        &Config::default(),
        &ModelArgs::default(),
        &DEMOS,
        std::slice::from_ref(&empty_ollama),
    )
    .await
    .unwrap();
    assert_eq!(s.model.provider(), "demo");
    assert!(s.description.contains("ollama pull"), "{}", s.description);

    // No demo to fall back on: a clear error saying what to do.
    let err = select_with(
        &Config::default(),
        &ModelArgs::default(),
        &[],
        &[refused_url()],
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("no bundled demo model") && err.contains("--base-url"),
        "{err}"
    );
}

#[tokio::test]
async fn a_configured_server_without_a_model_name_uses_the_first_it_lists() {
    let (url, _) = model_list_server(r#"{"data":[{"id":"Qwen/Qwen2.5-Coder-7B-Instruct"}]}"#).await;
    let mut config = Config::default();
    config.model.base_url = Some(format!("{url}/"));
    config.model.api_key_env = "CODELOOP_TEST_UNSET_KEY_VARIABLE".into();
    let s = select_with(&config, &ModelArgs::default(), &DEMOS, &[refused_url()])
        .await
        .unwrap();
    assert_eq!(s.model.model_name(), "Qwen/Qwen2.5-Coder-7B-Instruct");
    assert_eq!(s.model.endpoint(), url);
    assert_eq!(
        s.description,
        format!("Qwen/Qwen2.5-Coder-7B-Instruct at {url}")
    );
}

#[tokio::test]
async fn a_named_key_variable_that_is_unset_is_an_error() {
    let args = ModelArgs {
        base_url: Some(refused_url()),
        api_key_env: Some("CODELOOP_TEST_UNSET_KEY_VARIABLE".into()),
        ..Default::default()
    };
    let err = select(&args).await.unwrap_err().to_string();
    assert!(
        err.contains("CODELOOP_TEST_UNSET_KEY_VARIABLE is not set"),
        "{err}"
    );
}

#[tokio::test]
async fn a_base_url_missing_v1_is_pointed_out() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let root = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = vec![0u8; 8192];
            let _ = socket.read(&mut buf).await;
            let _ = socket
                .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 18\r\nconnection: close\r\n\r\n404 page not found")
                .await;
        }
    });
    let args = ModelArgs {
        base_url: Some(root.clone()),
        model: Some("m".into()),
        ..Default::default()
    };
    let err = select(&args).await.unwrap_err().to_string();
    assert!(err.contains(&format!("try --base-url {root}/v1")), "{err}");
}

#[tokio::test]
async fn a_profile_is_chosen_by_flag_or_by_model_name_and_flags_still_win() {
    let (url, _) =
        model_list_server(r#"{"data":[{"id":"qwen2.5-coder:7b"},{"id":"llama3.2"}]}"#).await;
    let mut config = Config::from_toml(&format!(
        "[models.local]\nbase_url = \"{url}\"\nmodel = \"qwen2.5-coder:7b\"\ncontext = 16384\n"
    ))
    .unwrap();
    config.model.api_key_env = "CODELOOP_TEST_UNSET_KEY_VARIABLE".into();
    for args in [
        ModelArgs {
            profile: Some("local".into()),
            ..Default::default()
        },
        ModelArgs {
            model: Some("local".into()),
            ..Default::default()
        },
    ] {
        let s = select_with(&config, &args, &DEMOS, &[refused_url()])
            .await
            .unwrap();
        assert_eq!(s.model.model_name(), "qwen2.5-coder:7b", "{args:?}");
        assert_eq!(s.model.endpoint(), url);
        assert!(
            s.description.contains("profile \"local\""),
            "{}",
            s.description
        );
        // The configured window is known without asking the server.
        assert_eq!(
            s.model.context_window().await.map(|w| w.tokens),
            Some(16384)
        );
    }
    let args = ModelArgs {
        profile: Some("local".into()),
        model: Some("llama3.2".into()),
        ..Default::default()
    };
    let s = select_with(&config, &args, &DEMOS, &[refused_url()])
        .await
        .unwrap();
    assert_eq!(s.model.model_name(), "llama3.2");
    // A name the server does not list is refused, with the names it does.
    let args = ModelArgs {
        profile: Some("local".into()),
        model: Some("gpt-99".into()),
        ..Default::default()
    };
    let err = select_with(&config, &args, &DEMOS, &[refused_url()])
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"gpt-99\"") && err.contains("qwen2.5-coder:7b, llama3.2"),
        "{err}"
    );
    let args = ModelArgs {
        profile: Some("hosted".into()),
        ..Default::default()
    };
    let err = select_with(&config, &args, &DEMOS, &[refused_url()])
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("\"hosted\"") && err.contains("local"), "{err}");
}

#[tokio::test]
async fn an_unknown_provider_is_named() {
    let mut config = Config::default();
    config.model.provider = "anthropic".into();
    let err = select_with(&config, &ModelArgs::default(), &DEMOS, &[refused_url()])
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"anthropic\"") && err.contains("\"auto\""),
        "{err}"
    );
}

#[tokio::test]
async fn several_local_servers_are_named_with_how_to_choose_never_chosen() {
    let (llama, _) = routed_server(&[
        ("/v1/models", r#"{"data":[{"id":"smollm2"}]}"#),
        (
            "/props",
            r#"{"default_generation_settings":{"n_ctx":2048},"total_slots":1}"#,
        ),
    ])
    .await;
    let (python, _) = model_list_server(r#"{"data":[{"id":"local"}]}"#).await;
    let err = select_with(
        &Config::default(),
        &ModelArgs::default(),
        &DEMOS,
        &[llama.clone(), refused_url(), python.clone()],
    )
    .await
    .unwrap_err();
    let several = err.downcast_ref::<SeveralServers>().unwrap();
    assert_eq!(several.servers().len(), 2);
    let said = err.to_string();
    assert!(
        said.starts_with("2 model servers answer on this machine, and none is configured:"),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "{llama}  llama.cpp's llama-server, serves smollm2"
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "{python}  an OpenAI-compatible server, serves local"
        )),
        "{said}"
    );
    assert!(said.contains(&format!("--base-url {llama}")), "{said}");

    // A model named that one of them serves chooses it.
    let args = ModelArgs {
        model: Some("local".into()),
        ..Default::default()
    };
    let s = select_with(
        &Config::default(),
        &args,
        &DEMOS,
        &[llama.clone(), python.clone()],
    )
    .await
    .unwrap();
    assert_eq!(s.model.endpoint(), python);
    assert_eq!(s.model.model_name(), "local");
}

#[tokio::test]
async fn a_configured_server_or_profile_wins_and_nothing_is_probed() {
    let (local, asked) = model_list_server(r#"{"data":[{"id":"smollm2"}]}"#).await;
    let (configured, _) = model_list_server(r#"{"data":[{"id":"qwen"}]}"#).await;
    // A base URL in the config.
    let mut config = Config::default();
    config.model.base_url = Some(configured.clone());
    config.model.api_key_env = "CODELOOP_TEST_UNSET_KEY_VARIABLE".into();
    let s = select_with(
        &config,
        &ModelArgs::default(),
        &DEMOS,
        std::slice::from_ref(&local),
    )
    .await
    .unwrap();
    assert_eq!(s.model.endpoint(), configured);
    assert!(s.probed.is_empty());
    // A profile.
    let mut config = Config::from_toml(&format!(
        "[models.mine]\nbase_url = \"{configured}\"\nmodel = \"qwen\"\n"
    ))
    .unwrap();
    config.model.api_key_env = "CODELOOP_TEST_UNSET_KEY_VARIABLE".into();
    let args = ModelArgs {
        profile: Some("mine".into()),
        ..Default::default()
    };
    let s = select_with(&config, &args, &DEMOS, std::slice::from_ref(&local))
        .await
        .unwrap();
    assert_eq!(s.model.endpoint(), configured);
    // --base-url.
    let args = ModelArgs {
        base_url: Some(configured.clone()),
        ..Default::default()
    };
    select_with(
        &Config::default(),
        &args,
        &DEMOS,
        std::slice::from_ref(&local),
    )
    .await
    .unwrap();
    assert!(
        asked.lock().unwrap().is_empty(),
        "the local server was asked: {:?}",
        asked.lock().unwrap()
    );
}

/// A model server in Python that lists one model ("m41") at /v1/models,
/// answers 404 elsewhere, and prints each path it is asked with whether
/// the request carried an Authorization header; run as `user` (the
/// ordinary user) or as this process's user. Killed, with its group, when
/// dropped.
struct RecordingServer {
    child: std::process::Child,
    url: String,
}

const RECORDING_SERVER: &str = r#"import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        print(self.path, "auth" if self.headers.get("Authorization") else "no-auth", flush=True)
        if self.path == "/v1/models":
            body = json.dumps({"object": "list", "data": [{"id": "m41"}]}).encode()
            self.send_response(200)
        else:
            body = b"not found"
            self.send_response(404)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_POST = do_GET
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

impl RecordingServer {
    fn start(as_user: Option<&str>) -> RecordingServer {
        use std::io::BufRead;
        use std::os::unix::process::CommandExt;
        let mut cmd = match as_user {
            Some(user) => {
                let mut c = std::process::Command::new("runuser");
                c.args(["-u", user, "--", "/usr/bin/python3"]);
                c
            }
            None => std::process::Command::new("/usr/bin/python3"),
        };
        cmd.args(["-c", RECORDING_SERVER])
            .current_dir("/")
            .stdout(std::process::Stdio::piped())
            .process_group(0);
        let mut child = cmd.spawn().unwrap();
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut first)
            .unwrap();
        let port: u16 = first.trim().parse().unwrap();
        RecordingServer {
            child,
            url: format!("http://localhost:{port}/v1"),
        }
    }

    /// What it was asked, one "PATH auth|no-auth" a request, once stopped.
    fn asked(mut self) -> Vec<String> {
        use std::io::Read;
        self.stop();
        let mut out = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        out.lines().map(str::to_string).collect()
    }

    fn stop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for RecordingServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A config whose key variable is set (PATH serves: any set variable is
/// a key to codeloop).
fn config_with_a_key() -> Config {
    let mut config = Config::default();
    config.model.api_key_env = "PATH".into();
    config
}

/// Issue 41: a server found running here, of this user's, is used, but
/// sent no key (the description says so); named with --base-url, the
/// same server gets it.
#[tokio::test]
async fn a_found_server_of_ones_own_is_used_without_the_key() {
    let server = RecordingServer::start(None);
    let url = server.url.clone();
    let s = select_with(
        &config_with_a_key(),
        &ModelArgs::default(),
        &DEMOS,
        std::slice::from_ref(&url),
    )
    .await
    .unwrap();
    assert_eq!(s.model.model_name(), "m41");
    assert!(
        s.description
            .ends_with("found running on this machine; $PATH is not sent to it)"),
        "{}",
        s.description
    );
    let asked = server.asked();
    assert!(asked.iter().any(|l| l == "/v1/models no-auth"), "{asked:?}");
    assert!(!asked.iter().any(|l| l.ends_with(" auth")), "{asked:?}");

    let server = RecordingServer::start(None);
    let args = ModelArgs {
        base_url: Some(server.url.clone()),
        ..Default::default()
    };
    let s = select_with(&config_with_a_key(), &args, &DEMOS, &[refused_url()])
        .await
        .unwrap();
    assert_eq!(s.model.model_name(), "m41");
    assert_eq!(server.asked(), vec!["/v1/models auth".to_string()]);
}

/// Issue 41: another user's server on a port asked is named as theirs,
/// not asked anything (no probe, no key, no prompt) and not used: the demo
/// model, saying why and how to use it; named with --base-url, it is
/// used, and the key goes where the person sent it.
#[tokio::test]
async fn another_users_server_is_named_and_never_used_unasked() {
    let Some(uid) = codeloop_testkit::ordinary_user::made_user() else {
        return;
    };
    let server = RecordingServer::start(Some(codeloop_testkit::ordinary_user::USER));
    let url = server.url.clone();
    let port = url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/v1")
        .to_string();
    let s = select_with(
        &config_with_a_key(),
        &ModelArgs::default(),
        &DEMOS,
        std::slice::from_ref(&url),
    )
    .await
    .unwrap();
    assert_eq!(s.model.provider(), "demo");
    assert_eq!(
        s.fallback_reason.as_deref(),
        Some(
            format!(
                "127.0.0.1:{port} is another user's (uid {uid}) server: not used; name it with --base-url {url} to use it"
            )
            .as_str()
        )
    );
    assert!(
        matches!(&s.probed[..], [Probe::AnotherUser { .. }]),
        "{:?}",
        s.probed
    );
    assert_eq!(server.asked(), Vec::<String>::new());

    let server = RecordingServer::start(Some(codeloop_testkit::ordinary_user::USER));
    let args = ModelArgs {
        base_url: Some(server.url.clone()),
        ..Default::default()
    };
    let s = select_with(&config_with_a_key(), &args, &DEMOS, &[refused_url()])
        .await
        .unwrap();
    assert_eq!(s.model.model_name(), "m41");
    assert_eq!(server.asked(), vec!["/v1/models auth".to_string()]);
}
