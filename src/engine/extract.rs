//! Reading what the model wrote: the code block of a reply (robust to missing
//! fences, several blocks and prose around them), the prose before it (the
//! reflection), and the plan's JSON.

use serde::Deserialize;

use crate::session::FunctionSpec;

/// A fenced block: its info string ("python", "json", "") and its body.
fn fenced_blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        let Some(info) = trimmed.strip_prefix("```") else {
            continue;
        };
        let info = info.trim().to_lowercase();
        let mut body = String::new();
        for inner in lines.by_ref() {
            if inner.trim_start().starts_with("```") {
                break;
            }
            body.push_str(inner);
            body.push('\n');
        }
        // A block cut off at the end of the reply (no closing fence) is kept.
        blocks.push((info, body));
    }
    blocks
}

fn looks_like_python_start(line: &str) -> bool {
    let t = line.trim_start();
    ["def ", "async def ", "class ", "import ", "from ", "@"]
        .iter()
        .any(|p| t.starts_with(p))
}

/// The Python code in a reply. With several blocks, the one defining
/// `def want(` wins, else the longest Python block. With no fences, the text
/// from the first line that starts Python code. None when there is no code.
pub fn extract_code(reply: &str, want: Option<&str>) -> Option<String> {
    let blocks: Vec<(String, String)> = fenced_blocks(reply)
        .into_iter()
        .filter(|(info, body)| {
            !body.trim().is_empty()
                && (info.is_empty() || info == "python" || info == "py" || info == "python3")
        })
        .collect();
    let defines = |body: &str, name: &str| {
        body.lines().any(|l| {
            let t = l.trim_start();
            t.starts_with(&format!("def {name}(")) || t.starts_with(&format!("async def {name}("))
        })
    };
    let chosen = want
        .and_then(|name| blocks.iter().find(|(_, b)| defines(b, name)))
        .or_else(|| blocks.iter().max_by_key(|(_, b)| b.len()))
        .map(|(_, b)| b.clone());
    let code = match chosen {
        Some(c) => c,
        None => {
            let lines: Vec<&str> = reply.lines().collect();
            let start = lines.iter().position(|l| looks_like_python_start(l))?;
            let mut code = lines[start..].join("\n");
            code.push('\n');
            code
        }
    };
    let code = code.trim_matches('\n').to_string() + "\n";
    if code.trim().is_empty() {
        None
    } else {
        Some(code)
    }
}

/// The prose of a reply before its first code block: the reflection.
pub fn prose_before_code(reply: &str) -> String {
    let mut out = Vec::new();
    for line in reply.lines() {
        if line.trim_start().starts_with("```") || looks_like_python_start(line) {
            break;
        }
        out.push(line);
    }
    out.join("\n").trim().to_string()
}

#[derive(Deserialize)]
struct PlanReply {
    functions: Vec<PlanFunction>,
}

#[derive(Deserialize)]
struct PlanFunction {
    name: String,
    #[serde(default)]
    purpose: String,
    #[serde(default, deserialize_with = "string_or_list")]
    inputs: String,
    #[serde(default, deserialize_with = "string_or_list")]
    output: String,
    #[serde(default, alias = "dependencies", alias = "deps")]
    depends_on: Vec<String>,
}

/// Models write `"inputs": ["a: int", "b: str"]` as often as a string.
fn string_or_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        S(String),
        L(Vec<serde_json::Value>),
        Other(serde_json::Value),
    }
    Ok(match Either::deserialize(d)? {
        Either::S(s) => s,
        Either::L(items) => items
            .iter()
            .map(|v| match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Either::Other(serde_json::Value::Null) => String::new(),
        Either::Other(v) => v.to_string(),
    })
}

/// The function specs of a plan reply: the JSON in a ```json block, or the
/// first `{ ... }` in the text; `{"functions": [...]}` or a bare list.
pub fn extract_plan(reply: &str) -> Result<Vec<FunctionSpec>, String> {
    let mut candidates: Vec<String> = fenced_blocks(reply)
        .into_iter()
        .filter(|(info, _)| info.is_empty() || info == "json")
        .map(|(_, b)| b)
        .collect();
    if let (Some(a), Some(b)) = (reply.find(['{', '[']), reply.rfind(['}', ']']))
        && a < b
    {
        candidates.push(reply[a..=b].to_string());
    }
    let mut last_err = String::from("the reply has no JSON object");
    for c in candidates {
        let parsed = serde_json::from_str::<PlanReply>(c.trim())
            .map(|p| p.functions)
            .or_else(|_| serde_json::from_str::<Vec<PlanFunction>>(c.trim()));
        match parsed {
            Ok(functions) => {
                return Ok(functions
                    .into_iter()
                    .map(|f| FunctionSpec {
                        name: f.name.trim().to_string(),
                        purpose: f.purpose,
                        inputs: f.inputs,
                        output: f.output,
                        depends_on: f.depends_on,
                    })
                    .collect());
            }
            Err(e) => last_err = format!("the plan's JSON does not fit: {e}"),
        }
    }
    Err(last_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_defining_the_wanted_function_wins() {
        let reply = "Here is a helper:\n```python\ndef helper():\n    return 1\n```\nAnd the function:\n```python\ndef f(x):\n    return helper() + x\n```\nDone.";
        assert_eq!(
            extract_code(reply, Some("f")).unwrap(),
            "def f(x):\n    return helper() + x\n"
        );
    }

    #[test]
    fn no_fences_takes_the_code_after_the_prose() {
        let reply = "Sure! The fix:\n\nimport math\n\ndef f(x):\n    return math.sqrt(x)\n";
        assert_eq!(
            extract_code(reply, Some("f")).unwrap(),
            "import math\n\ndef f(x):\n    return math.sqrt(x)\n"
        );
        assert_eq!(extract_code("I cannot help with that.", Some("f")), None);
    }

    #[test]
    fn an_unclosed_block_is_kept_and_other_languages_are_not_code() {
        assert_eq!(
            extract_code("```python\ndef f():\n    return 1\n", None).unwrap(),
            "def f():\n    return 1\n"
        );
        assert_eq!(extract_code("```json\n{\"a\": 1}\n```", None), None);
    }

    #[test]
    fn the_reflection_is_the_prose_before_the_code() {
        let reply =
            "The loop stops one short.\nUse range(n + 1).\n```python\ndef f(n):\n    pass\n```";
        assert_eq!(
            prose_before_code(reply),
            "The loop stops one short.\nUse range(n + 1)."
        );
    }

    #[test]
    fn plans_parse_from_blocks_bare_json_and_lists() {
        let a = "```json\n{\"functions\": [{\"name\": \"a\", \"purpose\": \"p\", \"inputs\": [\"x: int\", \"y: int\"], \"output\": \"int\", \"depends_on\": []}]}\n```";
        let specs = extract_plan(a).unwrap();
        assert_eq!(specs[0].name, "a");
        assert_eq!(specs[0].inputs, "x: int, y: int");
        let b = "Plan: [{\"name\": \"b\", \"dependencies\": [\"a\"]}] ok";
        assert_eq!(
            extract_plan(b).unwrap()[0].depends_on,
            vec!["a".to_string()]
        );
        assert!(extract_plan("no plan here").is_err());
    }
}
