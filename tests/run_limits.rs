//! What codeloop prints to a terminal: nothing quoted in an error reaches
//! it raw.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::Path;
use std::process::{Command, Output};

fn codeloop(args: &[&str], data: &Path, config: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(args)
        .env("CODELOOP_DATA_DIR", data)
        .env("CODELOOP_CACHE_DIR", data.join("cache"))
        .env("CODELOOP_CONFIG", config)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("CODELOOP_BASE_URL")
        .env_remove("CODELOOP_PROVIDER")
        .env_remove("CODELOOP_TIMEOUT")
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn an_error_quoting_its_input_prints_no_control_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("none.toml");
    let o = codeloop(
        &["export", "nope\x1b]52;c;cm0gLXJmIH4K\x07\x1b[6n"],
        dir.path(),
        &none,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("nope"), "{}", stderr(&o));
    assert!(!o.stderr.contains(&0x1b), "{:?}", stderr(&o));
}
