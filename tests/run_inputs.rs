//! Input files described by what they are (issue 20): `run --input` on a
//! model served on loopback puts the file's description (delimiter, header,
//! typed columns, rows) into the plan and code prompts, prints it at the
//! start, keeps it on the tape and writes it into the report and the HTML
//! export; a file no run could read (or hold: larger than a run's working
//! directory) is refused before the model is asked anything, with why and
//! what to do (as root and as an ordinary user).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use codeloop_testkit::prompt_server;
use prompt_server::PromptServer;

use codeloop_testkit::ordinary_user;

const PLAN: &str = "```json\n{\"functions\": [{\"name\": \"total_qty\", \"purpose\": \"Sum the qty column of data.csv\", \"inputs\": \"path: str\", \"output\": \"int\", \"depends_on\": []}]}\n```";
const TESTS: &str = "```python\ndef test_total():\n    assert total_qty('data.csv') == 9\n```";
const CODE: &str = "```python\nimport csv\n\ndef total_qty(path):\n    with open(path) as f:\n        return sum(int(r['qty']) for r in csv.DictReader(f))\n```";

fn reply_for(prompt: &str) -> &'static str {
    if prompt.contains("Write this function") {
        CODE
    } else if prompt.contains("Write tests for this function") {
        TESTS
    } else {
        PLAN
    }
}

const DESCRIBED: &str = "data.csv (30 B): CSV (comma), 2 columns, 3 rows";

fn codeloop(dir: &Path, base_url: &str, input: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_codeloop"));
    c.args([
        "run",
        "Sum the qty column of data.csv",
        "--base-url",
        base_url,
    ])
    .arg("--input")
    .arg(input)
    .arg("--out")
    .arg(dir.join("out"))
    .env("CODELOOP_DATA_DIR", dir.join("data"))
    .env("CODELOOP_CACHE_DIR", dir.join("cache"))
    .env("CODELOOP_CONFIG", dir.join("none.toml"));
    c
}

#[test]
fn a_csv_is_described_in_the_prompts_at_the_start_on_the_tape_in_the_report_and_the_export() {
    let server = PromptServer::start(reply_for);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("data.csv");
    std::fs::write(&input, "name,qty\napple,3\npear,5\nfig,1\n").unwrap();
    let out = codeloop(dir.path(), &server.base_url, &input)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // run's start: one line per input.
    assert!(
        stderr.contains("  input:   data.csv (30 B): CSV (comma), 2 columns, 3 rows"),
        "{stderr}"
    );
    let prompts: Vec<String> = server
        .posts()
        .iter()
        .map(|b| {
            // The whole conversation a request holds.
            let v: serde_json::Value = serde_json::from_str(b).unwrap();
            v["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["content"].as_str().unwrap())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    assert_eq!(prompts.len(), 3, "plan, tests, code");
    let plan = &prompts[0];
    let code = prompts
        .iter()
        .find(|p| p.contains("Write this function"))
        .unwrap();
    for prompt in [plan, code] {
        assert!(prompt.contains(DESCRIBED), "{prompt}");
        assert!(
            prompt.contains("the first row is a header; types from the first 3 rows"),
            "{prompt}"
        );
        assert!(
            prompt.contains("- name: text, e.g. apple, pear, fig"),
            "{prompt}"
        );
        assert!(prompt.contains("- qty: int, e.g. 3, 5, 1"), "{prompt}");
    }
    // On the tape, typed.
    let sessions = dir.path().join("data/sessions");
    let session = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let tape = std::fs::read_to_string(session.join("tape.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(tape.lines().next().unwrap()).unwrap();
    let d = &first["inputs"][0]["description"];
    assert_eq!(d["what"]["format"], "table", "{first}");
    assert_eq!(d["what"]["columns"][1]["kind"], "int", "{first}");
    // The report and the export, a section per input.
    let report = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(report.contains("## Input: data.csv"), "{report}");
    assert!(report.contains("- qty: int, e.g. 3, 5, 1"), "{report}");
    let page = dir.path().join("page.html");
    let export = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["export", "--format", "html", "-o"])
        .arg(&page)
        .arg(&session)
        .env("CODELOOP_DATA_DIR", dir.path().join("data"))
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .output()
        .unwrap();
    assert!(
        export.status.success(),
        "{}",
        String::from_utf8_lossy(&export.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<section id=\"inputs\">"), "{html}");
    assert!(html.contains(DESCRIBED), "{html}");
    // A page to send names this machine's files by their names alone...
    let here = dir.path().display().to_string();
    assert!(!html.contains(&here), "{html}");
    assert!(html.contains("read from data.csv"), "{html}");
    assert!(
        html.contains("Exported by codeloop from session "),
        "{html}"
    );
    // ...unless asked.
    let export = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["export", "--format", "html", "--full-paths", "-o"])
        .arg(&page)
        .arg(&session)
        .env("CODELOOP_DATA_DIR", dir.path().join("data"))
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .output()
        .unwrap();
    assert!(export.status.success());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(&format!("read from {here}/data.csv")),
        "{html}"
    );
    assert!(
        html.contains(&format!("Exported by codeloop from {here}")),
        "{html}"
    );
    // The player's page is one to send too.
    let player = dir.path().join("player.html");
    for (full, named) in [(false, false), (true, true)] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_codeloop"));
        c.args(["export", "--format", "html", "--player", "-o"])
            .arg(&player)
            .arg(&session)
            .env("CODELOOP_DATA_DIR", dir.path().join("data"))
            .env("CODELOOP_CONFIG", dir.path().join("none.toml"));
        if full {
            c.arg("--full-paths");
        }
        assert!(c.output().unwrap().status.success());
        let page = std::fs::read_to_string(&player).unwrap();
        assert_eq!(page.contains(&here), named, "full paths: {full}");
        assert!(page.contains("tape.jsonl"), "the tape named");
    }
}

/// The command's output, or a failure if it has not ended within 60 s (a
/// FIFO must never make it wait).
fn within_a_minute(mut c: Command) -> Output {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("codeloop waited on its input");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_file_no_run_could_read_is_refused_before_the_model_is_asked() {
    let server = PromptServer::start(reply_for);
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("stream.csv");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let folder = dir.path().join("folder.csv");
    std::fs::create_dir(&folder).unwrap();
    // Larger than a run's working directory holds (sparse: no disk used).
    let big = dir.path().join("big.csv");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    for (input, why, todo) in [
        (
            dir.path().join("missing.csv"),
            "missing.csv does not exist",
            "check the path",
        ),
        (folder, "is a folder, not a file", "attach the files in it"),
        (
            fifo,
            "is a named pipe (FIFO)",
            "save what it carries to a regular file",
        ),
        (
            Path::new("/dev/zero").to_path_buf(),
            "is a device, not a file",
            "copy the data",
        ),
        (
            big,
            "is 300.0 MB: more than a run's working directory holds",
            "attach a sample of it",
        ),
    ] {
        let out = within_a_minute(codeloop(dir.path(), &server.base_url, &input));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains("the input file"), "{stderr}");
        assert!(stderr.contains(why), "{why}: {stderr}");
        assert!(stderr.contains(todo), "{todo}: {stderr}");
    }
    assert!(server.exchanges().is_empty(), "the server was never asked");
}

#[test]
fn a_file_an_ordinary_user_may_not_read_is_refused_with_what_to_do() {
    let Some((_turn, _python, dir, bin)) = ordinary_user::ordinary_user(
        "inputs",
        std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")),
    ) else {
        return;
    };
    let server = PromptServer::start(reply_for);
    let secret = dir.path().join("secret.csv");
    std::fs::write(&secret, "a,b\n1,2\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let home = ordinary_user::scratch("inputs-home");
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut c = Command::new("runuser");
    c.args(["-u", ordinary_user::USER, "--"])
        .arg(&bin)
        .args([
            "run",
            "Sum column b",
            "--base-url",
            &server.base_url,
            "--input",
        ])
        .arg(&secret)
        .env("CODELOOP_DATA_DIR", home.path().join("data"))
        .env("CODELOOP_CONFIG", home.path().join("none.toml"))
        .current_dir(home.path());
    let out = within_a_minute(c);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("secret.csv is not readable by you"),
        "{stderr}"
    );
    assert!(stderr.contains("mode 600"), "{stderr}");
    assert!(stderr.contains("chmod u+r"), "{stderr}");
    assert!(server.exchanges().is_empty(), "the server was never asked");
}

#[test]
fn an_image_attached_to_a_demo_is_described_read_back_listed_and_never_a_picture_it_drew() {
    let dir = tempfile::tempdir().unwrap();
    let picture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/inputs/pic.png");
    let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args([
            "run",
            "--demo",
            "roman",
            "--pace",
            "0",
            "--no-cache",
            "--input",
        ])
        .arg(&picture)
        .env("CODELOOP_DATA_DIR", dir.path().join("data"))
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .output()
        .unwrap();
    let progress = String::from_utf8_lossy(&out.stderr);
    assert!(progress.contains("result: PASSED"), "{progress}");
    assert!(
        progress.contains("pic.png (148 B): PNG image, 16 × 12 pixels"),
        "{progress}"
    );
    assert!(!progress.contains("picture pic.png"), "{progress}");
    let sessions = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .arg("sessions")
        .env("CODELOOP_DATA_DIR", dir.path().join("data"))
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&sessions.stdout);
    let said = String::from_utf8_lossy(&sessions.stderr);
    assert!(listed.contains("Convert integers"), "{listed}\n{said}");
    assert!(!said.contains("unreadable"), "{said}");
}
