//! The bundled `sales` demo, as `codeloop run --demo sales` plays it
//! offline: its CSV attached and described, a review before each run, the
//! crash with its values and the lines that ran, each run's figures, and
//! the chart the program drew kept as a picture.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::process::Command;

use codeloop::session::{Event, PictureEvent, State, read_tape};

#[test]
fn the_sales_demo_shows_every_part_of_a_data_task() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["run", "--demo", "sales", "--pace", "0", "--no-cache"])
        .env("CODELOOP_DATA_DIR", dir.path().join("data"))
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("result: PASSED"), "{stderr}");
    assert!(
        stderr.contains("input:   sales.csv (214 B): CSV (comma), 3 columns, 8 rows"),
        "{stderr}"
    );
    let tape = std::fs::read_dir(dir.path().join("data/sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("tape.jsonl"))
        .find(|p| p.exists())
        .unwrap();
    let records = read_tape(&tape).unwrap().records;
    let state = State::from_records(&records);
    // The description the prompts had: the amounts are text, "1,250.00".
    assert!(
        state.inputs[0]
            .description
            .as_ref()
            .unwrap()
            .render()
            .contains("\"1,250.00\"")
    );
    // The review foresaw the crash; the run then crashed there for real.
    let load = &state.nodes["load_sales"];
    let first_review = state.reviews_of(&load.spec.name).next().unwrap();
    assert!(first_review.findings.iter().any(|f| f.line == Some(10)));
    let crash = &state.failures[0].location;
    assert_eq!(crash.line, Some(10), "{crash:?}");
    assert!(
        crash.executed_lines.contains(&10) && crash.missed_lines.contains(&9),
        "{crash:?}"
    );
    assert!(
        crash
            .values
            .iter()
            .any(|s| s.vars.iter().any(|(_, v)| v.contains("2,040.75")))
    );
    // Every run measured; the chart kept.
    assert!(
        state
            .runs
            .values()
            .all(|r| r.record.as_ref().is_some_and(|r| r.resources.is_some()))
    );
    assert!(records.iter().any(|r| matches!(&r.event,
        Event::Picture(PictureEvent { picture, .. }) if picture.name == "chart.png")));
}

#[test]
fn the_program_exported_to_a_folder_has_its_input_beside_it_and_its_tests_pass_there() {
    let dir = tempfile::tempdir().unwrap();
    let codeloop = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_codeloop"))
            .args(args)
            .env("CODELOOP_DATA_DIR", dir.path().join("data"))
            .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let run = codeloop(&["run", "--demo", "sales", "--pace", "0", "--no-cache"]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out = codeloop(&["export", "last", "--format", "py", "-o", "program"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let folder = dir.path().join("program");
    assert_eq!(
        std::fs::read(folder.join("sales.csv")).unwrap(),
        include_bytes!("../assets/demos/sales/sales.csv")
    );
    // Each test file's tests, run where they were written.
    let check = "import glob, importlib, sys\nsys.path.insert(0, '.')\nfor f in sorted(glob.glob('test_*.py')):\n    m = importlib.import_module(f[:-3])\n    for name in dir(m):\n        if name.startswith('test'):\n            getattr(m, name)()\nprint('all passed')\n";
    let python =
        codeloop_sandbox::Sandbox::probe(&codeloop_sandbox::SandboxOptions::from_env()).interpreter;
    let ran = Command::new(python)
        .args(["-c", check])
        .current_dir(&folder)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        "all passed\n",
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
}
