//! The examples a task states (`f(3) == 6`, `f("ab") -> "ba"`, a doctest's
//! `>>> f(3)` and the line after it) are ground truth: they run as a test
//! of their own beside the model's tests, a model test that contradicts one
//! is corrected to it before any code runs, and no test fix may change them.

/// Name of the test function that holds the task's examples.
pub(crate) const EXAMPLES_TEST: &str = "test_task_examples";

/// One example: a call of the function and the value the task says it returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Example {
    call: String,
    expected: String,
}

/// The text from `start` (an opening bracket or quote) to its match, if it closes.
fn balanced(text: &str) -> Option<&str> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    for (i, c) in text.char_indices() {
        match quote {
            Some(q) if c == q => {
                quote = None;
                if depth == 0 {
                    return Some(&text[..i + c.len_utf8()]);
                }
            }
            Some(_) => {}
            None => match c {
                '\'' | '"' => quote = Some(c),
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(&text[..i + 1]);
                    }
                }
                _ => {}
            },
        }
    }
    None
}

/// A value at the start of `text`: bracketed or quoted as a whole, else up
/// to a space, a comma or a semicolon, without a sentence's final period.
fn value(text: &str) -> Option<String> {
    let text = text.trim_start().trim_start_matches('`');
    let first = text.chars().next()?;
    let v = if matches!(first, '(' | '[' | '{' | '\'' | '"') {
        balanced(text)?.to_string()
    } else {
        let end = text
            .find(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '`'))
            .unwrap_or(text.len());
        text[..end].trim_end_matches(['.', ':']).to_string()
    };
    (!v.is_empty()).then_some(v)
}

/// Whether `text` is made of literals only (numbers, strings, brackets,
/// True/False/None): `f(n) returns the count` states no example.
pub(crate) fn literal(text: &str) -> bool {
    let mut bare = String::new();
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None => bare.push(c),
        }
    }
    quote.is_none()
        && bare
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| {
                w.chars()
                    .next()
                    .is_some_and(|c| c.is_alphabetic() || c == '_')
            })
            .all(|w| matches!(w, "True" | "False" | "None"))
}

impl Example {
    /// The call the example makes: `f(2)`.
    pub(crate) fn call(&self) -> &str {
        &self.call
    }
}

/// The examples of `name` the task states.
pub(crate) fn from_task(task: &str, name: &str) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    let lines: Vec<&str> = task.lines().collect();
    let open = format!("{name}(");
    for (i, line) in lines.iter().enumerate() {
        let mut from = 0;
        while let Some(at) = line[from..].find(&open) {
            let start = from + at;
            from = start + open.len();
            let before = line[..start].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
                continue;
            }
            let Some(call) = balanced(&line[start + name.len()..]) else {
                continue;
            };
            let call = format!("{name}{call}");
            let rest = line[start + call.len()..]
                .trim_start()
                .trim_start_matches('`');
            let rest = rest.trim_start();
            // The longer arrow first (`==>` before `==`, `=>` before `=`):
            // HumanEval's docstrings write all of these.
            let expected = [
                "==>",
                "==",
                "=>",
                "->",
                "→",
                "➞",
                "# =>",
                "returns",
                "should return",
                "gives",
                "=",
            ]
            .iter()
            .find_map(|arrow| rest.strip_prefix(arrow))
            .and_then(value)
            .or_else(|| {
                // A doctest: the next line holds the value.
                let prompt = line.trim_start().strip_prefix(">>>")?;
                (prompt.trim() == call).then_some(())?;
                let next = lines.get(i + 1)?.trim();
                (!next.is_empty() && !next.starts_with(">>>")).then(|| next.to_string())
            });
            if let Some(expected) = expected
                && literal(&call[name.len()..])
                && literal(&expected)
                && !out.iter().any(|e| e.call == call)
            {
                out.push(Example { call, expected });
            }
        }
    }
    out
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// `tests` held to the task's examples: an assertion that compares one of
/// their calls with another value is corrected to the task's value, and the
/// examples are added as a test of their own. The corrected assertions, as
/// `was -> now`, for a notice.
pub(crate) fn ground(tests: &str, examples: &[Example]) -> (String, Vec<String>) {
    if examples.is_empty() || tests.contains(&format!("def {EXAMPLES_TEST}(")) {
        return (tests.to_string(), Vec::new());
    }
    let mut fixed = Vec::new();
    let mut out: Vec<String> = Vec::new();
    for line in tests.lines() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let corrected = trimmed.strip_prefix("assert ").and_then(|body| {
            let (lhs, rhs) = body.split_once("==")?;
            let rhs = rhs.split(" #").next().unwrap_or(rhs);
            // `assert f(x) == v, "message"`: the message is no part of v.
            let rhs = super::arity::top_level(rhs).first().copied().unwrap_or(rhs);
            let e = examples.iter().find(|e| squash(lhs) == squash(&e.call))?;
            (squash(rhs) != squash(&e.expected))
                .then(|| format!("{indent}assert {} == {}", e.call, e.expected))
        });
        match corrected {
            Some(now) => {
                fixed.push(format!("{} -> {}", trimmed, now.trim_start()));
                out.push(now);
            }
            None => out.push(line.to_string()),
        }
    }
    let mut text = out.join("\n");
    text.push_str(&format!(
        "\n\n\ndef {EXAMPLES_TEST}():\n    \"\"\"The examples the task states: ground truth.\"\"\"\n"
    ));
    for e in examples {
        text.push_str(&format!("    assert {} == {}\n", e.call, e.expected));
    }
    (text, fixed)
}

/// The task's examples test in `tests`, if there is one.
pub(crate) fn examples_block(tests: &str) -> Option<&str> {
    let start = tests.find(&format!("def {EXAMPLES_TEST}("))?;
    let rest = &tests[start..];
    let end = rest[1..]
        .find("\ndef ")
        .map(|i| i + 1)
        .unwrap_or(rest.len());
    Some(rest[..end].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_are_read_from_prose_arrows_and_doctests() {
        let task = "Double a number: double(3) == 6, and double(-1) -> -2.\n\
                    >>> double(0)\n0\nAlso redouble(2) == 8 is another function; double(x) alone is no example.";
        let got = from_task(task, "double");
        assert_eq!(
            got,
            vec![
                Example {
                    call: "double(3)".into(),
                    expected: "6".into()
                },
                Example {
                    call: "double(-1)".into(),
                    expected: "-2".into()
                },
                Example {
                    call: "double(0)".into(),
                    expected: "0".into()
                },
            ]
        );
        assert!(
            from_task(
                "double(n) returns twice n; double(2) returns the double",
                "double"
            )
            .is_empty()
        );
        let lists = from_task("`pairs([1, 2])` returns `[(1, 2)]`.", "pairs");
        assert_eq!(lists[0].expected, "[(1, 2)]");
    }

    #[test]
    fn examples_are_read_in_every_arrow_humaneval_writes() {
        let task = "    any_int(5, 2, 7) ➞ True\n    f(1) => 2\n    f(2) ==> 4\n    f(3) = 6\n    f(4) # => 8\n    f(5) => \"a=b\"";
        let calls = |name| {
            from_task(task, name)
                .into_iter()
                .map(|e| format!("{} is {}", e.call, e.expected))
                .collect::<Vec<_>>()
        };
        assert_eq!(calls("any_int"), vec!["any_int(5, 2, 7) is True"]);
        assert_eq!(
            calls("f"),
            vec![
                "f(1) is 2",
                "f(2) is 4",
                "f(3) is 6",
                "f(4) is 8",
                "f(5) is \"a=b\""
            ]
        );
    }

    #[test]
    fn a_test_that_contradicts_an_example_is_corrected_and_the_examples_run() {
        let examples = from_task("double(3) == 6", "double");
        let tests = "def test_three():\n    assert double(3) == 7\n\ndef test_one():\n    assert double(1) == 2";
        let (grounded, fixed) = ground(tests, &examples);
        assert_eq!(
            fixed,
            vec!["assert double(3) == 7 -> assert double(3) == 6"]
        );
        assert!(
            grounded.contains("    assert double(3) == 6\n\ndef test_one"),
            "{grounded}"
        );
        assert_eq!(
            examples_block(&grounded),
            Some(
                "def test_task_examples():\n    \"\"\"The examples the task states: ground truth.\"\"\"\n    assert double(3) == 6"
            )
        );
        assert_eq!(ground(&grounded, &examples).0, grounded, "grounded once");
    }

    #[test]
    fn an_assertions_message_is_no_part_of_the_value_it_expects() {
        let examples = from_task("roman(1994) == 'MCMXCIV'", "roman");
        let agrees = "def test_a():\n    assert roman(1994) == 'MCMXCIV', \"Test case 1 failed\"\n";
        let (_, fixed) = ground(agrees, &examples);
        assert_eq!(fixed, Vec::<String>::new());
        let wrong = "def test_a():\n    assert roman(1994) == 'MCMXCIX', \"Test case 1 failed\"\n";
        assert_eq!(ground(wrong, &examples).1.len(), 1);
    }
}
