//! Replies as real models write them (crates/engine/tests/fixtures/replies/): reasoning
//! blocks holding drafts, any fence, prose around the code, several blocks,
//! `>>>` sessions, `__main__` blocks, plans in prose, with comments, cut off.
//! Code is extracted twice: with the Rust reading of Python the engine uses,
//! and with the real `ast.parse` as the parser; both must agree exactly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::cell::Cell;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use codeloop_engine::extract::{
    extract_code, extract_code_with, extract_plan, looks_like_python, prose_before_code,
    strip_reasoning,
};

fn reply(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/replies/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The real interpreter (python3 is a slow shim here): resolved once.
fn python() -> &'static str {
    static PY: OnceLock<String> = OnceLock::new();
    PY.get_or_init(|| {
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 runs");
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .trim()
            .to_string()
    })
}

/// Whether Python's own parser accepts `src`.
fn ast_parses(src: &str) -> bool {
    let mut child = Command::new(python())
        .args(["-c", "import ast,sys; ast.parse(sys.stdin.read())"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(src.as_bytes())
        .expect("write");
    child.wait().expect("python ends").success()
}

/// The code of a reply, the same with either parser; also checks that the
/// result is Python (by `ast.parse`) and says how many times the oracle ran.
fn code(text: &str, want: Option<&str>) -> Option<String> {
    let by_rust = extract_code(text, want);
    let calls = Cell::new(0usize);
    let oracle = |src: &str| {
        calls.set(calls.get() + 1);
        ast_parses(src)
    };
    let by_python = extract_code_with(text, want, &oracle);
    assert_eq!(by_rust, by_python, "the two parsers disagree");
    assert!(
        calls.get() <= 2 * text.lines().count() + 2,
        "{} oracle calls",
        calls.get()
    );
    if let Some(c) = &by_rust {
        assert!(ast_parses(c), "extracted code does not parse:\n{c}");
    }
    by_rust
}

#[test]
fn qwen_prose_before_and_an_explanation_after() {
    assert_eq!(
        code(&reply("qwen25_coder_prose.md"), Some("count_vowels")).as_deref(),
        Some(
            "def count_vowels(text: str) -> int:\n    \"\"\"Count the vowels in text, in either case.\"\"\"\n    return sum(1 for ch in text.lower() if ch in \"aeiou\")\n"
        )
    );
}

#[test]
fn example_calls_in_the_chosen_block_are_dropped() {
    assert_eq!(
        code(
            &reply("qwen25_coder_usage_in_block.md"),
            Some("running_total")
        )
        .as_deref(),
        Some(
            "from typing import List\n\ndef running_total(xs: List[int]) -> List[int]:\n    out = []\n    acc = 0\n    for x in xs:\n        acc += x\n        out.append(acc)\n    return out\n"
        )
    );
}

#[test]
fn a_draft_inside_think_is_never_the_code() {
    let text = reply("deepseek_r1_think_draft.md");
    assert_eq!(
        code(&text, Some("second_largest")).as_deref(),
        Some(
            "def second_largest(xs: list[int]) -> int:\n    unique = sorted(set(xs))\n    if len(unique) < 2:\n        raise ValueError(\"need at least two distinct values\")\n    return unique[-2]\n"
        )
    );
    let (answer, reasoning) = strip_reasoning(&text);
    assert!(reasoning.starts_with("Okay, the user wants"));
    assert!(reasoning.ends_with("fewer than two distinct values."));
    assert!(answer.starts_with("\n\nTo find the second largest"));
    assert_eq!(
        prose_before_code(&text),
        "To find the second largest distinct value, sort the unique values:"
    );
}

#[test]
fn a_think_block_the_template_opened_is_reasoning() {
    let text = reply("template_opened_think.md");
    assert_eq!(
        code(&text, Some("is_palindrome")).as_deref(),
        Some(
            "def is_palindrome(s: str) -> bool:\n    cleaned = [c.lower() for c in s if c.isalnum()]\n    return cleaned == cleaned[::-1]\n"
        )
    );
    assert_eq!(prose_before_code(&text), "Here is the function:");
}

#[test]
fn a_reply_whose_only_code_is_an_unclosed_draft_has_no_code() {
    assert_eq!(code(&reply("think_draft_only.md"), Some("clamp")), None);
    assert_eq!(prose_before_code(&reply("think_draft_only.md")), "");
}

#[test]
fn tilde_and_four_backtick_fences() {
    assert_eq!(
        code(&reply("tilde_fence.md"), Some("add")).as_deref(),
        Some("def add(a: int, b: int) -> int:\n    return a + b\n")
    );
    assert_eq!(
        code(&reply("four_backticks.md"), Some("fence")).as_deref(),
        Some(
            "def fence(code: str) -> str:\n    \"\"\"Wrap code in a Markdown fence.\n\n    ```\n    print(1)\n    ```\n    \"\"\"\n    return \"```python\\n\" + code + \"\\n```\"\n"
        )
    );
}

#[test]
fn crlf_line_endings() {
    let text = "Here:\r\n```python\r\ndef f(x):\r\n    return x\r\n```\r\nDone.\r\n";
    assert_eq!(
        code(text, Some("f")).as_deref(),
        Some("def f(x):\n    return x\n")
    );
    let unfenced = "Here:\r\n\r\ndef f(x):\r\n    return x\r\n\r\nDone.\r\n";
    assert_eq!(
        code(unfenced, Some("f")).as_deref(),
        Some("def f(x):\n    return x\n")
    );
}

#[test]
fn helper_main_and_usage_in_three_blocks() {
    assert_eq!(
        code(&reply("several_blocks.md"), Some("word_counts")).as_deref(),
        Some(
            "import re\n\n\ndef normalize(word: str) -> str:\n    return re.sub(r\"[^a-z]\", \"\", word.lower())\n\n\nfrom collections import Counter\n\ndef word_counts(text: str) -> dict[str, int]:\n    words = (normalize(w) for w in text.split())\n    return dict(Counter(w for w in words if w))\n"
        )
    );
}

#[test]
fn an_example_assignment_elsewhere_is_not_a_helper() {
    let text = "```python\nRATE = 2\n```\n\n```python\ndef total(xs):\n    result = sum(xs) * RATE\n    return result\n\ntotal = functools.cache(total)\n```\n\n```python\nimport functools\nresult = total([1, 2])\nprint(result)\n```\n";
    assert_eq!(
        code(text, Some("total")).as_deref(),
        Some(
            "import functools\n\n\nRATE = 2\n\n\ndef total(xs):\n    result = sum(xs) * RATE\n    return result\n\ntotal = functools.cache(total)\n"
        )
    );
}

#[test]
fn a_doctest_session_is_not_code() {
    let text = reply("doctest_block.md");
    let want = "def double(x: int) -> int:\n    return 2 * x\n";
    assert_eq!(code(&text, Some("double")).as_deref(), Some(want));
    assert_eq!(code(&text, None).as_deref(), Some(want));
    assert_eq!(code("```python\n>>> double(4)\n8\n```", None), None);
}

#[test]
fn the_main_block_is_dropped() {
    assert_eq!(
        code(&reply("main_guard.md"), Some("parse_count")).as_deref(),
        Some("import sys\n\ndef parse_count(argv: list[str]) -> int:\n    return int(argv[1])\n")
    );
}

#[test]
fn unfenced_code_loses_the_prose_around_it() {
    assert_eq!(
        code(&reply("unfenced_prose_around.md"), Some("hypot")).as_deref(),
        Some(
            "import math\n\ndef hypot(a: float, b: float) -> float:\n    return math.sqrt(a * a + b * b)\n"
        )
    );
    assert_eq!(
        code(&reply("unfenced_constant_first.md"), Some("cap")).as_deref(),
        Some("LIMIT = 10\n\ndef cap(x: int) -> int:\n    return min(x, LIMIT)\n")
    );
    assert_eq!(
        prose_before_code(&reply("unfenced_prose_around.md")),
        "Sure! Here is the implementation:"
    );
}

#[test]
fn unfenced_code_with_prose_between_two_functions() {
    let text = "A helper:\n\ndef base(x):\n    return x * 10\n\nNow the main one, which calls it:\n\ndef scaled(x):\n    return base(x) + 1\n\nprint(scaled(2))  # 21\n\nThat's all.\n";
    assert_eq!(
        code(text, Some("scaled")).as_deref(),
        Some("def base(x):\n    return x * 10\n\n\ndef scaled(x):\n    return base(x) + 1\n")
    );
}

#[test]
fn only_python_fences_are_code() {
    for lang in ["python", "py", "python3", "Python", "{.python}", ""] {
        let text = format!("```{lang}\ndef f():\n    return 1\n```\n");
        assert_eq!(
            code(&text, Some("f")).as_deref(),
            Some("def f():\n    return 1\n"),
            "{lang}"
        );
    }
    for lang in ["json", "bash", "text", "output", "console", "pycon"] {
        let text = format!("```{lang}\ndef f():\n    return 1\n```\n");
        assert_eq!(code(&text, Some("f")), None, "{lang}");
    }
}

#[test]
fn unfenced_code_with_a_syntax_error_is_kept_for_the_check_without_the_prose_after() {
    let text = "Here it is:\n\ndef f(x):\n    return x +\n\nThis adds one to x.\n";
    let code = extract_code(text, Some("f"));
    assert_eq!(code.as_deref(), Some("def f(x):\n    return x +\n"));
}

#[test]
fn indented_unfenced_code_is_dedented() {
    let text = "The code:\n\n    def f(x):\n        return x + 1\n\nThat's it.\n";
    assert_eq!(
        code(text, Some("f")).as_deref(),
        Some("def f(x):\n    return x + 1\n")
    );
}

#[test]
fn a_reply_without_code_gives_none() {
    assert_eq!(code(&reply("no_code.md"), Some("f")), None);
    assert_eq!(code("```json\n{\"a\": 1}\n```", None), None);
    assert_eq!(
        code("```bash\npython main.py\n```\nRun it like that.", None),
        None
    );
}

#[test]
fn a_plan_after_prose_with_braces() {
    let specs = extract_plan(&reply("plan_prose_braces.md")).expect("a plan");
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["read_rows", "total"]);
    assert_eq!(specs[1].depends_on, ["read_rows"]);
    assert_eq!(specs[1].inputs, "rows: list[dict]");
}

#[test]
fn a_plan_with_trailing_commas_and_comments() {
    let specs = extract_plan(&reply("plan_commas_comments.md")).expect("a plan");
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["parse", "total"]);
    assert_eq!(specs[0].purpose, "Parse the numbers");
    assert_eq!(specs[1].inputs, "text: str");
    assert_eq!(specs[1].depends_on, ["parse"]);
}

#[test]
fn a_plan_cut_off_says_so() {
    let err = extract_plan(&reply("plan_truncated.md")).expect_err("no plan");
    assert!(
        err.starts_with("the reply's JSON plan is cut off before its end"),
        "{err}"
    );
}

#[test]
fn a_plan_in_reasoning_is_not_the_plan() {
    let specs = extract_plan(&reply("plan_after_think.md")).expect("a plan");
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["load", "main"]);
    assert_eq!(specs[1].depends_on, ["load"]);
}

#[test]
fn no_plan_and_an_invalid_plan_say_what_is_wrong() {
    assert_eq!(
        extract_plan("I'll use {name} placeholders, but here is no plan.").expect_err("none"),
        "the reply holds no JSON plan: reply with one ```json block holding {\"functions\": [...]}"
    );
    assert_eq!(
        extract_plan("{\"functions\": [{\"purpose\": \"no name\"}]}").expect_err("invalid"),
        "function 1 in the plan is not valid: missing field `name`"
    );
    assert_eq!(
        extract_plan("```json\n{\"functions\": []}\n```").expect_err("empty"),
        "the plan lists no functions; list at least one"
    );
}

/// The Rust reading of Python against `ast.parse`, on every run of lines of
/// every fixture: they must agree on each one (prose, code, and the runs that
/// start or end in the middle of either).
#[test]
fn the_rust_reading_agrees_with_ast_parse() {
    let mut snippets: Vec<String> = Vec::new();
    let dir = format!("{}/tests/fixtures/replies", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("plan_"))
        .collect();
    names.sort();
    for name in &names {
        let text = reply(name);
        let lines: Vec<&str> = text.lines().collect();
        for s in 0..lines.len() {
            for e in s + 1..=lines.len() {
                snippets.push(lines[s..e].join("\n") + "\n");
            }
        }
    }
    let verdicts = ast_verdicts(&snippets);
    let mut disagree = Vec::new();
    for (src, python_ok) in snippets.iter().zip(&verdicts) {
        if looks_like_python(src) != *python_ok {
            disagree.push(format!("python says {python_ok}:\n{src}"));
        }
    }
    assert!(
        disagree.is_empty(),
        "{} of {} runs of lines disagree; first:\n{}",
        disagree.len(),
        snippets.len(),
        disagree.first().map(String::as_str).unwrap_or("")
    );
    eprintln!(
        "{} runs of lines from {} fixtures: all agree",
        snippets.len(),
        names.len()
    );
}

/// The Rust reading must never reject Python that parses (it would cut a
/// function short): every whole module and every run of 1, 3, 10 and 25 lines
/// from every seventh line of a few modules of the interpreter's own library.
#[test]
fn the_rust_reading_never_rejects_python_that_parses() {
    let out = Command::new(python())
        .args(["-c", "import os; print(os.path.dirname(os.__file__))"])
        .output()
        .expect("python runs");
    let lib = String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_string();
    let mut snippets: Vec<String> = Vec::new();
    for module in [
        "textwrap.py",
        "json/decoder.py",
        "heapq.py",
        "fractions.py",
        "dataclasses.py",
        "functools.py",
        "statistics.py",
        "argparse.py",
        "enum.py",
        "inspect.py",
    ] {
        let text = std::fs::read_to_string(format!("{lib}/{module}")).expect("a stdlib module");
        let lines: Vec<&str> = text.lines().collect();
        snippets.push(text.clone());
        for s in (0..lines.len()).step_by(7) {
            for len in [1, 3, 10, 25] {
                if let Some(run) = lines.get(s..s + len) {
                    snippets.push(run.join("\n") + "\n");
                }
            }
        }
    }
    let verdicts = ast_verdicts(&snippets);
    let rejected: Vec<&String> = snippets
        .iter()
        .zip(&verdicts)
        .filter(|(src, ok)| **ok && !looks_like_python(src))
        .map(|(src, _)| src)
        .collect();
    assert!(
        rejected.is_empty(),
        "{} of {} valid snippets rejected; first:\n{}",
        rejected.len(),
        snippets.len(),
        rejected.first().map(|s| s.as_str()).unwrap_or("")
    );
    let valid = verdicts.iter().filter(|ok| **ok).count();
    assert!(
        valid > 1000,
        "only {valid} valid snippets: the corpus is too small"
    );
}

/// `ast.parse` on many sources in one process.
fn ast_verdicts(sources: &[String]) -> Vec<bool> {
    let script = "import ast,json,sys\nout=[]\nfor s in json.load(sys.stdin):\n    try:\n        ast.parse(s); out.append(True)\n    except Exception:\n        out.append(False)\nprint(json.dumps(out))";
    let mut child = Command::new(python())
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python starts");
    let input = serde_json::to_string(sources).expect("json");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("python ends");
    serde_json::from_slice(&out.stdout).expect("verdicts")
}
