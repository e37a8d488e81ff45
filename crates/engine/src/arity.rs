//! The function's signature, where the task gave it (its `def` line: a
//! HumanEval prompt, a task that defines the function), is a fact, like the
//! task's examples: a test of
//! the model's that calls the function with a number of arguments its
//! signature cannot take (`has_close_elements([1.0, 2.0])` of a function of
//! `numbers, threshold`) can never pass, whatever the code, and would send
//! right code to be "repaired". Such a test is left out before any code
//! runs (`without_misfits`). Measured on Qwen2.5-Coder-0.5B under own-test
//! feedback: the first try of HumanEval/0 and /5 failed only on such tests
//! (BENCHMARKS.md).

/// How many arguments a function takes: at least `min` (its required
/// positional parameters), at most `max` positionally (None: `*args`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Arity {
    min: usize,
    max: Option<usize>,
}

/// The characters of `text` outside its string literals (the quotes
/// themselves left out too; a backslash escapes inside a string), with
/// their byte offsets: what every reading of a call or a signature here
/// scans, so a comma, a bracket or a call inside a string counts as none.
pub(crate) fn outside_strings(text: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    text.char_indices().filter(move |&(_, c)| {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            return false;
        }
        if c == '\'' || c == '"' {
            quote = Some(c);
            return false;
        }
        true
    })
}

/// The pieces of `text` split at its top-level commas (outside brackets
/// and strings), trimmed; none for an empty text.
pub(crate) fn top_level(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in outside_strings(text) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(text[start..].trim());
    // A trailing comma (`f(1,)`) leaves an empty last piece.
    if out.last().is_some_and(|p| p.is_empty()) {
        out.pop();
    }
    out
}

/// The text inside the brackets that open at the start of `text`, when
/// they close.
fn bracketed(text: &str) -> Option<&str> {
    let mut depth = 0i32;
    for (i, c) in outside_strings(text) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[1..i]);
                }
            }
            _ => {}
        }
    }
    None
}

impl Arity {
    /// The arity of `name` as the `def` line of it in `head` declares
    /// (`def f(a, b=1, *rest, key=None) -> T:`; a head may define helpers
    /// before it); None when there is no such line.
    pub(crate) fn of_def(head: &str, name: &str) -> Option<Arity> {
        let def = format!("def {name}(");
        let at = head
            .match_indices(&def)
            .map(|(i, _)| i)
            .find(|i| *i == 0 || head[..*i].ends_with(['\n', ' ', '\t']))?;
        let open = at + def.len() - 1;
        let params = bracketed(&head[open..])?;
        let mut min = 0;
        let mut max = Some(0);
        for p in top_level(params) {
            let name = p.split([':', '=']).next().unwrap_or("").trim();
            if name == "/" {
                continue;
            }
            if name == "*" || name.starts_with("**") {
                break; // keyword-only from here
            }
            if name.starts_with('*') {
                max = None;
                break;
            }
            if name.is_empty() {
                return None;
            }
            if !p.contains('=') {
                min += 1;
            }
            max = max.map(|m| m + 1);
        }
        Some(Arity { min, max })
    }

    /// Whether a call with these arguments (the text inside its brackets)
    /// can bind to the signature. An unpacked argument (`*xs`, `**kw`)
    /// might: it is taken as fitting.
    pub(crate) fn fits(self, args: &str) -> bool {
        let pieces = top_level(args);
        if pieces.iter().any(|p| p.starts_with('*')) {
            return true;
        }
        let keyword = |p: &&str| {
            let Some((name, _)) = p.split_once('=') else {
                return false;
            };
            let name = name.trim();
            !name.is_empty()
                && name.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !p.trim_start_matches(name).trim_start().starts_with("==")
        };
        let positional = pieces.iter().filter(|p| !keyword(p)).count();
        let keywords = pieces.len() - positional;
        self.max.is_none_or(|max| positional <= max) && positional + keywords >= self.min
    }

    /// In words: "takes 2 arguments", "takes 1 to 3 arguments".
    pub(crate) fn words(self) -> String {
        let n = |k: usize| {
            if k == 1 {
                "1 argument".to_string()
            } else {
                format!("{k} arguments")
            }
        };
        match self.max {
            Some(max) if max == self.min => format!("takes {}", n(max)),
            Some(max) => format!("takes {} to {}", self.min, n(max)),
            None => format!("takes at least {}", n(self.min)),
        }
    }
}

/// Whether byte `at` of `line` is inside a string literal.
fn quoted(line: &str, at: usize) -> bool {
    !outside_strings(line).any(|(i, _)| i == at)
}

/// The calls of `name` in `line` (not those a string holds): the text
/// inside each call's brackets.
fn calls<'a>(line: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("{name}(");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = line[from..].find(&open) {
        let start = from + at;
        // `other_name(` or `obj.name(` is another function.
        let before = line[..start].chars().next_back();
        let own = !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
            && !quoted(line, start);
        let bracket = start + name.len();
        if own && let Some(inner) = bracketed(&line[bracket..]) {
            out.push(inner);
        }
        from = bracket + 1;
    }
    out
}

/// `tests` without the tests that call `name` with arguments its
/// signature cannot take: a test function whose body makes such a call is
/// left out whole, and so is such an assertion at the top level. The calls
/// left out, for a notice. The task's examples (`test_task_examples`) are
/// never left out.
pub(crate) fn without_misfits(tests: &str, name: &str, arity: Arity) -> (String, Vec<String>) {
    let lines: Vec<&str> = tests.lines().collect();
    let misfit = |line: &str| {
        calls(line, name)
            .into_iter()
            .find(|args| !arity.fits(args))
            .map(|args| format!("{name}({args})"))
    };
    let mut out: Vec<&str> = Vec::new();
    let mut left_out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let top = !line.starts_with([' ', '\t']) && !line.trim().is_empty();
        if top && line.starts_with("def ") {
            // The whole function: its indented lines (and blank ones
            // between them).
            let mut end = i + 1;
            while end < lines.len()
                && (lines[end].starts_with([' ', '\t']) || lines[end].trim().is_empty())
            {
                end += 1;
            }
            let body = &lines[i..end];
            let examples = line.starts_with("def test_task_examples(");
            match body.iter().find_map(|l| misfit(l)).filter(|_| !examples) {
                Some(call) => left_out.push(call),
                None => out.extend_from_slice(body),
            }
            i = end;
            continue;
        }
        match misfit(line).filter(|_| top) {
            Some(call) => left_out.push(call),
            None => out.push(line),
        }
        i += 1;
    }
    let mut text = out.join("\n");
    if tests.ends_with('\n') {
        text.push('\n');
    }
    (text, left_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_def_line_gives_how_many_arguments_it_takes() {
        let of = |h: &str| Arity::of_def(h, "f").unwrap();
        let two = Arity::of_def(
            "from typing import List\n\n\ndef has_close_elements(numbers: List[float], threshold: float) -> bool:\n    \"\"\"Doc.\"\"\"\n",
            "has_close_elements",
        )
        .unwrap();
        assert_eq!(
            two,
            Arity {
                min: 2,
                max: Some(2)
            }
        );
        assert_eq!(two.words(), "takes 2 arguments");
        let opt = of("def f(a, b: Dict[str, int] = {'x': 1}, c=(1, 2)):");
        assert_eq!(
            opt,
            Arity {
                min: 1,
                max: Some(3)
            }
        );
        assert_eq!(opt.words(), "takes 1 to 3 arguments");
        assert_eq!(of("def f(*args):"), Arity { min: 0, max: None });
        assert_eq!(
            of("def f(a, *, key=None):"),
            Arity {
                min: 1,
                max: Some(1)
            }
        );
        assert_eq!(
            of("def f(a, /, b):"),
            Arity {
                min: 2,
                max: Some(2)
            }
        );
        assert_eq!(
            of("def f():"),
            Arity {
                min: 0,
                max: Some(0)
            }
        );
        assert_eq!(Arity::of_def("no def here", "f"), None);
        // A helper defined before it is another function.
        let helper = "def is_palindrome(string: str) -> bool:\n    return string == string[::-1]\n\n\ndef make_palindrome(string: str, extra=0) -> str:\n";
        assert_eq!(
            Arity::of_def(helper, "make_palindrome"),
            Some(Arity {
                min: 1,
                max: Some(2)
            })
        );
        assert_eq!(Arity::of_def(helper, "palindrome"), None);
    }

    #[test]
    fn a_call_fits_when_its_arguments_can_bind() {
        let two = Arity::of_def("def f(numbers, threshold):", "f").unwrap();
        assert!(two.fits("[1.0, 2.0, 3.0], 0.5"));
        assert!(two.fits("[1.0, 2.0], threshold=0.5"));
        assert!(two.fits("'a, b', (1, 2)"));
        assert!(!two.fits("[1.0, 2.0, 3.0]"));
        assert!(!two.fits(""));
        assert!(!two.fits("1, 2, 3"));
        assert!(two.fits("*pair"));
        // A comparison is a positional argument, not a keyword.
        assert!(!two.fits("a == b"));
        let one = Arity::of_def("def f(x):", "f").unwrap();
        assert!(one.fits("'it''s', "));
        assert!(one.fits("\"a\\\"b, c\""));
    }

    #[test]
    fn a_test_calling_the_function_with_the_wrong_arguments_is_left_out_whole() {
        let arity = Arity::of_def(
            "def intersperse(numbers: List[int], delimeter: int):",
            "intersperse",
        )
        .unwrap();
        let tests = "from typing import *\n\n\
            def test_case_1():\n    assert intersperse([1, 2, 3]) == [1, 4, 2, 4, 3]\n\n\n\
            def test_case_2():\n    assert intersperse([1, 2], 0) == [1, 0, 2]\n\n\n\
            def test_case_3():\n    try:\n        intersperse(1)\n    except ValueError:\n        return\n    raise AssertionError(\"intersperse(1) should raise ValueError\")\n\n\n\
            assert intersperse() == []\n\
            assert my_intersperse([1]) == [1]\n\n\n\
            def test_task_examples():\n    assert intersperse([], 4) == []\n";
        let (kept, left_out) = without_misfits(tests, "intersperse", arity);
        assert_eq!(
            left_out,
            ["intersperse([1, 2, 3])", "intersperse(1)", "intersperse()"]
        );
        assert!(
            kept.contains("def test_case_2():\n    assert intersperse([1, 2], 0) == [1, 0, 2]\n"),
            "{kept}"
        );
        assert!(!kept.contains("test_case_1"), "{kept}");
        assert!(!kept.contains("test_case_3"), "{kept}");
        assert!(kept.contains("assert my_intersperse([1]) == [1]"), "{kept}");
        assert!(kept.contains("def test_task_examples():"), "{kept}");
        assert!(kept.starts_with("from typing import *\n"), "{kept}");
        // A call a string names is no call.
        let said =
            "def test_b():\n    assert intersperse([1], 2) == [1], \"intersperse() failed\"\n";
        assert_eq!(
            without_misfits(said, "intersperse", arity).1,
            Vec::<String>::new()
        );
        // Nothing to leave out: the same text.
        let fine = "def test_a():\n    assert intersperse([1], 2) == [1]\n";
        assert_eq!(
            without_misfits(fine, "intersperse", arity),
            (fine.to_string(), vec![])
        );
    }
}
