//! A task that needs no plan: one that gives the function itself, as a
//! HumanEval prompt does (a `def` line and its docstring, maybe after
//! imports and helpers), or that names it in prose ("Write a function
//! `count_vowels(s)` that ..."). Its plan is that one function, with the
//! name and parameters the task gave, and its head (the `def` line, and the
//! docstring where the task wrote one) is where the model's answer starts.

use super::extract::looks_like_python;
use codeloop_session::FunctionSpec;

/// The `def` line(s) of a head, up to the one that ends with `:`.
pub(crate) fn def_lines(head: &str) -> &str {
    let mut end = 0;
    for line in head.split_inclusive('\n') {
        end += line.len();
        if line.trim_end().ends_with(':') {
            break;
        }
    }
    head[..end].trim_end()
}

/// The head a function's code starts with: the one the task gave, else
/// one made from its spec where its inputs read as parameters (`text:
/// str, n: int`) and its output, if any, as a type; its purpose as the
/// docstring. None when the spec's words are no Python.
pub(crate) fn head_of(spec: &FunctionSpec) -> Option<String> {
    if let Some(head) = &spec.head {
        return Some(head.clone());
    }
    let params = spec.inputs.trim();
    let def = format!("def {}({params})", spec.name);
    if !looks_like_python(&format!("{def}:\n    pass\n")) {
        return None;
    }
    let output = spec.output.trim();
    let annotated = format!("{def} -> {output}:");
    let header = if !output.is_empty() && looks_like_python(&format!("{annotated}\n    pass\n")) {
        annotated
    } else {
        format!("{def}:")
    };
    let purpose = spec
        .purpose
        .trim()
        .replace('\\', "\\\\")
        .replace("\"\"\"", "'''");
    if purpose.is_empty() {
        return Some(format!("{header}\n"));
    }
    Some(format!("{header}\n    \"\"\"{purpose}\"\"\"\n"))
}

/// The one function a task names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Named {
    pub(crate) name: String,
    /// The parameters as written (`s: str, n: int = 2`).
    pub(crate) params: String,
    /// The return annotation, if any.
    pub(crate) returns: String,
    /// The docstring's text, or the task's sentence that names it.
    pub(crate) purpose: String,
    /// The `def` line and docstring as the task gave them (a HumanEval
    /// prompt), else the `def` line made from the name and parameters.
    pub(crate) head: String,
}

/// The function a task gives or names, if it names exactly one.
pub(crate) fn named_function(task: &str) -> Option<Named> {
    given_def(task).or_else(|| named_in_prose(task))
}

/// A `def` the task writes out with no body but its docstring (the last
/// such, as in a HumanEval prompt whose helpers come first).
fn given_def(task: &str) -> Option<Named> {
    let lines: Vec<&str> = task.lines().collect();
    let mut found = None;
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if !trimmed.starts_with("def ") {
            continue;
        }
        let indent = line.len() - trimmed.len();
        // The header may span lines: up to the line that ends with `:`.
        let end = (i..lines.len()).find(|&k| lines[k].trim_end().ends_with(':'))?;
        let header: String = lines[i..=end]
            .iter()
            .map(|l| l.get(indent..).unwrap_or(l.trim_start()))
            .collect::<Vec<_>>()
            .join("\n");
        let body: Vec<&str> = lines[end + 1..]
            .iter()
            .take_while(|l| l.trim().is_empty() || leading(l) > indent)
            .copied()
            .collect();
        let Some((docstring, doc_lines)) = docstring_of(&body) else {
            continue;
        };
        // Anything but blank lines after the docstring: a helper with a body.
        if body[doc_lines..]
            .iter()
            .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        {
            continue;
        }
        let Some((name, params, returns)) = signature(&header) else {
            continue;
        };
        let head_lines: Vec<&str> = lines[i..=end + doc_lines].to_vec();
        let head = head_lines
            .iter()
            .map(|l| l.get(indent..).unwrap_or(l.trim_start()))
            .collect::<Vec<_>>()
            .join("\n");
        let purpose = docstring
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string();
        found = Some(Named {
            name,
            params,
            returns,
            purpose,
            head: head + "\n",
        });
    }
    found
}

fn leading(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The docstring at the start of a body, and how many lines it takes.
fn docstring_of(body: &[&str]) -> Option<(String, usize)> {
    let first = body.iter().position(|l| !l.trim().is_empty())?;
    let start = body[first].trim_start();
    let quote = ["\"\"\"", "'''"]
        .into_iter()
        .find(|q| start.starts_with(q))?;
    let rest = &start[3..];
    if let Some(end) = rest.find(quote) {
        return Some((rest[..end].to_string(), first + 1));
    }
    let mut text = rest.to_string();
    for (k, line) in body.iter().enumerate().skip(first + 1) {
        if let Some(end) = line.find(quote) {
            text.push('\n');
            text.push_str(&line[..end]);
            return Some((text, k + 1));
        }
        text.push('\n');
        text.push_str(line);
    }
    None
}

/// Name, parameters and return annotation of a `def` header, when it
/// reads as Python.
fn signature(header: &str) -> Option<(String, String, String)> {
    let flat: String = header.split_whitespace().collect::<Vec<_>>().join(" ");
    let rest = flat.strip_prefix("def ")?;
    let open = rest.find('(')?;
    let name = rest[..open].trim().to_string();
    if !is_identifier(&name) {
        return None;
    }
    let close = rest.rfind(')')?;
    let params = rest[open + 1..close]
        .trim()
        .trim_end_matches(',')
        .to_string();
    let after = rest[close + 1..].trim().trim_end_matches(':').trim();
    let returns = after.strip_prefix("->").unwrap_or("").trim().to_string();
    looks_like_python(&format!("{header}\n    pass\n")).then_some((name, params, returns))
}

fn is_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// "a function `count_vowels(s)`", "function count_vowels(s)", "def f(x)":
/// the one function a task's prose names with its parameters. None when it
/// names two or more (a plan then says how they fit).
fn named_in_prose(task: &str) -> Option<Named> {
    let mut found: Vec<(String, String)> = Vec::new();
    let words = ["function ", "def ", "method "];
    for word in words {
        let mut from = 0;
        let lower = task.to_ascii_lowercase();
        while let Some(at) = lower[from..].find(word) {
            let start = from + at + word.len();
            from = start;
            let rest = task[start..].trim_start_matches(['`', '*', ' ']);
            let open = match rest.find('(') {
                Some(o) => o,
                None => continue,
            };
            let name = &rest[..open];
            if !is_identifier(name) {
                continue;
            }
            let Some(close) = rest[open..].find(')').map(|c| open + c) else {
                continue;
            };
            let params = rest[open + 1..close].trim().to_string();
            if params.contains(['(', '\n']) {
                continue;
            }
            if !found.iter().any(|(n, _)| n == name) {
                found.push((name.to_string(), params));
            }
        }
    }
    let [(name, params)] = found.as_slice() else {
        return None;
    };
    let def = format!("def {name}({params}):");
    if !looks_like_python(&format!("{def}\n    pass\n")) {
        return None;
    }
    let purpose: String = task
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(200)
        .collect();
    Some(Named {
        name: name.clone(),
        params: params.clone(),
        returns: String::new(),
        purpose,
        head: format!("{def}\n"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(inputs: &str, output: &str) -> FunctionSpec {
        FunctionSpec {
            name: "f".into(),
            purpose: "Count the vowels.".into(),
            inputs: inputs.into(),
            output: output.into(),
            depends_on: Vec::new(),
            head: None,
        }
    }

    #[test]
    fn the_def_lines_of_a_head_end_at_its_colon() {
        assert_eq!(def_lines("def f(x):\n    \"\"\"Doc.\"\"\"\n"), "def f(x):");
        assert_eq!(
            def_lines("def f(a: int,\n      b: int) -> int:\n    \"\"\"Doc.\"\"\"\n"),
            "def f(a: int,\n      b: int) -> int:"
        );
    }

    #[test]
    fn a_planned_function_gets_a_head_where_its_spec_reads_as_python() {
        assert_eq!(
            head_of(&spec("text: str, n: int", "list[str]")).as_deref(),
            Some("def f(text: str, n: int) -> list[str]:\n    \"\"\"Count the vowels.\"\"\"\n")
        );
        assert_eq!(
            head_of(&spec("s: str", "the number of vowels")).as_deref(),
            Some("def f(s: str):\n    \"\"\"Count the vowels.\"\"\"\n")
        );
        assert_eq!(head_of(&spec("what the task gives", "")), None);
        let given = FunctionSpec {
            head: Some("def f(s):\n".into()),
            ..spec("", "")
        };
        assert_eq!(head_of(&given).as_deref(), Some("def f(s):\n"));
    }

    #[test]
    fn a_humaneval_prompt_gives_its_function_and_head() {
        let task = "Complete this Python function. Keep its name and signature.\n```python\nfrom typing import List\n\n\ndef helper(x):\n    \"\"\"A helper.\"\"\"\n    return x\n\n\ndef has_close_elements(numbers: List[float], threshold: float) -> bool:\n    \"\"\" Check if in given list of numbers, are any two numbers closer to each other than\n    given threshold.\n    >>> has_close_elements([1.0, 2.0, 3.0], 0.5)\n    False\n    \"\"\"\n\n```";
        let n = named_function(task).unwrap();
        assert_eq!(n.name, "has_close_elements");
        assert_eq!(n.params, "numbers: List[float], threshold: float");
        assert_eq!(n.returns, "bool");
        assert_eq!(
            n.purpose,
            "Check if in given list of numbers, are any two numbers closer to each other than"
        );
        assert!(
            n.head.starts_with("def has_close_elements(numbers"),
            "{}",
            n.head
        );
        assert!(n.head.ends_with("    False\n    \"\"\"\n"), "{:?}", n.head);
    }

    #[test]
    fn prose_that_names_one_function_gives_it() {
        let n = named_function(
            "Write a function count_vowels(s) that returns how many vowels (a, e, i, o, u) the string s has.",
        )
        .unwrap();
        assert_eq!((n.name.as_str(), n.params.as_str()), ("count_vowels", "s"));
        assert_eq!(n.head, "def count_vowels(s):\n");
        assert!(named_function("Write a function `add(a, b)` returning a + b").is_some());
        // Two functions, or none named with its parameters: a plan says how.
        assert_eq!(
            named_function("Write a function parse(line) and a function total(rows)."),
            None
        );
        assert_eq!(named_function("return the largest of three numbers"), None);
        assert_eq!(named_function("a function of (x)"), None);
    }
}
