//! The review before running as `run`'s progress, the Markdown report and
//! the HTML export show it: the real binary, a scripted model
//! (`tests/fixtures/review_replies.jsonl`) whose review of version 1 finds
//! something serious, `--review-repairs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The binary cargo built for these tests.
const CODELOOP: &str = env!("CARGO_BIN_EXE_codeloop");

use codeloop_testkit::cli::codeloop_in;

#[test]
fn the_review_is_in_the_progress_the_report_and_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let replies = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/review_replies.jsonl"
    );
    let output = codeloop_in(CODELOOP, dir.path())
        .args(["run", "the total length of a list of words", "--no-cache"])
        .args(["--scripted", replies, "--review-repairs"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "review  total_len #1: concerns: 1 serious, 1 minor (740 tokens)\n        serious, line 4: adds one per word: the total is too large\n        minor: a generator with sum() would be shorter\n"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("review  total_len #2: ok (730 tokens)"),
        "{stderr}"
    );
    // Version 1 never ran.
    assert!(!stderr.contains("run     total_len #1"), "{stderr}");
    assert!(
        stderr.contains("(of them 1470 in 2 reviews before running)"),
        "{stderr}"
    );

    let md = dir.path().join("s.md");
    let html = dir.path().join("s.html");
    for (format, path) in [("md", &md), ("html", &html)] {
        let out = codeloop_in(CODELOOP, dir.path())
            .args(["export", "last", "--format", format, "-o"])
            .arg(path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let md = std::fs::read_to_string(md).unwrap();
    assert!(
        md.contains("(of them 1470 in 2 reviews before running)"),
        "{md}"
    );
    assert!(
        md.contains("- review #1: concerns: 1 serious, 1 minor\n  - serious, line 4: adds one per word: the total is too large\n"),
        "{md}"
    );
    assert!(md.contains("- review #2: ok\n"), "{md}");
    let html = std::fs::read_to_string(html).unwrap();
    assert!(
        html.contains(" (of them 1470 in 2 reviews before running)</dd>"),
        "{html}"
    );
    assert!(
        html.contains("<div class=\"review serious\"><h4>Review (before running)</h4><p>concerns: 1 serious, 1 minor</p><ul><li class=\"serious\">serious, line 4: adds one per word: the total is too large</li>"),
        "{html}"
    );
    assert!(html.contains("<div class=\"review ok\">"), "{html}");
}
