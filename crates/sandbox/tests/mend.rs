//! The static check's mechanical mends, against real python3 in the
//! sandbox: what a small model gets wrong in the shape of its code (junk
//! after the function that does not parse, tabs, a block indented as a
//! whole, a block's first line a space too deep, a body at the margin, the
//! function under another name) is fixed
//! before anyone is asked to repair it, and said; code no mend can fix, or
//! that needs none, is left as it is. A function with nothing but its
//! docstring is no code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-sandbox-helper");

use codeloop_sandbox::Sandbox;
use codeloop_sandbox::check::{self, CheckInput, Checked};
use tokio_util::sync::CancellationToken;

async fn checked(code: &str, want: &str) -> Checked {
    let input = CheckInput {
        file: format!("{want}.py"),
        code: code.into(),
        defines: vec![want.into()],
        foreign: Default::default(),
        mend: true,
    };
    let sandbox = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER));
    let outcome = sandbox
        .run(
            check::check_run(std::slice::from_ref(&input)),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    check::parse_check(&outcome).unwrap()
}

fn blocking(c: &Checked) -> Vec<String> {
    c.findings
        .iter()
        .filter(|f| f.is_blocking())
        .map(|f| format!("{}: {}", f.kind, f.message))
        .collect()
}

#[tokio::test]
async fn junk_that_does_not_parse_after_a_right_function_is_dropped() {
    // SmolLM2-135M on HumanEval-format `add`: a right body, then this.
    let code = "def add(x: int, y: int):\n    \"\"\"Add two numbers x and y\"\"\"\n    return x + y\n\nprint(\"Inputs:\", [**_main._args])\n";
    let c = checked(code, "add").await;
    assert!(blocking(&c).is_empty(), "{:?}", c.findings);
    let m = &c.mended[0];
    assert_eq!(
        m.code,
        "def add(x: int, y: int):\n    \"\"\"Add two numbers x and y\"\"\"\n    return x + y\n"
    );
    assert_eq!(m.mends.len(), 1, "{:?}", m.mends);
    assert!(
        m.mends[0].contains("dropped 1 top-level statement") && m.mends[0].contains("Inputs"),
        "{:?}",
        m.mends
    );
}

#[tokio::test]
async fn indentation_that_is_mechanically_wrong_is_fixed() {
    for (code, said) in [
        (
            "def f(x):\n\tif x:\n\t\treturn 1\n        return 2\n",
            "tabs and spaces",
        ),
        ("    def f(x):\n        return x\n", "indented"),
        ("def f(x):\nreturn x + 1\n", "at the margin"),
    ] {
        let c = checked(code, "f").await;
        assert!(blocking(&c).is_empty(), "{code:?}: {:?}", c.findings);
        assert_eq!(c.mended.len(), 1, "{code:?}");
        assert!(
            c.mended[0].mends.iter().any(|m| m.contains(said)),
            "{code:?}: {:?}",
            c.mended[0].mends
        );
    }
}

#[tokio::test]
async fn a_function_under_another_name_is_named_as_asked() {
    let c = checked(
        "def countVowels(s):\n    return sum(ch in 'aeiou' for ch in s)\n",
        "count_vowels",
    )
    .await;
    assert!(blocking(&c).is_empty(), "{:?}", c.findings);
    assert!(
        c.mended[0].code.ends_with("count_vowels = countVowels\n"),
        "{}",
        c.mended[0].code
    );
}

#[tokio::test]
async fn code_no_mend_fixes_or_that_needs_none_is_left_alone() {
    let c = checked("def f(x):\n    return \"abc\n", "f").await;
    assert!(c.mended.is_empty(), "{:?}", c.mended);
    assert_eq!(blocking(&c).len(), 1, "{:?}", c.findings);
    assert!(blocking(&c)[0].starts_with("syntax"), "{:?}", c.findings);
    let c = checked("def f(x):\n    return x\n", "f").await;
    assert!(c.mended.is_empty() && c.findings.is_empty(), "{c:?}");
}

#[tokio::test]
async fn a_function_with_only_its_docstring_is_no_code() {
    let c = checked("def f(x):\n    \"\"\"Return x doubled.\"\"\"\n", "f").await;
    let b = blocking(&c);
    assert_eq!(b.len(), 1, "{:?}", c.findings);
    assert!(
        b[0].starts_with("empty") && b[0].contains("only its docstring"),
        "{b:?}"
    );
    let c = checked("def f(x):\n    \"\"\"Doc.\"\"\"\n    pass\n", "f").await;
    assert_eq!(blocking(&c).len(), 1, "{:?}", c.findings);
}

#[tokio::test]
async fn a_first_body_line_indented_one_space_too_deep_is_aligned() {
    // SmolLM2-135M gone on from `def max_of_three(...):` and four spaces:
    // its first token ` max_value` brought a space of its own.
    let code = "def max_of_three(a: int, b: int, c: int) -> int:\n     max_value = max(a, b)\n    max_value = max(max_value, c)\n    return max_value\n";
    let c = checked(code, "max_of_three").await;
    assert!(blocking(&c).is_empty(), "{:?}", c.findings);
    let m = &c.mended[0];
    assert_eq!(
        m.code,
        "def max_of_three(a: int, b: int, c: int) -> int:\n    max_value = max(a, b)\n    max_value = max(max_value, c)\n    return max_value\n"
    );
    assert!(
        m.mends[0].contains("first line was indented deeper"),
        "{:?}",
        m.mends
    );
}
