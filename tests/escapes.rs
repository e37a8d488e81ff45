//! Text a server, a model, a program or a file name puts where a terminal
//! shows it carries no control sequence (issue 33): `codeloop models`
//! prints the model ids a server lists stripped; `report.md` and the
//! Markdown export, which people `cat`, are stripped of OSC 52 (the
//! clipboard), OSC 0 (the title), CSI and C1 from the plan's text, a
//! program's output and an input file's name.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::Path;
use std::process::Command;

use codeloop_testkit::fault_server;
use fault_server::*;
use serde_json::json;

/// No escape, no BEL, no C1 control (CSI, OSC, DCS ... as single bytes).
fn assert_clean(what: &str, text: &str) {
    for (i, c) in text.char_indices() {
        let control = c == '\u{1b}' || c == '\u{7}' || ('\u{80}'..='\u{9f}').contains(&c);
        assert!(
            !control,
            "{what}: a control character {:?} at byte {i}: {:?}",
            c,
            &text[i.saturating_sub(40)..(i + 40).min(text.len())]
        );
    }
}

const OSC52: &str = "\u{1b}]52;c;cm0gLXJmIH4=\u{7}";
const OSC0: &str = "\u{1b}]0;pwned\u{1b}\\";
const CLEAR: &str = "\u{1b}[2J";
const C1: &str = "\u{9b}31m\u{9d}0;title\u{9c}";

#[tokio::test(flavor = "multi_thread")]
async fn models_prints_the_ids_a_server_lists_without_their_escapes() {
    let server = FaultServer::start("{\"ok\": true}").await;
    let ids = [
        format!("evil{OSC52}"),
        format!("title{OSC0}"),
        format!("clear{CLEAR}"),
        format!("c1{C1}"),
    ];
    server.route(
        "GET /v1/models",
        json_answer(
            200,
            json!({"data": ids.iter().map(|i| json!({"id": i})).collect::<Vec<_>>()}),
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let base = server.base_url.clone();
    let model = ids[0].clone();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_codeloop"))
            .args(["models", "--base-url", &base, "--model", &model])
            .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
            .env("CODELOOP_CACHE_DIR", dir.path().join("cache"))
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("lists        evil"), "{stdout}");
    assert!(stdout.contains("clear"), "{stdout}");
    assert_clean("codeloop models", &stdout);
    assert_clean(
        "codeloop models (stderr)",
        &String::from_utf8_lossy(&out.stderr),
    );
}

fn replies(dir: &Path) -> std::path::PathBuf {
    let plan = format!(
        "```json\n{{\"functions\": [{{\"name\": \"main\", \"purpose\": \"Print a greeting{OSC52}{C1}\", \"inputs\": \"\", \"output\": \"str\", \"depends_on\": []}}]}}\n```"
    );
    let code = "```python\ndef main():\n    print('hello \\x1b]0;pwned\\x07 \\x9b2J \\x1b]52;c;aGk=\\x07 done')\n    return 'ok'\n```\n";
    let lines = [
        json!({"tag": "plan", "text": plan}),
        json!({"tag": "tests/main", "text": "```python\ndef test_main():\n    assert main() == 'ok'\n```\n"}),
        json!({"tag": "code/main/1", "text": code}),
    ];
    let path = dir.join("replies.jsonl");
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(&path, text.join("\n") + "\n").unwrap();
    path
}

#[test]
fn the_report_and_the_markdown_export_carry_no_escapes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    let input = dir.path().join(format!("data{OSC0}.csv"));
    std::fs::write(&input, "a,b\n1,2\n").unwrap();
    let data = dir.path().join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .arg("--config")
        .arg(dir.path().join("config.toml"))
        .args(["run", "Print a greeting", "--scripted"])
        .arg(replies(dir.path()))
        .args(["--pace", "0", "--no-cache", "--input"])
        .arg(&input)
        .arg("--out")
        .arg(dir.path().join("out"))
        .env("CODELOOP_DATA_DIR", &data)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("result: PASSED"), "{stderr}");
    assert_clean("run's progress", &stderr);
    let report = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    // What carried the escapes is there, without them.
    assert!(report.contains("Print a greeting"), "{report}");
    assert!(report.contains("## Input: data.csv"), "{report}");
    assert!(report.contains("it printed: hello    done"), "{report}");
    assert_clean("report.md", &report);
    let session = std::fs::read_dir(data.join("sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("tape.jsonl").exists())
        .unwrap();
    let md = dir.path().join("export.md");
    let export = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["--config", "/dev/null", "export", "--format", "md", "-o"])
        .arg(&md)
        .arg(session.join("tape.jsonl"))
        .output()
        .unwrap();
    assert!(
        export.status.success(),
        "{}",
        String::from_utf8_lossy(&export.stderr)
    );
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("Print a greeting"), "{md}");
    assert_clean("the Markdown export", &md);
}
