//! The real binary against a loopback server that answers the way small
//! local models really do (seen from SmolLM2-135M and a base GGUF behind
//! llama.cpp): a reply that falls into a loop, an empty reply, then a plan.
//! The loop is stopped while it streams and never continued, every call's
//! tokens count, the hollow replies are named for what they likely are, and
//! each call goes out with the reply limit and the schema of its kind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::process::{Command, Output};

use codeloop_testkit::fault_server;
use fault_server::{Answer, FaultServer, content, done, finish, usage};
use serde_json::Value;

/// `codeloop run "Double an integer" --json` against `server`: its output,
/// and the tape's events it printed.
async fn run_double(server: &FaultServer) -> (Output, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let base_url = server.base_url.clone();
    let output = tokio::task::spawn_blocking({
        let dir = dir.path().to_path_buf();
        move || {
            Command::new(env!("CARGO_BIN_EXE_codeloop"))
                .args(["run", "Double an integer", "--json", "--workers", "1"])
                .args(["--base-url", &base_url, "--model", "loopback-coder"])
                .arg("--out")
                .arg(dir.join("out"))
                .env("CODELOOP_DATA_DIR", dir.join("data"))
                .env("CODELOOP_CACHE_DIR", dir.join("cache"))
                .env("CODELOOP_CONFIG", dir.join("none.toml"))
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let events = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (output, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_reply_is_stopped_counted_and_the_hollow_replies_named() {
    let server = FaultServer::start("unused").await;
    // After two plan calls with no plan, the whole task is one function,
    // named from its words.
    let tests = "```python\ndef test_double():\n    assert double_integer(2) == 4\n```\n";
    let code = "```python\ndef double_integer(x):\n    return x * 2\n```\n";
    // The plan, first: the same few characters until the window would end.
    let mut looping = vec![content("{\"functions\": [{\"name\": \"")];
    looping.extend((0..400).map(|_| content("ab ab ab ")));
    looping.extend([finish("length"), done()]);
    server.queue([
        Answer::Sse(looping),
        // Then nothing at all (a base model with no chat template).
        Answer::Sse(vec![finish("stop"), usage(40, 0), done()]),
        Answer::Sse(vec![content(tests), finish("stop"), usage(60, 30), done()]),
        Answer::Sse(vec![content(code), finish("stop"), usage(70, 20), done()]),
    ]);
    let (output, events) = run_double(&server).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("result: PASSED"), "{stderr}");
    let of_type = |t: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == t).collect() };

    // The loop: stopped, not continued, its tokens counted.
    let errors = of_type("model_error");
    assert_eq!(errors.len(), 1, "{errors:?}");
    let looped = errors[0];
    assert_eq!(looped["call_id"], 1);
    let message = looped["message"].as_str().unwrap();
    assert!(message.starts_with("the reply repeats itself"), "{message}");
    assert!(message.contains("ab "), "{message}");
    assert!(
        looped["usage"]["completion_tokens"].as_u64().unwrap() > 100,
        "{looped}"
    );
    assert!(
        of_type("model_continued").is_empty(),
        "a loop is never continued"
    );
    let streamed: usize = of_type("model_delta")
        .iter()
        .filter(|d| d["call_id"] == 1)
        .map(|d| d["text"].as_str().unwrap().len())
        .sum();
    assert!(
        streamed < 400 * 9,
        "the loop was read to its end ({streamed} bytes)"
    );

    // Two hollow replies in a row are named, with what to do.
    let notices: Vec<&str> = of_type("notice")
        .iter()
        .map(|n| n["message"].as_str().unwrap())
        .collect();
    let named: Vec<&&str> = notices
        .iter()
        .filter(|m| m.contains("base model"))
        .collect();
    assert_eq!(named.len(), 1, "{notices:?}");
    assert!(named[0].contains("chat template"), "{}", named[0]);

    // The session's tokens count the failed call too.
    let finished = of_type("finished");
    let summary = stderr.lines().find(|l| l.contains("tokens:")).unwrap();
    let prompt_in: u64 = summary
        .split("tokens: ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(prompt_in > 40 + 60 + 70, "{summary}");
    assert_eq!(finished.len(), 1);

    // Each call went out with the reply limit of its kind; the plan with
    // its schema, the rest with none.
    let chats: Vec<Value> = server
        .seen()
        .iter()
        .filter(|s| s.path == "/v1/chat/completions")
        .map(|s| s.json())
        .collect();
    assert_eq!(chats.len(), 4);
    for plan_call in &chats[..2] {
        assert_eq!(plan_call["max_tokens"], 1024);
        assert_eq!(plan_call["response_format"]["type"], "json_schema");
        assert_eq!(plan_call["response_format"]["json_schema"]["name"], "plan");
    }
    for other in &chats[2..] {
        assert_eq!(other["max_tokens"], 1536);
        assert!(other.get("response_format").is_none(), "{other}");
    }
    let replies = of_type("model_reply");
    assert_eq!(replies[0]["structured"], "json_schema");
    assert!(replies[1].get("structured").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_cannot_plan_still_gets_the_task_to_code_as_one_function() {
    let server = FaultServer::start("unused").await;
    let prose = || {
        Answer::Sse(vec![
            content("Sure! Doubling is easy: multiply by two."),
            finish("stop"),
            usage(40, 10),
            done(),
        ])
    };
    let tests = "```python\ndef test_double():\n    assert double_integer(2) == 4\n```\n";
    let code = "```python\ndef double_integer(x):\n    return x * 2\n```\n";
    server.queue([
        prose(),
        prose(),
        Answer::Sse(vec![content(tests), finish("stop"), usage(60, 30), done()]),
        Answer::Sse(vec![content(code), finish("stop"), usage(70, 20), done()]),
    ]);
    let (output, events) = run_double(&server).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("result: PASSED"), "{stderr}");
    let of_type = |t: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == t).collect() };
    assert_eq!(of_type("plan_error").len(), 2);
    let plans = of_type("plan");
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0]["specs"][0]["name"], "double_integer");
    assert!(
        of_type("notice").iter().any(|n| n["message"]
            .as_str()
            .unwrap()
            .contains("no usable plan in 2 tries")),
        "{stderr}"
    );
    assert_eq!(of_type("code").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_tests_never_come_still_gets_its_code_but_cannot_pass() {
    let server = FaultServer::start("unused").await;
    let plan = r#"{"functions": [{"name": "double", "purpose": "twice x", "inputs": "x: int", "output": "int", "depends_on": []}]}"#;
    let prose = || {
        Answer::Sse(vec![
            content("Tests are a good idea. You should write some."),
            finish("stop"),
            usage(40, 10),
            done(),
        ])
    };
    let code = "```python\ndef double(x):\n    return x * 2\n```\n";
    server.queue([
        Answer::Sse(vec![content(plan), finish("stop"), usage(50, 40), done()]),
        prose(),
        prose(),
        Answer::Sse(vec![content(code), finish("stop"), usage(70, 20), done()]),
    ]);
    let (output, events) = run_double(&server).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let of_type = |t: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == t).collect() };
    assert!(of_type("tests").is_empty(), "{stderr}");
    assert_eq!(of_type("code").len(), 1, "{stderr}");
    assert!(
        of_type("notice").iter().any(|n| n["message"]
            .as_str()
            .unwrap()
            .contains("the model gave none it could use")),
        "{stderr}"
    );
    let tags: Vec<&str> = of_type("model_request")
        .iter()
        .map(|r| r["tag"].as_str().unwrap())
        .collect();
    assert_eq!(
        tags[..4],
        [
            "plan",
            "tests/double",
            "tests/double/retry",
            "code/double/1"
        ],
        "{tags:?}"
    );
    // With no test, nothing can pass: the session says so, never PASSED,
    // and no repair is asked for (it would have nothing to go by).
    assert!(stderr.contains("no test ran"), "{tags:?}\n{stderr}");
    // What happened and what the person can do, with no empty place.
    assert!(
        stderr.contains("it has no tests, so it cannot pass; write them"),
        "{stderr}"
    );
    let localized = of_type("localized");
    let failure: codeloop::protocol::Location =
        serde_json::from_value(localized[0]["location"].clone()).unwrap();
    assert!(
        failure
            .headline()
            .starts_with("RunError: no test ran: it has no tests"),
        "{}",
        failure.headline()
    );
    assert_eq!(tags.len(), 4, "{tags:?}");
    assert!(stderr.contains("so no repair is asked for"), "{stderr}");
    assert!(!stderr.contains("result: PASSED"), "{tags:?}\n{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tests_that_define_the_function_themselves_keep_their_assertions_against_the_real_code() {
    let server = FaultServer::start("unused").await;
    let plan = r#"{"functions": [{"name": "double", "purpose": "twice x", "inputs": "x: int", "output": "int", "depends_on": []}]}"#;
    // SmolLM2's tests: the function again, so as written they would pass
    // against any code. Its definition goes; its assertion stays.
    let own_copy = "```python\ndef double(x):\n    return x * 2\n\ndef test_double():\n    assert double(2) == 4\n```\n";
    let broken = "```python\ndef double(x):\n    return y\n```\n";
    let fixed =
        "`y` is not defined: it is x twice.\n```python\ndef double(x):\n    return x * 2\n```\n";
    server.queue([
        Answer::Sse(vec![content(plan), finish("stop"), usage(50, 40), done()]),
        Answer::Sse(vec![
            content(own_copy),
            finish("stop"),
            usage(60, 30),
            done(),
        ]),
        Answer::Sse(vec![content(broken), finish("stop"), usage(70, 20), done()]),
        Answer::Sse(vec![content(fixed), finish("stop"), usage(90, 20), done()]),
    ]);
    let (output, events) = run_double(&server).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let of_type = |t: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == t).collect() };
    let tests = of_type("tests");
    assert_eq!(tests.len(), 1, "{stderr}");
    let code = tests[0]["code"].as_str().unwrap();
    assert!(code.contains("assert double(2) == 4"), "{code}");
    assert!(!code.contains("def double"), "{code}");
    assert!(
        of_type("notice").iter().any(|n| n["message"]
            .as_str()
            .unwrap()
            .contains("their assertions kept")),
        "{stderr}"
    );
    // The broken code failed the kept assertion; the repair passes it.
    let passed: Vec<bool> = of_type("run_finished")
        .iter()
        .map(|r| r["record"]["passed"].as_bool().unwrap())
        .collect();
    assert_eq!(passed.first(), Some(&false), "{stderr}");
    assert!(stderr.contains("result: PASSED"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gguf_llama_cpp_lists_by_its_whole_path_is_shown_by_its_file_name() {
    const PATH: &str =
        "/root/.cache/codeloop/servers/smollm2-0.1.2/SmolLM2-135M-Instruct.Q4_1.gguf";
    const FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
    let server = FaultServer::start("unused").await;
    // llama.cpp's server lists the model it loaded by the path it was given.
    server.route(
        "GET /v1/models",
        fault_server::json_answer(
            200,
            serde_json::json!({"object": "list", "data": [{"id": PATH, "object": "model"}]}),
        ),
    );
    let plan = r#"{"functions": [{"name": "double", "purpose": "twice x", "inputs": "x: int", "output": "int", "depends_on": []}]}"#;
    server.queue([
        Answer::Sse(vec![content(plan), finish("stop"), usage(50, 40), done()]),
        Answer::Sse(vec![
            content("```python\ndef test_double():\n    assert double(2) == 4\n```\n"),
            finish("stop"),
            usage(50, 20),
            done(),
        ]),
        Answer::Sse(vec![
            content("```python\ndef double(x):\n    return x * 2\n```\n"),
            finish("stop"),
            usage(50, 20),
            done(),
        ]),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let base_url = server.base_url.clone();
    let data = dir.path().join("data");
    let output = tokio::task::spawn_blocking({
        let dir = dir.path().to_path_buf();
        move || {
            Command::new(env!("CARGO_BIN_EXE_codeloop"))
                .args(["run", "Double an integer", "--workers", "1"])
                .args(["--base-url", &base_url])
                .arg("--out")
                .arg(dir.join("out"))
                .env("CODELOOP_DATA_DIR", dir.join("data"))
                .env("CODELOOP_CACHE_DIR", dir.join("cache"))
                .env("CODELOOP_CONFIG", dir.join("none.toml"))
                .env_remove("CODELOOP_MODEL")
                .env_remove("OPENAI_MODEL")
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("result: PASSED"), "{stderr}");
    assert!(stderr.contains(&format!("model:   {FILE} at ")), "{stderr}");
    assert!(!stderr.contains(PATH), "{stderr}");
    let report = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(report.contains(&format!("Model: {FILE} (")), "{report}");
    let sessions = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .arg("sessions")
        .env("CODELOOP_DATA_DIR", &data)
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&sessions.stdout);
    assert!(listed.contains(FILE) && !listed.contains(PATH), "{listed}");
    // The server knows the model by its whole name: the requests and the
    // tape keep it.
    let asked = server
        .seen()
        .into_iter()
        .find(|s| s.path.ends_with("/chat/completions"))
        .unwrap();
    assert_eq!(asked.json()["model"], PATH);
}
