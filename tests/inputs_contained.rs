//! Input files described where a parser's crash cannot take codeloop down
//! (issue 33): each file is described in a child process (codeloop's own
//! binary, `engine::inputs::DESCRIBE_ARG`) under rlimits and a wall clock.
//! Every attack file of the issue is described there, within its budget;
//! a child that dies (its memory held below what describing needs) or
//! overruns its clock is said, with what to do, and the file is attached
//! all the same; `codeloop run` with every attack file as an input goes to
//! its end, as root and as an ordinary user.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use codeloop::engine::inputs::{self, describe_contained, describe_limits};
use codeloop_sandbox::contained::ContainedLimits;

use codeloop_testkit::attack_files;

use codeloop_testkit::prompt_server;
use prompt_server::PromptServer;

use codeloop_testkit::ordinary_user;

/// Each attack file written into `dir`.
fn written(dir: &Path) -> Vec<(&'static str, std::path::PathBuf)> {
    attack_files::all()
        .into_iter()
        .map(|(name, bytes)| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            (name, path)
        })
        .collect()
}

#[test]
fn every_attack_file_is_described_in_its_child_within_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    for (name, path) in written(dir.path()) {
        let (d, cost) = describe_contained(&path, &describe_limits()).unwrap();
        assert!(d.failure().is_none(), "{name}: {}", d.render());
        let cost = cost.unwrap();
        // Far below the child's limit (256 MiB of address space): what a
        // trusting parser took was 0.5 to 48 GB, or forever.
        assert!(
            cost.peak_rss_bytes < 32 << 20,
            "{name}: peak {} MiB",
            cost.peak_rss_bytes >> 20
        );
        eprintln!(
            "{name}: {} — peak {:.1} MiB, {:.0} ms",
            d.summary(),
            cost.peak_rss_bytes as f64 / f64::from(1 << 20),
            cost.wall.as_secs_f64() * 1000.0
        );
    }
}

/// The least address space the describing child starts in (a tiny CSV
/// described), found by trying: what a build maps differs.
fn least_address_space(csv: &Path) -> u64 {
    (16u64..256)
        .step_by(2)
        .map(|mib| mib << 20)
        .find(|&bytes| {
            let limits = ContainedLimits {
                address_space: bytes,
                ..describe_limits()
            };
            describe_contained(csv, &limits).is_ok_and(|(d, _)| d.failure().is_none())
        })
        .unwrap()
}

#[test]
fn a_child_that_dies_or_overruns_is_said_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    std::fs::write(&csv, "a,b\n1,2\n").unwrap();
    let pdf = dir.path().join("pages.pdf");
    std::fs::write(&pdf, attack_files::many_pages_pdf()).unwrap();
    // Just enough memory to start: describing a 4 MB PDF needs more, and
    // the child's allocation fails (an abort, in the child alone).
    let tight = ContainedLimits {
        address_space: least_address_space(&csv),
        ..describe_limits()
    };
    let (d, _) = describe_contained(&pdf, &tight).unwrap();
    let why = d.failure().expect("the child could not describe it");
    assert!(why.contains("needed more memory than the"), "{why}");
    assert_eq!(d.size_bytes, std::fs::metadata(&pdf).unwrap().len());
    assert!(
        d.render()
            .contains("): could not be described (its describing process needed more memory"),
        "{}",
        d.render()
    );
    // A wall clock too short for the child. (Not the tiny CSV: a child
    // that has described it by the time its spawn returns is done in time.)
    let hurried = ContainedLimits {
        wall: Duration::from_millis(1),
        ..describe_limits()
    };
    let (d, _) = describe_contained(&pdf, &hurried).unwrap();
    let why = d.failure().expect("the child was stopped");
    assert!(
        why.contains("took longer than the 0.001 s allowed"),
        "{why}"
    );
    // What no run could read is still refused, with why and what to do.
    let refusal = describe_contained(dir.path(), &describe_limits()).unwrap_err();
    assert!(refusal.why.contains("is a folder"), "{refusal}");
    // And the words a person reads, with what to do.
    assert!(inputs::UNDESCRIBED_TODO.contains("attached and copied into every run"));
}

/// The command's output, or a failure if it has not ended within 3 minutes.
fn bounded(mut c: Command) -> Output {
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
        if started.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            panic!("codeloop did not end");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn reply_for(prompt: &str) -> &'static str {
    if prompt.contains("Write this function") {
        "```python\ndef count_files():\n    return 11\n```"
    } else if prompt.contains("Write tests for this function") {
        "```python\ndef test_count():\n    assert count_files() == 11\n```"
    } else {
        "```json\n{\"functions\": [{\"name\": \"count_files\", \"purpose\": \"How many input files\", \"inputs\": \"\", \"output\": \"int\", \"depends_on\": []}]}\n```"
    }
}

/// `codeloop run` with every attack file as an input, as `user` (None:
/// this process's): it prints each one's description and ends.
fn run_with_every_attack(as_user: Option<(&Path, &Path)>) {
    let server = PromptServer::start(reply_for);
    let scratch = ordinary_user::scratch("attacks");
    let files = written(scratch.path());
    let home = ordinary_user::scratch("attacks-home");
    std::fs::set_permissions(
        home.path(),
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o777),
    )
    .unwrap();
    let mut c = match as_user {
        Some((bin, python)) => {
            let mut c = Command::new("runuser");
            c.args(["-u", ordinary_user::USER, "--"]).arg(bin);
            c.env("HOME", home.path()).env("CODELOOP_PYTHON", python);
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_codeloop")),
    };
    c.args([
        "run",
        "Count the input files",
        "--base-url",
        &server.base_url,
    ]);
    for (_, path) in &files {
        c.arg("--input").arg(path);
    }
    c.arg("--out")
        .arg(home.path().join("out"))
        .env("CODELOOP_DATA_DIR", home.path().join("data"))
        .env("CODELOOP_CACHE_DIR", home.path().join("cache"))
        .env("CODELOOP_CONFIG", home.path().join("none.toml"))
        .current_dir(home.path());
    let out = bounded(c);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("result: PASSED"), "{stderr}");
    for needle in [
        "nested.json (390.6 KB): JSON, an array of 1 array",
        "sst-1e18.xlsx (1.3 KB): xlsx workbook, 1 sheet: S",
        "sst-10m.xlsx (1.3 MB): xlsx workbook, 1 sheet: S",
        "repeated.ods (853 B): ods workbook, 1 sheet: R",
        "sparse.xls (5.5 KB): xls workbook, 1 sheet: Data",
        "endless.parquet (23 B): Parquet, schema not read",
        "schema-4m.parquet (3.8 MB): Parquet, 1000 columns, rows not read",
        "pages-600k.pdf (4.0 MB): PDF, 7 pages",
        "columns.csv (878.9 KB): CSV (comma), 256 columns, 2 rows",
    ] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    assert!(!stderr.contains("could not describe"), "{stderr}");
}

#[test]
fn run_with_every_attack_file_goes_to_its_end() {
    run_with_every_attack(None);
}

#[test]
fn run_with_every_attack_file_goes_to_its_end_as_an_ordinary_user() {
    let Some((_turn, python, dir, bin)) = ordinary_user::ordinary_user(
        "attack-inputs",
        std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")),
    ) else {
        return;
    };
    let _ = dir;
    run_with_every_attack(Some((&bin, Path::new(python))));
}
