//! What a fork server learns of a problem gives each later sample the same
//! program as compiling it whole (see `learned_parts.py`): the same code
//! for every HumanEval problem and hand-made ones, the samples it must not
//! take left to the whole program, the same verdicts from the judge.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::Path;
use std::process::Command;

#[test]
fn learned_parts_are_the_whole_programs() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("python3")
        .arg(here.join("tests/learned_parts.py"))
        .arg(here.join("src"))
        .arg(here.join("../../assets/humaneval/HumanEval.jsonl.gz"))
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.starts_with("ok "),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
