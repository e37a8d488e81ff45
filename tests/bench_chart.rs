//! `bench --html`: pass@1 by repair round drawn as an inline SVG chart in a
//! self-contained page (one line a result set with --compare).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::process::Command;

#[test]
fn a_bench_writes_its_chart_of_pass_at_1_by_round() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results.jsonl");
    let page = dir.path().join("bench.html");
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let output = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["bench", &format!("{fixtures}/bench_problems.jsonl")])
        // The replies are code only: the problems' tests are the node's (oracle).
        .args(["--feedback", "hidden"])
        .args(["--scripted", &format!("{fixtures}/bench_replies.jsonl")])
        .arg("--out")
        .arg(&out)
        .arg("--html")
        .arg(&page)
        .env("CODELOOP_DATA_DIR", dir.path().join("data"))
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains(&format!("page: {}", page.display())),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("feedback: ORACLE feedback (hidden tests shown to the repairs)"),
        "the page names the oracle mode: {html}"
    );
    // 50% at the first try, 100% after one repair round: two points.
    assert!(html.contains("points=\"56.0,136.0 528.0,16.0\""), "{html}");
    assert!(html.contains(">first try</text>") && html.contains(">repair 1</text>"));
    assert!(
        html.contains("<td>50.0% (1/2)</td><td>100.0% (2/2)</td>"),
        "{html}"
    );
    assert!(!html.contains("http://") || html.matches("http://").count() == 1); // the SVG namespace only
    assert!(!html.contains("<script"));
}

#[test]
fn compare_draws_both_result_sets_on_one_chart() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("values.jsonl");
    let b = dir.path().join("plain.jsonl");
    std::fs::write(
        &a,
        concat!(
            r#"{"task_id":"T/0","status":"passed","passed_first":true,"passed_final":true,"iterations":1,"summary":""}"#,
            "\n",
            r#"{"task_id":"T/1","status":"passed","passed_first":false,"passed_final":true,"iterations":2,"passed_at":2}"#,
            "\n"
        ),
    )
    .unwrap();
    std::fs::write(
        &b,
        concat!(
            r#"{"task_id":"T/0","status":"failed","passed_first":false,"passed_final":false,"iterations":3,"summary":""}"#,
            "\n",
            r#"{"task_id":"T/1","status":"passed","passed_first":false,"passed_final":true,"iterations":3,"passed_at":3}"#,
            "\n"
        ),
    )
    .unwrap();
    let page = dir.path().join("compare.html");
    let output = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["bench", "--compare"])
        .arg(&a)
        .arg(&b)
        .arg("--html")
        .arg(&page)
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<polyline").count(), 2, "{html}");
    assert!(html.contains(&format!("data-name=\"{}\"", a.display())));
    assert!(html.contains(&format!("data-name=\"{}\"", b.display())));
    // b: 0% first try, 0% after 1, 50% after 2.
    assert!(
        html.contains("points=\"56.0,256.0 292.0,256.0 528.0,136.0\""),
        "{html}"
    );
    // The page as a browser builds it, where one is installed.
    let Some(chromium) = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find(|b| {
            Command::new("which")
                .arg(b)
                .output()
                .is_ok_and(|o| o.status.success())
        })
    else {
        eprintln!("SKIPPED the browser check: no chromium installed");
        return;
    };
    let dom = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(dom.matches("<polyline").count(), 2, "{dom}");
}
