//! Coverage of the failing path, against real python3 through the real
//! sandbox: the same trace that records the values says which lines of the
//! node's file ran in the failing test, and which could have and did not.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-sandbox-helper");

use codeloop_protocol::Location;
use codeloop_sandbox::harness::{self, ModuleSource, TestReport};
use codeloop_sandbox::{Limits, Sandbox, locate};
use tokio_util::sync::CancellationToken;

async fn failure(node: &str, code: &str, tests: &str) -> Location {
    let module = ModuleSource {
        name: node.into(),
        code: code.into(),
        deps: vec![],
        exports: vec![],
    };
    let tests = vec![(harness::tests_file_name(node), tests.to_string())];
    let spec = harness::test_run(&[module], node, &tests, Limits::default());
    let files = spec.files.clone();
    let outcome = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))
        .run(spec, None, CancellationToken::new())
        .await
        .unwrap();
    let report = TestReport::from_outcome(&outcome).unwrap();
    let file = format!("{node}.py");
    locate::from_report(&report, &files, std::slice::from_ref(&file), &file).unwrap()
}

const SIGN: &str = "def sign(x):\n    \"\"\"The sign of x.\"\"\"\n    if x > 0:\n        y = 1\n    else:\n        y = 1\n    # the end\n    return y\n\n\ndef unused():\n    return 0\n";

#[tokio::test]
async fn an_if_else_where_one_branch_ran_gives_exactly_its_lines() {
    let loc = failure(
        "sign",
        SIGN,
        "def test_negative():\n    assert sign(-3) == -1\n",
    )
    .await;
    assert_eq!(loc.executed_lines, vec![3, 6, 8], "{loc:?}");
    assert_eq!(loc.missed_lines, vec![4], "{loc:?}");
    let blocks = loc.executed_blocks(SIGN, "sign");
    assert!(blocks.contains("! 4 |         y = 1\n"), "{blocks}");
    assert!(blocks.contains("> 6 |         y = 1\n"), "{blocks}");
}

#[tokio::test]
async fn the_other_branch_and_a_crash_give_their_own_lines() {
    let loc = failure(
        "sign",
        SIGN,
        "def test_positive():\n    assert sign(2) == 2\n",
    )
    .await;
    assert_eq!(loc.executed_lines, vec![3, 4, 8], "{loc:?}");
    assert_eq!(loc.missed_lines, vec![6], "{loc:?}");
    let code = "def half(xs):\n    out = []\n    for x in xs:\n        if x >= 0:\n            out.append(10 // x)\n    return out\n";
    let loc = failure(
        "half",
        code,
        "def test_zero():\n    assert half([2, 0]) == [5]\n",
    )
    .await;
    // The loop and its `if` ran (2, then 0), the return did not: it crashed.
    assert_eq!(loc.executed_lines, vec![2, 3, 4, 5], "{loc:?}");
    assert_eq!(loc.missed_lines, vec![6], "{loc:?}");
}

#[tokio::test]
async fn a_crash_inside_a_with_block_keeps_its_values_and_its_lines() {
    // Leaving a `with` block, the exception passes its line again (the
    // context manager's exit): that is not the exception handled, nor
    // another path. The failing row and the lines that ran are kept.
    let code = "import csv\n\n\ndef load(path):\n    rows = []\n    with open(path, newline=\"\") as fh:\n        for row in csv.DictReader(fh):\n            if not row[\"region\"]:\n                continue\n            rows.append(float(row[\"amount\"]))\n    return rows\n";
    let tests = "def test_thousands():\n    with open(\"t.csv\", \"w\") as fh:\n        fh.write('region,amount\\nWest,\"2,040.75\"\\n')\n    assert load(\"t.csv\") == [2040.75]\n";
    let loc = failure("load", code, tests).await;
    assert_eq!(loc.line, Some(10), "{loc:?}");
    assert_eq!(loc.values_note, None, "{loc:?}");
    assert_eq!(loc.executed_lines, vec![5, 6, 7, 8, 10], "{loc:?}");
    assert_eq!(loc.missed_lines, vec![9, 11], "{loc:?}");
    assert!(
        loc.values.iter().any(|s| s
            .vars
            .iter()
            .any(|(n, v)| n == "row" && v.contains("2,040.75"))),
        "{loc:?}"
    );
}
