//! A program that draws a picture: the image is kept with the session (in
//! its folder and on the tape), named in `run`'s progress, and embedded in
//! the HTML export (looked at in headless chromium where it is installed).
//! Also the import policy and the packages as a session meets them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::{Path, PathBuf};
use std::process::Command;

use codeloop::session::state::RunPicture;
use codeloop::session::{CheckEvent, Event, LocalizedEvent, ModelRequestEvent, State};

const PNG_CODE: &str = r#"import struct
import zlib


def main():
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    width, height = 4, 2
    rows = b"".join(b"\x00" + bytes((255, 0, 0)) * width for _ in range(height))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    with open("chart.png", "wb") as f:
        f.write(png)
    return "chart.png"
"#;

fn replies(dir: &Path, code: &str) -> PathBuf {
    let plan = r#"```json
{"functions": [{"name": "main", "purpose": "Draw the chart into chart.png and return its name", "inputs": "", "output": "str", "depends_on": []}]}
```"#;
    let lines = [
        serde_json::json!({"tag": "plan", "text": plan}),
        serde_json::json!({"tag": "tests/main", "text": "```python\ndef test_main():\n    assert main() == \"chart.png\"\n```\n"}),
        serde_json::json!({"tag": "code/main/1", "text": format!("```python\n{code}```\n")}),
        serde_json::json!({"tag": "code/main/2", "text": format!("```python\n{PNG_CODE}```\n")}),
        serde_json::json!({"tag": "repair/main/2", "text": format!("The import is blocked; do without it.\n```python\n{PNG_CODE}```\n")}),
    ];
    let path = dir.join("replies.jsonl");
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(&path, text.join("\n") + "\n").unwrap();
    path
}

fn run_session(dir: &Path, replies: &Path, extra: &[&str]) -> (String, PathBuf) {
    let data = dir.join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["--config"])
        .arg(dir.join("config.toml"))
        .args(extra)
        .args(["run", "Draw a chart of the data", "--scripted"])
        .arg(replies)
        .args(["--pace", "0", "--no-cache", "--out"])
        .arg(dir.join("out"))
        .env("CODELOOP_DATA_DIR", &data)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let session = std::fs::read_dir(data.join("sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("tape.jsonl").exists())
        .unwrap_or_else(|| panic!("no session: {text}"));
    (text, session)
}

fn state_of(session: &Path) -> (State, Vec<Event>) {
    let text = std::fs::read_to_string(session.join("tape.jsonl")).unwrap();
    let records: Vec<codeloop::session::Record> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let events = records.iter().map(|r| r.event.clone()).collect();
    (State::from_records(&records), events)
}

#[test]
fn a_png_the_program_writes_is_kept_on_the_tape_and_in_the_html() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    let replies = replies(dir.path(), PNG_CODE);
    let (progress, session) = run_session(dir.path(), &replies, &[]);
    assert!(progress.contains("PASSED"), "{progress}");
    assert!(
        progress.contains("picture chart.png (PNG, 4×2, 1 KiB), from run 1, kept as pictures/"),
        "{progress}"
    );
    let (state, _) = state_of(&session);
    // The test run drew it; the program's runs drew the same bytes again,
    // which are not kept twice.
    assert_eq!(state.pictures.len(), 1, "{:?}", state.pictures);
    let RunPicture {
        run_id: run,
        picture: last,
    } = state.pictures.last().unwrap();
    assert_eq!(*run, Some(1));
    assert_eq!(last.name, "chart.png");
    assert_eq!(last.format, "png");
    assert_eq!((last.width, last.height), (Some(4), Some(2)));
    let kept = std::fs::read(session.join(&last.path)).unwrap();
    // The report names it, with where the session keeps it.
    let report = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(
        report.contains("## Pictures") && report.contains(&format!("`{}`", last.path)),
        "{report}"
    );
    assert!(kept.starts_with(b"\x89PNG"));
    assert_eq!(kept.len() as u64, last.size_bytes);

    let html_path = dir.path().join("page.html");
    let export = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["--config", "/dev/null", "export", "--format", "html", "-o"])
        .arg(&html_path)
        .arg(session.join("tape.jsonl"))
        .output()
        .unwrap();
    assert!(
        export.status.success(),
        "{}",
        String::from_utf8_lossy(&export.stderr)
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.contains("<h2>Pictures</h2>"), "{html}");
    assert!(html.contains("img-src data:"));
    let uri = format!("data:image/png;base64,{}", base64(&kept));
    assert!(html.contains(&uri));
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
        .arg(format!("file://{}", html_path.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("<img alt=\"chart.png\" src=\"data:image/png;base64,"),
        "{dom}"
    );
}

/// A program that writes a 16000 × 16000 PNG of 244 KiB (1 GiB decoded).
const HUGE_PNG_CODE: &str = r#"import struct
import zlib


def main():
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    side = 16000
    z = zlib.compressobj(1)
    row = bytes(side + 1)
    data = b"".join(z.compress(row) for _ in range(side)) + z.flush()
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0))
    png += chunk(b"IDAT", data) + chunk(b"IEND", b"")
    with open("chart.png", "wb") as f:
        f.write(png)
    return "chart.png"
"#;

#[test]
fn a_picture_too_large_to_show_is_kept_and_named_not_embedded() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    let replies = replies(dir.path(), HUGE_PNG_CODE);
    let (progress, session) = run_session(dir.path(), &replies, &[]);
    assert!(progress.contains("PASSED"), "{progress}");
    let (state, _) = state_of(&session);
    let last = &state.pictures.last().unwrap().picture;
    assert_eq!((last.width, last.height), (Some(16000), Some(16000)));
    let html_path = dir.path().join("page.html");
    let export = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["--config", "/dev/null", "export", "--format", "html", "-o"])
        .arg(&html_path)
        .arg(session.join("tape.jsonl"))
        .output()
        .unwrap();
    assert!(export.status.success());
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(
        html.contains("Not drawn here: it is 16000 × 16000 pixels, too large to show here"),
        "{html}"
    );
    assert!(
        !html.contains("data:image/png;base64,"),
        "embedded all the same"
    );
}

fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            out.push(if i <= c.len() {
                ABC[((n >> (18 - 6 * i)) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

#[test]
fn an_enforced_import_policy_fails_the_check_and_the_code_is_repaired() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[imports]\nblock = [\"socket\"]\nenforce = true\n",
    )
    .unwrap();
    let with_socket = format!("import socket\n{PNG_CODE}");
    let replies = replies(dir.path(), &with_socket);
    let (progress, session) = run_session(dir.path(), &replies, &[]);
    assert!(progress.contains("PASSED"), "{progress}");
    let (_, events) = state_of(&session);
    let blocked = events.iter().any(|e| matches!(e, Event::Check(CheckEvent { findings, .. })
        if findings.iter().any(|f| f.kind == "blocked" && f.message.contains("import of 'socket' is blocked by the import policy (config [imports])"))));
    assert!(blocked, "{progress}");
    // The first version never ran: the check sent it to repair.
    let localized = events.iter().any(|e| matches!(e, Event::Localized(LocalizedEvent { location, .. }) if location.error_type == "BlockedImport"));
    assert!(localized);
}

#[test]
fn the_prompts_name_the_packages_of_the_chosen_interpreter() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    let real =
        codeloop_sandbox::Sandbox::probe(&codeloop_sandbox::SandboxOptions::from_env()).interpreter;
    let venv = dir.path().join("venv");
    assert!(
        Command::new(&real)
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv)
            .status()
            .unwrap()
            .success()
    );
    let site = venv
        .join("lib")
        .read_dir()
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path()
        .join("site-packages");
    std::fs::create_dir_all(site.join("plotkit")).unwrap();
    std::fs::write(site.join("plotkit/__init__.py"), "").unwrap();
    Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(dir.path())
        .status()
        .unwrap();
    let python = venv.join("bin/python");
    let replies = replies(dir.path(), PNG_CODE);
    let (progress, session) = run_session(
        dir.path(),
        &replies,
        &["--python", python.to_str().unwrap()],
    );
    assert!(
        progress.contains(&format!("python:  {}", python.display())),
        "{progress}"
    );
    let (state, events) = state_of(&session);
    let env = state.config.python.clone().unwrap();
    assert_eq!(env.interpreter, python.display().to_string());
    assert!(env.packages.iter().any(|p| p.name == "plotkit"));
    let prompts: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ModelRequest(ModelRequestEvent { messages, .. }) => Some(
                messages
                    .iter()
                    .map(|m| m.content.clone())
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            _ => None,
        })
        .collect();
    assert!(!prompts.is_empty());
    for p in &prompts {
        assert!(
            p.contains("the program can import these installed packages: plotkit."),
            "{p}"
        );
    }
}

#[test]
fn the_plain_python3_on_the_path_offers_no_packages_to_the_model() {
    // Its packages are whatever the machine happens to have: the prompts
    // keep to the standard library, while the tape still says what it had.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    let replies = replies(dir.path(), PNG_CODE);
    let data = dir.path().join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["--config"])
        .arg(dir.path().join("config.toml"))
        .args(["run", "Draw a chart of the data", "--scripted"])
        .arg(&replies)
        .args(["--pace", "0", "--no-cache"])
        .env("CODELOOP_DATA_DIR", &data)
        .env_remove("CODELOOP_PYTHON")
        .output()
        .unwrap();
    let session = std::fs::read_dir(data.join("sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("tape.jsonl").exists())
        .unwrap_or_else(|| panic!("no session: {out:?}"));
    let (state, events) = state_of(&session);
    assert!(!state.config.python.unwrap().chosen);
    let asked = events
        .iter()
        .filter(|e| matches!(e, Event::ModelRequest(_)))
        .count();
    assert!(asked > 0);
    assert!(!events.iter().any(|e| matches!(e,
        Event::ModelRequest(ModelRequestEvent { messages, .. })
            if messages.iter().any(|m| m.content.contains("installed packages")))));
}
