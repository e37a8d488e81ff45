//! Each run's figures and the failing path's coverage where a user reads a
//! session: `run`'s progress and summary (per node and in all), the Markdown
//! report and the HTML export, from a real session of the roman demo (its
//! recorded replies, real python3 in the real sandbox).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::Path;
use std::process::{Command, Output};

fn codeloop(args: &[&str], data: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(args)
        .env("CODELOOP_DATA_DIR", data)
        .env("CODELOOP_CACHE_DIR", data.join("cache"))
        .env("CODELOOP_CONFIG", data.join("none.toml"))
        .env_remove("OPENAI_BASE_URL")
        .env_remove("CODELOOP_BASE_URL")
        .env_remove("CODELOOP_PROVIDER")
        .env_remove("CODELOOP_TIMEOUT")
        .output()
        .unwrap()
}

#[test]
fn run_the_report_and_the_export_show_what_each_run_used_and_what_ran() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = codeloop(
        &["run", "--demo", "roman", "--out", out.to_str().unwrap()],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    // Each run's line, then the summary: in all, and per node.
    let runs: Vec<&str> = stderr.lines().filter(|l| l.starts_with("run ")).collect();
    assert!(runs.len() >= 4, "{stderr}");
    for line in &runs {
        assert!(
            line.contains(", CPU ") && line.contains(" · peak "),
            "{line}"
        );
    }
    let summary = stderr.split("result: ").nth(1).unwrap();
    assert!(summary.contains("\n  resources: "), "{summary}");
    for who in [
        "int_to_roman: 1 run, CPU ",
        "roman_to_int: 3 runs, CPU ",
        "program: 1 run, CPU ",
    ] {
        assert!(
            summary.contains(&format!("\n    {who}")),
            "{who}: {summary}"
        );
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("\nRuns: "), "{report}");
    assert!(report.contains("Runs: CPU "), "{report}");
    // The HTML export: the figures, and the failing function's lines marked.
    let html = dir.path().join("s.html");
    let o = codeloop(
        &[
            "export",
            "last",
            "--format",
            "html",
            "-o",
            html.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<dt>Runs</dt>"), "no figures in the header");
    // What a run took, then what it used: `48 ms, CPU 12 ms · peak 9 MiB`.
    let figures = page
        .split("<p class=\"figures\">")
        .skip(1)
        .map(|rest| rest.split("</p>").next().unwrap_or_default());
    assert!(
        figures.into_iter().any(|f| f.contains(" ms, CPU ")),
        "no figures beside a run"
    );
    assert!(page.contains("<h4>Lines that ran</h4>"), "no coverage");
    assert!(page.contains("<tr class=\"ran\">"), "no line that ran");
}
