//! Tests as data: a function's tests asked for as cases (the arguments of a
//! call and the value it returns, or the exception it raises, each a Python
//! literal) under the server's JSON schema, and rendered into the test file
//! codeloop runs. A small model cannot write a test file that holds (it
//! defines the function again, or writes prose), but held to a schema it
//! writes cases. A case that is not literals, or that repeats or contradicts
//! one before it, is left out; the task's own examples still win
//! (`examples::ground`).
//!
//! Code tests stay for models that write them well (`TestsFormat::Code`),
//! and each way falls back to the other when a reply is unusable: a data
//! reply that holds a test file is read as one, and code tests that define
//! the function under test lose that definition and keep their assertions
//! (`without_redefinitions`).

use serde_json::Value;

use super::examples::literal;
use super::extract;

/// The most cases a reply may give (the prompt asks for 3 to 6).
pub(crate) const MAX_CASES: usize = 8;
/// The longest literal of a case, in characters.
pub(crate) const MAX_LITERAL: usize = 200;

/// How a node's tests are asked for (`tests = "data"` or `"code"` in the
/// config). Code by default: measured on SmolLM2-135M (llama-server,
/// temperature 0, five one-line tasks), held to the cases' schema it
/// copied the prompt's placeholders or wrote `"args": "expected"`, while a
/// test function begun for it (`generate::tests_prefill`) got calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestsFormat {
    /// As cases under a JSON schema, rendered into a test file.
    Data,
    /// As a test file the model writes.
    #[default]
    Code,
}

/// One case: `name(args)` returns `expected`, or raises `raises`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Case {
    pub(crate) args: String,
    pub(crate) outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Returns(String),
    Raises(String),
}

/// The cases of a reply (its JSON object, bare, fenced or amid prose), each
/// checked; the error says what is wrong when none is usable. `left_out`:
/// how many cases were not literals or repeated one before.
pub(crate) fn read(reply: &str, name: &str) -> Result<(Vec<Case>, usize), String> {
    let (answer, _) = extract::strip_reasoning(reply);
    let object = answer
        .char_indices()
        .filter(|(_, c)| *c == '{')
        .find_map(|(i, _)| {
            let mut values = serde_json::Deserializer::from_str(&answer[i..]).into_iter::<Value>();
            match values.next() {
                Some(Ok(v @ Value::Object(_))) if v.get("cases").is_some() => Some(v),
                _ => None,
            }
        })
        .ok_or_else(|| "no JSON object with cases in the reply".to_string())?;
    let Some(items) = object.get("cases").and_then(Value::as_array) else {
        return Err("`cases` is not a list".into());
    };
    let mut cases: Vec<Case> = Vec::new();
    let mut left_out = 0;
    for item in items.iter().take(MAX_CASES) {
        match case(item, name) {
            Some(c) if !cases.iter().any(|k| k.args == c.args) => cases.push(c),
            _ => left_out += 1,
        }
    }
    left_out += items.len().saturating_sub(MAX_CASES);
    if cases.is_empty() {
        return Err(format!(
            "none of the {} cases is a call with literal arguments and a literal result",
            items.len()
        ));
    }
    Ok((cases, left_out))
}

/// A literal as the model wrote it: a string, or a number or boolean it
/// wrote bare (a model held to strings still writes `"expected": 5`).
fn text_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(if *b { "True" } else { "False" }.to_string()),
        Value::Null => Some("None".to_string()),
        _ => None,
    }
}

fn case(item: &Value, name: &str) -> Option<Case> {
    let mut args = text_of(item.get("args"))?;
    // `f(1, 2)` for the arguments: the call's own brackets dropped.
    if let Some(inner) = args
        .strip_prefix(&format!("{name}("))
        .and_then(|a| a.strip_suffix(')'))
    {
        args = inner.to_string();
    }
    let expected = text_of(item.get("expected"))?;
    let outcome = match expected.strip_prefix("raises ") {
        Some(exception) => {
            let exception = exception.trim();
            let identifier = !exception.is_empty()
                && exception
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !exception.starts_with(|c: char| c.is_ascii_digit());
            identifier.then(|| Outcome::Raises(exception.to_string()))?
        }
        None => Outcome::Returns(expected),
    };
    // `...` is a literal, but only ever the prompt's placeholder copied.
    let value_ok = match &outcome {
        Outcome::Returns(v) => !v.is_empty() && v.len() <= MAX_LITERAL && literal(v) && v != "...",
        Outcome::Raises(_) => true,
    };
    if args == "..." {
        return None;
    }
    (args.len() <= MAX_LITERAL && literal(&args) && value_ok && !args.contains('\n'))
        .then_some(Case { args, outcome })
}

/// The test file of `name`'s cases: one test function a case.
pub(crate) fn render(name: &str, cases: &[Case]) -> String {
    let mut out = String::new();
    for (k, c) in cases.iter().enumerate() {
        if k > 0 {
            out.push_str("\n\n");
        }
        let call = format!("{name}({})", c.args);
        match &c.outcome {
            Outcome::Returns(v) => {
                out.push_str(&format!(
                    "def test_case_{}():\n    assert {call} == {v}\n",
                    k + 1
                ));
            }
            Outcome::Raises(e) => {
                out.push_str(&format!(
                    "def test_case_{}():\n    try:\n        {call}\n    except {e}:\n        return\n    raise AssertionError(\"{} should raise {e}\")\n",
                    k + 1,
                    call.replace('\\', "\\\\").replace('"', "\\\"")
                ));
            }
        }
    }
    out
}

/// Tests with their top-level definitions of `names` (functions of the
/// plan) taken out, and how many were: the tests then call the real code.
pub(crate) fn without_redefinitions(tests: &str, names: &[String]) -> (String, usize) {
    extract::drop_definitions(tests, names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_are_read_checked_and_rendered() {
        let reply = "Here:\n```json\n{\"cases\": [\
            {\"args\": \"'hello'\", \"expected\": \"2\"},\
            {\"args\": \"count_vowels('sky')\", \"expected\": 0},\
            {\"args\": \"'hello'\", \"expected\": \"3\"},\
            {\"args\": \"x\", \"expected\": \"1\"},\
            {\"args\": \"None\", \"expected\": \"raises TypeError\"}\
            ]}\n```";
        let (cases, left_out) = read(reply, "count_vowels").unwrap();
        assert_eq!(left_out, 2, "a repeated call and a name are left out");
        assert_eq!(
            cases,
            vec![
                Case {
                    args: "'hello'".into(),
                    outcome: Outcome::Returns("2".into())
                },
                Case {
                    args: "'sky'".into(),
                    outcome: Outcome::Returns("0".into())
                },
                Case {
                    args: "None".into(),
                    outcome: Outcome::Raises("TypeError".into())
                },
            ]
        );
        assert_eq!(
            render("count_vowels", &cases),
            "def test_case_1():\n    assert count_vowels('hello') == 2\n\n\n\
             def test_case_2():\n    assert count_vowels('sky') == 0\n\n\n\
             def test_case_3():\n    try:\n        count_vowels(None)\n    except TypeError:\n        return\n    raise AssertionError(\"count_vowels(None) should raise TypeError\")\n"
        );
        assert!(
            read(
                "{\"cases\": [{\"args\": \"a b\", \"expected\": \"f()\"}]}",
                "f"
            )
            .is_err()
        );
        assert!(read("no json", "f").is_err());
    }

    #[test]
    fn redefinitions_are_taken_out_and_the_assertions_kept() {
        let tests = "import math\n\ndef add(a, b):\n    return a + b\n\ndef test_add():\n    assert add(1, 2) == 3\n\nassert add(2, 2) == 4\n";
        let (kept, dropped) = without_redefinitions(tests, &["add".to_string()]);
        assert_eq!(dropped, 1);
        assert!(!kept.contains("return a + b"), "{kept}");
        assert!(
            kept.contains("def test_add():\n    assert add(1, 2) == 3"),
            "{kept}"
        );
        assert!(kept.contains("import math"), "{kept}");
    }
}
