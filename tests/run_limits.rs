//! Limits and results checked where they are read: `run --timeout 0` is
//! refused as `exec` and `eval` refuse it, a config value no run could use
//! is refused with its key, a syntax error in the config names its line and
//! how to start without the file, a session whose results cannot be
//! written to `--out` ends non-zero, and nothing quoted in an error reaches
//! the terminal raw.
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
fn a_zero_timeout_or_count_is_refused_by_run_and_bench_as_by_exec() {
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("none.toml");
    for args in [
        &["run", "--demo", "roman", "--timeout", "0"][..],
        &["run", "--demo", "roman", "--workers", "0"][..],
        &["run", "--demo", "roman", "--max-iterations", "0"][..],
        &["bench", "problems.jsonl", "--timeout", "0"][..],
        &["bench", "problems.jsonl", "--workers", "0"][..],
    ] {
        let o = codeloop(args, dir.path(), &none);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let flag = args[args.len() - 2];
        assert!(stderr(&o).contains(flag), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn a_config_value_no_run_could_use_is_refused_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[run]\nmemory_mb = 0\n").unwrap();
    let o = codeloop(&["run", "--demo", "roman"], dir.path(), &config);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("[run] memory_mb = 0"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("SIGSEGV"), "{}", stderr(&o));

    std::fs::write(&config, "[run]\nworkers = [\n").unwrap();
    let o = codeloop(&["config"], dir.path(), &config);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(&config.display().to_string()), "{err}");
    assert!(err.contains("at line 2, column 12"), "{err}");
    // What it advises works.
    assert!(err.contains("codeloop --config /dev/null config"), "{err}");
    let o = codeloop(&["--config", "/dev/null", "config"], dir.path(), &config);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn results_that_cannot_be_written_to_out_end_the_run_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("none.toml");
    // A file where a folder should be: nothing can be written under it.
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, "").unwrap();
    let out = blocker.join("out");
    let o = codeloop(
        &["run", "--demo", "roman", "--out", out.to_str().unwrap()],
        dir.path(),
        &none,
    );
    let err = stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("could not write the program to"), "{err}");

    let good = dir.path().join("good");
    let o = codeloop(
        &["run", "--demo", "roman", "--out", good.to_str().unwrap()],
        dir.path(),
        &none,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(good.join("report.md").exists());
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
