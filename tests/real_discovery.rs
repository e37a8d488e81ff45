//! codeloop finds the model by itself: with nothing configured, the real
//! llama-server and llama-cpp-python (SmolLM2, see testkit's `real_servers`)
//! on their default ports of this machine are found, named with what they
//! serve, and used; two at once are named, never chosen. The other
//! well-known servers (Ollama, LM Studio, vLLM) are imitated at the wire in
//! `crates/llm/tests/llm_local_servers.rs`.
//!
//! The ports are the machine's own: one taken by something else is said,
//! and the part of the test that needs it is skipped, not failed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::Path;
use std::process::{Command, Output};

use codeloop_testkit::real_servers;
use real_servers::{Kind, MODEL, RealServer, one_at_a_time, port_is_free};

/// The ports codeloop asks when nothing is configured (its `WELL_KNOWN`).
const WELL_KNOWN: [u16; 5] = [11434, 8080, 9931, 1234, 8000];

/// codeloop with nothing configured: no config file, no base URL or model
/// in the environment.
fn bare(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(args)
        .env("CODELOOP_DATA_DIR", dir.join("data"))
        .env("CODELOOP_CACHE_DIR", dir.join("cache"))
        .env("CODELOOP_CONFIG", dir.join("none.toml"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_MODEL")
        .env_remove("CODELOOP_BASE_URL")
        .env_remove("CODELOOP_MODEL")
        .env_remove("CODELOOP_PROFILE")
        .output()
        .unwrap()
}

/// Start `kind` on `port` if nothing else listens there; else say so.
fn start_if_free(kind: Kind, port: u16) -> Option<RealServer> {
    if port_is_free(port) {
        Some(RealServer::start_on(kind, 2048, port))
    } else {
        println!(
            "SKIPPED in part: port {port} is taken on this machine, so {kind:?} is not started there"
        );
        None
    }
}

/// Whether no well-known port but `ours` answers: then what codeloop finds
/// is the test's servers and nothing else.
fn only_ours(ours: &[u16]) -> bool {
    let others: Vec<u16> = WELL_KNOWN
        .into_iter()
        .filter(|p| !ours.contains(p) && !port_is_free(*p))
        .collect();
    if !others.is_empty() {
        println!(
            "something else listens on {others:?}: the counts of servers found are not asserted"
        );
    }
    others.is_empty()
}

/// What `codeloop models` said of the port at `url` (its line, after the URL).
fn said_of(stdout: &str, url: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(url))
        .map(|rest| rest.trim().to_string())
        .unwrap_or_else(|| panic!("no line for {url}: {stdout}"))
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn both_servers_on_their_default_ports_are_named_and_each_alone_is_used() {
    let _turn = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let llama = start_if_free(Kind::LlamaServer, 8080);
    let python = start_if_free(Kind::LlamaCppPython, 8000);
    let mut ours = Vec::new();
    if llama.is_some() {
        ours.push(8080);
    }
    if python.is_some() {
        ours.push(8000);
    }

    // `codeloop models` with no URL: what answers on each port.
    let out = bare(dir.path(), &["models"]);
    let (stdout, stderr) = text(&out);
    println!("codeloop models, both started:\n{stdout}{stderr}");
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("looked for model servers on this machine"),
        "{stdout}"
    );
    assert!(
        stdout.contains("http://localhost:11434/v1") && stdout.contains("http://localhost:1234/v1"),
        "every well-known port is reported: {stdout}"
    );
    if llama.is_some() {
        assert_eq!(
            said_of(&stdout, "http://localhost:8080/v1"),
            format!("llama.cpp's llama-server, serves {MODEL}"),
            "{stdout}"
        );
    }
    if python.is_some() {
        assert_eq!(
            said_of(&stdout, "http://localhost:8000/v1"),
            format!("llama-cpp-python's server, serves {MODEL}"),
            "{stdout}"
        );
    }

    // Two at once: `run` names them and how to choose, before any model call.
    if llama.is_some() && python.is_some() && only_ours(&ours) {
        assert!(
            stdout.contains("2 model servers answer: choose one with --base-url"),
            "{stdout}"
        );
        let out = bare(dir.path(), &["run", "add two numbers", "--timeout", "10"]);
        let (stdout, stderr) = text(&out);
        println!("codeloop run, both started:\n{stdout}{stderr}");
        assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
        assert!(
            stderr.contains("2 model servers answer on this machine")
                && stderr.contains("http://localhost:8080/v1")
                && stderr.contains("http://localhost:8000/v1")
                && stderr.contains("--base-url"),
            "{stderr}"
        );
        assert!(
            !dir.path().join("data/sessions").exists(),
            "no session was started"
        );
    }

    // One alone is used, and said to be found.
    drop(python);
    if llama.is_some() && only_ours(&[8080]) {
        assert_found_alone(
            dir.path(),
            "llama.cpp's llama-server",
            "http://localhost:8080/v1",
        );
    }
}

#[test]
fn llama_cpp_python_alone_on_its_default_port_is_used() {
    let _turn = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let Some(_python) = start_if_free(Kind::LlamaCppPython, 8000) else {
        return;
    };
    if only_ours(&[8000]) {
        assert_found_alone(
            dir.path(),
            "llama-cpp-python's server",
            "http://localhost:8000/v1",
        );
    }
}

#[test]
fn llama_server_on_its_announced_new_port_is_used() {
    let _turn = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let Some(_llama) = start_if_free(Kind::LlamaServer, 9931) else {
        return;
    };
    if only_ours(&[9931]) {
        assert_found_alone(
            dir.path(),
            "llama.cpp's llama-server",
            "http://localhost:9931/v1",
        );
    }
}

/// `codeloop models` with nothing configured uses the one server found,
/// says so, and reports on it as on a configured one.
fn assert_found_alone(dir: &Path, words: &str, url: &str) {
    let out = bare(dir, &["models"]);
    let (stdout, stderr) = text(&out);
    println!("codeloop models, {words} alone:\n{stdout}{stderr}");
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!(
            "model        {MODEL} at {url} ({words}, found running on this machine)"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("server       {words} at {url}")),
        "{stdout}"
    );
}
