//! `codeloop run "my own task"` with no model configured: never a demo's
//! authored replies passed off as an answer. It says no model is available,
//! how to configure one, and that `--demo NAME` runs a demo; exit 2, and no
//! session is started.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::process::Command;

fn run(args: &[&str], data: &std::path::Path) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(args)
        .env("CODELOOP_DATA_DIR", data)
        .env("CODELOOP_CONFIG", data.join("none.toml"))
        // No server configured through the environment either.
        .env_remove("OPENAI_BASE_URL")
        .env_remove("CODELOOP_BASE_URL")
        .env_remove("CODELOOP_PROVIDER")
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_task_of_ones_own_with_no_model_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on the local servers' default ports here, so no model is found.
    let (code, stderr) = run(&["run", "reverse the words of a sentence"], dir.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with("codeloop: no model is available for your task: no model server is configured and none answers on this machine (Ollama, llama-server, LM Studio, llama-cpp-python and vLLM were looked for on their default ports).\n"),
        "{stderr}"
    );
    for needle in [
        "ollama serve",
        "--base-url URL",
        "[model] in",
        "codeloop run --demo NAME",
        "collatz",
    ] {
        assert!(stderr.contains(needle), "{needle:?} missing from: {stderr}");
    }
    assert!(
        !dir.path().join("sessions").exists(),
        "no session may start"
    );

    // A demo asked for by name answers only its own task.
    let (code, stderr) = run(
        &["run", "--demo", "collatz", "reverse the words"],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("only the authored replies of the demo \"collatz\""),
        "{stderr}"
    );
    assert!(!dir.path().join("sessions").exists());
}

#[test]
fn a_server_that_does_not_answer_is_said_with_where_its_address_came_from() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 9 (discard) of this machine.
    let asked = |env: &[(&str, &str)], args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_codeloop"));
        c.args(["run", "reverse the words"])
            .args(args)
            .env("CODELOOP_DATA_DIR", dir.path())
            .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
            .env_remove("OPENAI_BASE_URL")
            .env_remove("CODELOOP_BASE_URL");
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let said = asked(&[("CODELOOP_BASE_URL", "http://127.0.0.1:9/v1")], &[]);
    assert!(
        said.contains("cannot reach the model at http://127.0.0.1:9/v1"),
        "{said}"
    );
    assert!(
        said.contains("point CODELOOP_BASE_URL at one that runs"),
        "{said}"
    );
    assert!(!said.contains("--base-url"), "{said}");
    let said = asked(&[("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")], &[]);
    assert!(
        said.contains("point OPENAI_BASE_URL at one that runs"),
        "{said}"
    );
    let said = asked(&[], &["--base-url", "http://127.0.0.1:9/v1"]);
    assert!(said.contains("point --base-url at one that runs"), "{said}");
}

#[test]
fn models_with_nothing_configured_says_so_once_and_names_no_demo() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .arg("models")
        .env("CODELOOP_DATA_DIR", dir.path())
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .env_remove("OPENAI_BASE_URL")
        .env_remove("CODELOOP_BASE_URL")
        .env_remove("CODELOOP_PROVIDER")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stdout);
    if said.contains("answers") && !said.contains("none answers") {
        // A model server listens on a well-known port of this machine.
        return;
    }
    let model = said
        .lines()
        .find(|l| l.starts_with("model "))
        .unwrap_or_default();
    assert!(
        model.starts_with("model        none configured: no model server is configured"),
        "{said}"
    );
    assert_eq!(said.matches("is configured and").count(), 1, "{said}");
    assert!(!said.contains("wordfreq"), "{said}");
    assert!(said.contains("--demo NAME"), "{said}");
}
