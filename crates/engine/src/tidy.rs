//! The model's tests made judgeable one assertion at a time. A small
//! model writes one test function of many asserts and then calls it at the
//! bottom of the file: the call runs at import, so the first wrong assert
//! fails the whole module as one test (HumanEval/6 on the coder model: six
//! asserts and the task's example, judged "0 of 1"), and the first failing
//! assert hides every other. Taken apart, each assert is a test of its own:
//! how many a version passes means something (never worse, the version
//! kept at a give-up), and one wrong assert can be blamed alone
//! (`blame::suspect_test`).

use super::arity::outside_strings;

/// `tests` without the top-level calls of their own test functions
/// (`test_f()` on a line of its own, `unittest.main()`), which run at
/// import: the harness calls each test itself. The calls taken out, as
/// written.
pub(crate) fn without_calls(tests: &str) -> (String, Vec<String>) {
    let defined: Vec<&str> = tests
        .lines()
        .filter_map(|l| l.strip_prefix("def "))
        .filter_map(|l| l.split_once('(').map(|(name, _)| name.trim()))
        .filter(|name| name.starts_with("test"))
        .collect();
    let mut taken = Vec::new();
    let mut kept = Vec::new();
    for line in tests.lines() {
        let call = line.trim_end();
        let bare = call
            .strip_suffix("()")
            .is_some_and(|name| defined.contains(&name) || name == "unittest.main");
        if bare && !line.starts_with([' ', '\t']) {
            taken.push(call.to_string());
        } else {
            kept.push(line);
        }
    }
    if taken.is_empty() {
        return (tests.to_string(), taken);
    }
    let mut text = kept.join("\n").trim_end().to_string();
    text.push('\n');
    (text, taken)
}

/// `tests` with each top-level test function of two asserts or more, and
/// of nothing but one-line statements, taken apart into one test an assert
/// (`test_f_1`, `test_f_2`, …), each keeping the statements before its
/// assert that are not asserts (its setup). A function with a block, a
/// statement over several lines or parameters (a fixture) stays whole.
/// How many were taken apart.
pub(crate) fn one_assert_each(tests: &str) -> (String, usize) {
    let lines: Vec<&str> = tests.lines().collect();
    let mut out: Vec<String> = Vec::new();
    let mut split = 0;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let Some(name) = line
            .strip_prefix("def ")
            .and_then(|l| l.strip_suffix("():"))
            .filter(|n| {
                n.starts_with("test") && n.chars().all(|c| c.is_alphanumeric() || c == '_')
            })
        else {
            out.push(line.to_string());
            i += 1;
            continue;
        };
        let end = (i + 1..lines.len())
            .find(|&j| !lines[j].trim().is_empty() && !lines[j].starts_with([' ', '\t']))
            .unwrap_or(lines.len());
        let body: Vec<&str> = lines[i + 1..end]
            .iter()
            .copied()
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .collect();
        match apart(name, &body) {
            Some(tests) => {
                split += 1;
                out.push(tests);
                // The blank lines before what follows stay.
                let blank = lines[i + 1..end]
                    .iter()
                    .rev()
                    .take_while(|l| l.trim().is_empty())
                    .count();
                out.extend(std::iter::repeat_n(String::new(), blank));
            }
            None => out.extend(lines[i..end].iter().map(|l| l.to_string())),
        }
        i = end;
    }
    if split == 0 {
        return (tests.to_string(), 0);
    }
    let mut text = out.join("\n");
    if tests.ends_with('\n') {
        text.push('\n');
    }
    (text, split)
}

/// The tests one a test function's `body` (its lines, none blank) makes,
/// when it can be taken apart.
fn apart(name: &str, body: &[&str]) -> Option<String> {
    let indent = body.first()?.len() - body.first()?.trim_start().len();
    let one_line = |l: &&str| {
        let depth = outside_strings(l).fold(0i32, |d, (_, c)| match c {
            '(' | '[' | '{' => d + 1,
            ')' | ']' | '}' => d - 1,
            _ => d,
        });
        l.len() - l.trim_start().len() == indent
            && depth == 0
            && !l.trim_end().ends_with(['\\', ':'])
            && !l.contains("\"\"\"")
            && !l.contains("'''")
    };
    if !body.iter().all(one_line) {
        return None;
    }
    let asserts = body
        .iter()
        .filter(|l| l.trim_start().starts_with("assert "))
        .count();
    if asserts < 2 {
        return None;
    }
    let mut tests = Vec::new();
    let mut setup: Vec<&str> = Vec::new();
    for line in body {
        let statement = line.trim_start();
        if statement.starts_with("assert ") {
            let mut test = format!("def {name}_{}():\n", tests.len() + 1);
            for s in &setup {
                test.push_str(&format!("    {s}\n"));
            }
            test.push_str(&format!("    {statement}"));
            tests.push(test);
        } else if !statement.starts_with("print(") && statement != "pass" {
            setup.push(statement);
        }
    }
    Some(tests.join("\n\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calls_of_its_own_tests_at_import_are_taken_out_and_nothing_else() {
        let tests = "def test_f():\n    assert f(1) == 2\n    test_g()\n\ntest_f()\nunittest.main()\nprint('done')\nhelper()\n";
        let (kept, taken) = without_calls(tests);
        assert_eq!(taken, ["test_f()", "unittest.main()"]);
        assert_eq!(
            kept,
            "def test_f():\n    assert f(1) == 2\n    test_g()\n\nprint('done')\nhelper()\n"
        );
        let (same, none) = without_calls("def test_f():\n    assert f(1) == 2\n");
        assert!(none.is_empty());
        assert_eq!(same, "def test_f():\n    assert f(1) == 2\n");
    }

    #[test]
    fn a_test_of_many_asserts_is_taken_apart_one_assert_a_test_its_setup_kept() {
        let tests = "import math\n\ndef test_f():\n    xs = [1, 2]\n    assert f(xs) == 3, \"Test case 1 failed\"\n    # a comment\n    ys = (3,\n)\n    assert f([]) == 0\n\n\ndef test_g():\n    assert g(1) == 1\n    assert g(2) == 4\n    print(\"All passed\")\n\n\ndef test_h():\n    for x in [1]:\n        assert h(x)\n    assert h(2)\n";
        let (got, n) = one_assert_each(tests);
        // test_f has a statement over two lines: whole; test_h a block: whole.
        assert_eq!(n, 1, "{got}");
        assert_eq!(
            got,
            "import math\n\ndef test_f():\n    xs = [1, 2]\n    assert f(xs) == 3, \"Test case 1 failed\"\n    # a comment\n    ys = (3,\n)\n    assert f([]) == 0\n\n\ndef test_g_1():\n    assert g(1) == 1\n\n\ndef test_g_2():\n    assert g(2) == 4\n\n\ndef test_h():\n    for x in [1]:\n        assert h(x)\n    assert h(2)\n"
        );
        let (got, n) = one_assert_each(
            "def test_f():\n    xs = [1, 2]\n    assert f(xs) == 3\n    ys = []\n    assert f(ys) == 0\n",
        );
        assert_eq!(n, 1);
        assert_eq!(
            got,
            "def test_f_1():\n    xs = [1, 2]\n    assert f(xs) == 3\n\n\ndef test_f_2():\n    xs = [1, 2]\n    ys = []\n    assert f(ys) == 0\n"
        );
        let one = "def test_f():\n    assert f(1) == 2\n";
        assert_eq!(one_assert_each(one), (one.to_string(), 0));
        let fixture = "def test_f(tmp_path):\n    assert f(1)\n    assert f(2)\n";
        assert_eq!(one_assert_each(fixture), (fixture.to_string(), 0));
    }
}
