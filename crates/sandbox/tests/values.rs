//! Runtime values at a failure, against real python3 through the real
//! sandbox: the harness runs a node's tests, a failed test is run again
//! under the values tracer, and the localized failure carries the node's
//! local variables along the failing path.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-sandbox-helper");

use std::time::Duration;

use codeloop_protocol::{Location, Snapshot};
use codeloop_sandbox::harness::{self, ModuleSource, TestReport};
use codeloop_sandbox::{Limits, Outcome, Sandbox, locate};
use tokio_util::sync::CancellationToken;

/// Runs `node`'s tests through the sandbox; the report, the localized first
/// failure, and the outcome.
async fn run(
    node: &str,
    code: &str,
    tests: &str,
    limits: Limits,
) -> (TestReport, Location, Outcome) {
    let module = ModuleSource {
        name: node.into(),
        code: code.into(),
        deps: vec![],
        exports: vec![],
    };
    let tests = vec![(harness::tests_file_name(node), tests.to_string())];
    let spec = harness::test_run(&[module], node, &tests, limits);
    let files = spec.files.clone();
    let outcome = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))
        .run(spec, None, CancellationToken::new())
        .await
        .unwrap();
    let report = TestReport::from_outcome(&outcome).unwrap_or_else(|| {
        panic!(
            "no report: {:?}\n{}{}",
            outcome.limit_hit, outcome.stdout.head, outcome.stderr.head
        )
    });
    let file = format!("{node}.py");
    let loc = locate::from_report(&report, &files, std::slice::from_ref(&file), &file).unwrap();
    (report, loc, outcome)
}

fn snap(line: u32, depth: u32, vars: &[(&str, &str)]) -> Snapshot {
    Snapshot {
        line,
        depth,
        vars: vars
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
    }
}

fn var<'a>(s: &'a Snapshot, name: &str) -> &'a str {
    s.vars
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {name} in {s}"))
}

const ROMAN: &str = "\
def roman(s):
    values = {'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}
    total = 0
    for i, ch in enumerate(s):
        v = values[ch]
        if i + 1 < len(s) and values[s[i + 1]] > v:
            total += v
        else:
            total += v
    return total
";

#[tokio::test]
async fn a_wrong_value_in_a_loop_shows_the_loop_s_last_iteration_and_the_returning_line() {
    let tests = "def test_small():\n    assert roman('III') == 3\n\ndef test_year():\n    assert roman('MCMXCIV') == 1994\n\ndef test_typo():\n    assert romn('I') == 1\n";
    let (report, loc, _) = run("roman", ROMAN, tests, Limits::default()).await;
    assert_eq!((report.passed, report.failed), (1, 2));
    // A test that fails without calling the node's code has no values, and
    // nothing to say about them.
    let typo = report.tests[2].error.as_ref().unwrap();
    assert_eq!(typo.error_type, "NameError");
    assert_eq!((typo.values.len(), typo.values_note.as_deref()), (0, None));
    assert_eq!((loc.file.as_str(), loc.line), ("roman.py", Some(10)));
    assert_eq!(loc.actual.as_deref(), Some("2216"));
    let common = [
        ("s", "'MCMXCIV'"),
        (
            "values",
            "{'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}",
        ),
    ];
    let with = |rest: &[(&'static str, &'static str)]| -> Vec<(&'static str, &'static str)> {
        common.iter().chain(rest).copied().collect()
    };
    assert_eq!(
        loc.values,
        vec![
            // The last iteration: the line before each ran.
            snap(
                5,
                0,
                &with(&[("total", "2211"), ("i", "6"), ("ch", "'V'"), ("v", "1")])
            ),
            snap(
                6,
                0,
                &with(&[("total", "2211"), ("i", "6"), ("ch", "'V'"), ("v", "5")])
            ),
            snap(
                9,
                0,
                &with(&[("total", "2211"), ("i", "6"), ("ch", "'V'"), ("v", "5")])
            ),
            // Where the wrong value was returned from.
            snap(
                10,
                0,
                &with(&[("total", "2216"), ("i", "6"), ("ch", "'V'"), ("v", "5")])
            ),
        ]
    );
    assert_eq!(loc.values_note, None);
    assert_eq!(
        loc.values_trace(),
        "line 5: s='MCMXCIV', values={'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}, total=2211, i=6, ch='V', v=1\n\
         line 6: v=5\n\
         line 9: no change\n\
         line 10: total=2216\n"
    );
}

#[tokio::test]
async fn a_crash_shows_the_locals_at_the_raising_line_after_the_loop_s_lines() {
    let code = "\
def avg_ratio(pairs):
    total = 0.0
    for a, b in pairs:
        scale = a * 2
        r = scale / b
        total += r
    return total / len(pairs)
";
    let tests = "def test_a():\n    assert avg_ratio([(1, 2), (3, 0), (4, 4)]) == 1.0\n";
    let (_, loc, _) = run("avg_ratio", code, tests, Limits::default()).await;
    assert_eq!(loc.error_type, "ZeroDivisionError");
    assert_eq!((loc.file.as_str(), loc.line), ("avg_ratio.py", Some(5)));
    let pairs = ("pairs", "[(1, 2), (3, 0), (4, 4)]");
    assert_eq!(
        loc.values,
        vec![
            snap(
                4,
                0,
                &[
                    pairs,
                    ("total", "1.0"),
                    ("a", "3"),
                    ("b", "0"),
                    ("scale", "2"),
                    ("r", "1.0")
                ]
            ),
            snap(
                5,
                0,
                &[
                    pairs,
                    ("total", "1.0"),
                    ("a", "3"),
                    ("b", "0"),
                    ("scale", "6"),
                    ("r", "1.0")
                ]
            ),
        ]
    );
    assert_eq!(loc.values_note, None);
}

#[tokio::test]
async fn huge_broken_slow_and_self_containing_values_are_cut_short() {
    let code = "\
class Broken:
    def __repr__(self):
        raise ValueError('no repr for you')

class Slow:
    def __repr__(self):
        while True:
            pass

def build(n):
    xs = list(range(n))
    index = dict.fromkeys(range(n), 'v')
    text = 'x' * n
    broken = Broken()
    slow = Slow()
    me = []
    me.append(me)
    helper = len
    return len(xs) + 1
";
    let tests = "def test_a():\n    assert build(1_000_000) == 1_000_000\n";
    let (_, loc, _) = run("build", code, tests, Limits::default()).await;
    assert_eq!(loc.line, Some(19));
    let [at_return] = loc.values.as_slice() else {
        panic!("one snapshot expected: {:?}", loc.values)
    };
    assert_eq!(at_return.line, 19);
    let names: Vec<&str> = at_return.vars.iter().map(|(n, _)| n.as_str()).collect();
    // No functions (helper = len), classes or modules.
    assert_eq!(names, ["n", "xs", "index", "text", "broken", "slow", "me"]);
    for (name, value) in &at_return.vars {
        assert!(value.chars().count() <= 80, "{name}={value}");
    }
    assert!(var(at_return, "xs").starts_with("[0, 1, 2, 3, "));
    assert!(var(at_return, "xs").ends_with("..."));
    assert!(var(at_return, "index").starts_with("{0: 'v', 1: 'v', "));
    assert!(var(at_return, "text").starts_with("'xxxxxxxx"));
    assert!(var(at_return, "text").ends_with("..."));
    assert_eq!(
        var(at_return, "broken"),
        "<repr failed: ValueError: no repr for you>"
    );
    assert_eq!(var(at_return, "slow"), "<repr too slow>");
    assert_eq!(var(at_return, "me"), "[[[[...]]]]");
}

#[tokio::test]
async fn a_recursion_shows_its_innermost_calls_and_the_outermost() {
    let code = "\
def fact(n):
    if n == 0:
        return 0
    return n * fact(n - 1)
";
    let tests = "def test_a():\n    assert fact(5) == 120\n";
    let (_, loc, _) = run("fact", code, tests, Limits::default()).await;
    assert_eq!(loc.line, Some(4));
    assert_eq!(
        loc.values,
        vec![
            snap(3, 5, &[("n", "0")]),
            snap(4, 4, &[("n", "1")]),
            snap(4, 3, &[("n", "2")]),
            snap(4, 0, &[("n", "5")]),
        ]
    );
    assert_eq!(
        loc.values_trace(),
        "line 3 (depth 5): n=0\nline 4 (depth 4): n=1\nline 4 (depth 3): n=2\nline 4: n=5\n"
    );

    let code = "\
def down(n):
    step = n + 1
    return down(step)
";
    let tests = "def test_a():\n    assert down(3) == 0\n";
    let (_, loc, _) = run("down", code, tests, Limits::default()).await;
    assert_eq!(loc.error_type, "RecursionError");
    let depths: Vec<u32> = loc.values.iter().map(|s| s.depth).collect();
    let [0, a, b, c] = depths.as_slice() else {
        panic!("the outermost call and three innermost: {:?}", loc.values)
    };
    assert!(*a > 100 && *b == a + 1 && *c == b + 1, "{depths:?}");
    assert_eq!(loc.values[0], snap(3, 0, &[("n", "3"), ("step", "4")]));
    for s in &loc.values[1..] {
        let n: u32 = var(s, "n").parse().unwrap();
        assert_eq!(n, s.depth + 3, "{s}");
    }
}

#[tokio::test]
async fn a_hang_shows_the_values_where_it_was_stopped() {
    let code = "\
def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else n
        steps += 1
    return steps
";
    let tests = "def test_a():\n    assert collatz_steps(6) == 8\n";
    let limits = Limits {
        wall: Duration::from_secs(5),
        ..Limits::default()
    };
    let (_, loc, outcome) = run("collatz_steps", code, tests, limits).await;
    assert_eq!(outcome.limit_hit, None);
    assert_eq!(loc.error_type, "Timeout");
    let [at_stop] = loc.values.as_slice() else {
        panic!("one snapshot expected: {:?}", loc.values)
    };
    assert!(matches!(at_stop.line, 3..=5), "{at_stop}");
    assert_eq!(var(at_stop, "n"), "3");
}

#[tokio::test]
async fn no_environment_value_of_codeloop_reaches_the_values() {
    let code = "\
import os

def env_size():
    env = sorted(os.environ.items())
    manifest_dir = os.environ.get('CARGO_MANIFEST_DIR')
    for name, value in env:
        seen = name + '=' + value
    return len(env) + 100
";
    let tests = "def test_a():\n    assert env_size() == 0\n";
    let (_, loc, _) = run("env_size", code, tests, Limits::default()).await;
    assert!(!loc.values.is_empty());
    let last = loc.values.last().unwrap();
    assert_eq!(var(last, "manifest_dir"), "None");
    let text = loc.values_trace();
    // What the sandbox gives its runs itself may appear (its PATH, locale,
    // terminal and its working directory under /tmp/codeloop-run-*);
    // nothing else of ours.
    let own = "/usr/local/bin:/usr/bin:/bin C.UTF-8 dumb /tmp/codeloop-run-";
    let mut checked = 0;
    for (name, value) in std::env::vars() {
        if value.len() < 6 || own.contains(value.as_str()) {
            continue;
        }
        checked += 1;
        assert!(
            !text.contains(&value),
            "{name}'s value reached the sandbox:\n{text}"
        );
    }
    assert!(checked > 0, "cargo test sets CARGO_* variables");
}

#[tokio::test]
async fn a_loop_of_ten_million_iterations_is_traced_within_the_time() {
    let code = "\
def count(n):
    total = 0
    for i in range(n):
        total += i % 3
    return total + 1
";
    let tests = "def test_a():\n    assert count(10_000_000) == 9999999\n";
    // Room for the slow machine the tests may run on: what is checked is
    // that the re-run under the tracer finishes, not how fast.
    let limits = Limits {
        wall: Duration::from_secs(60),
        cpu_secs: 60,
        ..Limits::default()
    };
    let (report, loc, outcome) = run("count", code, tests, limits).await;
    assert_eq!(outcome.limit_hit, None);
    assert_eq!(report.failed, 1);
    assert_eq!(loc.error_type, "AssertionError");
    assert_eq!(loc.line, Some(5));
    assert_eq!(
        loc.values,
        vec![snap(
            5,
            0,
            &[("n", "10000000"), ("total", "9999999"), ("i", "9999999")]
        )]
    );
    assert_eq!(
        loc.values_note.as_deref(),
        Some("a loop ran too long to record each line: its last iteration is not shown")
    );
}

#[tokio::test]
async fn values_are_the_tested_node_s_even_when_a_dependency_raised() {
    let parse = "def parse(s):\n    a, b = s.split(',')\n    return int(a), int(b)\n";
    let total =
        "def total(s):\n    cleaned = s.strip()\n    a, b = parse(cleaned)\n    return a + b\n";
    let modules = [
        ModuleSource {
            name: "parse".into(),
            code: parse.into(),
            ..ModuleSource::default()
        },
        ModuleSource {
            name: "total".into(),
            code: total.into(),
            deps: vec!["parse".into()],
            exports: vec![],
        },
    ];
    let tests = vec![(
        harness::tests_file_name("total"),
        "def test_a():\n    assert total(' 1;2 ') == 3\n".to_string(),
    )];
    let spec = harness::test_run(&modules, "total", &tests, Limits::default());
    let files = spec.files.clone();
    let outcome = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))
        .run(spec, None, CancellationToken::new())
        .await
        .unwrap();
    let report = TestReport::from_outcome(&outcome).unwrap();
    let code_files = ["parse.py".to_string(), "total.py".to_string()];
    let loc = locate::from_report(&report, &files, &code_files, "total.py").unwrap();
    assert_eq!((loc.file.as_str(), loc.line), ("parse.py", Some(2)));
    // Lines of total.py: where it called the dependency that raised.
    assert_eq!(
        loc.values,
        vec![snap(3, 0, &[("s", "' 1;2 '"), ("cleaned", "'1;2'")])]
    );
}

#[tokio::test]
async fn a_test_that_passes_when_run_again_says_so_instead_of_showing_other_values() {
    let code = "\
CALLS = []

def flaky(x):
    CALLS.append(x)
    doubled = x * 2
    return doubled + (1 if len(CALLS) == 1 else 0)
";
    let tests = "def test_a():\n    assert flaky(2) == 4\n";
    let (_, loc, _) = run("flaky", code, tests, Limits::default()).await;
    assert_eq!(loc.error_type, "AssertionError");
    assert_eq!(loc.values, vec![]);
    assert_eq!(
        loc.values_note.as_deref(),
        Some("the test took another path when run again: no values were recorded")
    );
}
