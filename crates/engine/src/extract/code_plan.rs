//! A plan reply that is code rather than a plan (small models answer the
//! plan prompt of a one-function task with the function): the functions it
//! defines become the plan, each with its signature as its spec and its own
//! code (with the reply's imports and constants) as its first version.

use super::code::{Item, Kind, block, select};
use super::pyparse::looks_like_python;
use codeloop_session::FunctionSpec;

/// The plan read from code, and each function's code.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CodePlan {
    pub(crate) specs: Vec<FunctionSpec>,
    /// (function, its code) in plan order.
    pub(crate) code: Vec<(String, String)>,
}

/// The plan of a reply that is code (reasoning already removed), if it
/// defines top-level functions and nothing a node could not hold: no class
/// (two nodes sharing it would each define it again).
pub(super) fn plan_from_code(answer: &str) -> Option<CodePlan> {
    let code = select(answer, None, &looks_like_python)?;
    let items = block(&code).items;
    let is_def = |i: &Item| {
        let head = header_line(&i.text);
        i.kind == Kind::Def && (head.starts_with("def ") || head.starts_with("async def "))
    };
    if items.iter().any(|i| i.kind == Kind::Def && !is_def(i)) {
        return None;
    }
    let defs: Vec<&Item> = items.iter().filter(|i| is_def(i)).collect();
    let names: Vec<String> = defs
        .iter()
        .filter_map(|i| i.binds.first().cloned())
        .collect();
    if names.is_empty() || names.len() != defs.len() {
        return None;
    }
    // What every function may use: imports, and constants that use none of
    // the functions (an assignment that calls one is an example).
    let shared: Vec<&str> = items
        .iter()
        .filter(|i| {
            i.kind == Kind::Import
                || (i.kind == Kind::Assign && names.iter().all(|n| !i.refs.contains(n)))
        })
        .map(|i| i.text.trim_matches('\n'))
        .collect();
    let mut specs = Vec::new();
    let mut code = Vec::new();
    for (item, name) in defs.iter().zip(&names) {
        let (inputs, output) = signature(&item.text);
        let purpose = docstring_line(&item.text).unwrap_or_else(|| {
            format!(
                "as the model's code defines it: {}",
                header_line(&item.text).trim_end_matches(':')
            )
        });
        specs.push(FunctionSpec {
            name: name.clone(),
            purpose,
            inputs,
            output,
            depends_on: names
                .iter()
                .filter(|n| *n != name && item.refs.contains(*n))
                .cloned()
                .collect(),
            head: None,
        });
        let mut parts: Vec<&str> = shared.clone();
        parts.push(item.text.trim_matches('\n'));
        code.push((name.clone(), parts.join("\n\n") + "\n"));
    }
    Some(CodePlan { specs, code })
}

/// The `def` line of a definition (past decorators, comments, blank lines).
fn header_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('@'))
        .unwrap_or("")
}

/// The parameters and the return annotation of a definition's header, as
/// written: `def add(a: int, b: int) -> int:` gives ("a: int, b: int", "int").
fn signature(text: &str) -> (String, String) {
    let Some(start) = text.find("def ") else {
        return (String::new(), String::new());
    };
    let rest = &text[start..];
    let Some(open) = rest.find('(') else {
        return (String::new(), String::new());
    };
    let mut depth = 0usize;
    let mut close = None;
    for (k, c) in rest[open..].char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    close = Some(open + k);
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(close) = close else {
        return (String::new(), String::new());
    };
    let params = rest[open + 1..close]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches(',')
        .to_string();
    let after = &rest[close + 1..];
    let output = after
        .split_once(':')
        .map(|(head, _)| head.trim())
        .and_then(|head| head.strip_prefix("->"))
        .map(|o| o.trim().to_string())
        .unwrap_or_default();
    (params, output)
}

/// The first line of a definition's docstring, if it has one.
fn docstring_line(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let def = lines
        .iter()
        .position(|l| l.starts_with("def ") || l.starts_with("async def "))?;
    // A header over several lines ends at the line that ends with ':'.
    let end = (def..lines.len()).find(|&k| lines[k].ends_with(':'))?;
    let first = lines[end + 1..].iter().find(|l| !l.is_empty())?;
    let quote = ["\"\"\"", "'''", "\"", "'"]
        .into_iter()
        .find(|q| first.starts_with(q))?;
    let body = first[quote.len()..].trim_end_matches(quote).trim();
    (!body.is_empty()).then(|| body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_becomes_a_plan_of_one_with_its_signature() {
        for reply in [
            "def add(a: int, b: int) -> int:\n    return a + b\n",
            "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```",
            "Here you go:\n```python\ndef add(a: int, b: int) -> int:\n    return a + b\n\nprint(add(1, 2))\n```",
        ] {
            let plan = plan_from_code(reply).unwrap();
            assert_eq!(plan.specs.len(), 1, "{reply}");
            let spec = &plan.specs[0];
            assert_eq!(
                (
                    spec.name.as_str(),
                    spec.inputs.as_str(),
                    spec.output.as_str()
                ),
                ("add", "a: int, b: int", "int")
            );
            assert!(
                spec.purpose.contains("def add(a: int, b: int) -> int"),
                "{}",
                spec.purpose
            );
            assert_eq!(
                plan.code,
                vec![(
                    "add".to_string(),
                    "def add(a: int, b: int) -> int:\n    return a + b\n".to_string()
                )]
            );
        }
    }

    #[test]
    fn several_functions_keep_their_calls_as_dependencies_and_share_imports() {
        let reply = "```python\nimport re\n\nWORD = r\"\\w+\"\n\ndef words(text):\n    \"\"\"Split text into words.\"\"\"\n    return re.findall(WORD, text)\n\n\ndef count_words(text):\n    return len(words(text))\n```";
        let plan = plan_from_code(reply).unwrap();
        let names: Vec<&str> = plan.specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["words", "count_words"]);
        assert_eq!(plan.specs[0].purpose, "Split text into words.");
        assert!(plan.specs[0].depends_on.is_empty());
        assert_eq!(plan.specs[1].depends_on, vec!["words"]);
        assert!(
            plan.code[1]
                .1
                .starts_with("import re\n\nWORD = r\"\\w+\"\n\ndef count_words(text):"),
            "{}",
            plan.code[1].1
        );
        assert!(!plan.code[1].1.contains("def words"), "{}", plan.code[1].1);
    }

    #[test]
    fn prose_json_and_classes_are_no_code_plan() {
        assert_eq!(plan_from_code("I would split it into two functions."), None);
        assert_eq!(plan_from_code("```json\n{\"functions\": []}\n```"), None);
        assert_eq!(
            plan_from_code(
                "```python\nclass Stack:\n    pass\n\ndef f():\n    return Stack()\n```"
            ),
            None
        );
    }
}
