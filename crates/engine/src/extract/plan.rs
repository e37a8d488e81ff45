//! The plan's JSON, wherever the reply put it: in a ```json block, bare after
//! prose that holds braces of its own ("I'll use {name} placeholders"), with
//! trailing commas and `//` or `/* */` comments, as an object with a
//! `functions` key or a bare list of functions.

use serde::Deserialize;
use serde_json::Value;

use super::fences::fenced_blocks;
use codeloop_session::FunctionSpec;

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
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        Value::Array(items) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Value::Null => String::new(),
        other => other.to_string(),
    })
}

/// The JSON that starts at `text`'s first byte, up to its matching bracket,
/// with comments and trailing commas removed (both outside strings only).
/// Says whether the brackets closed before the text ended (else it is cut off).
fn clean(text: &str) -> (String, bool) {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    let mut i = 0;
    let mut copied = 0; // bytes of `text` before `i` already handled
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                out.push_str(&text[copied..i]);
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                copied = i;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                out.push_str(&text[copied..i]);
                i = text[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
                copied = i;
            }
            b',' => {
                out.push_str(&text[copied..i]);
                // A comma before a closing bracket (past space and comments) goes.
                let rest = clean_prefix(&text[i + 1..]);
                if !rest.starts_with([']', '}']) {
                    out.push(',');
                }
                i += 1;
                copied = i;
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                i += 1;
                if depth == 0 {
                    break;
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[copied..i.min(b.len())]);
    (out, depth == 0)
}

/// `text` past leading whitespace and comments.
fn clean_prefix(mut text: &str) -> &str {
    loop {
        text = text.trim_start();
        if let Some(rest) = text.strip_prefix("//") {
            text = rest.find('\n').map_or("", |p| &rest[p..]);
        } else if let Some(rest) = text.strip_prefix("/*") {
            text = rest.find("*/").map_or("", |p| &rest[p + 2..]);
        } else {
            return text;
        }
    }
}

/// What one candidate start gave.
enum Candidate {
    /// A plan, checked.
    Plan(Result<Vec<FunctionSpec>, String>),
    /// JSON, but not a plan (a `{name}` in prose, a list of strings).
    NotAPlan,
    /// JSON that mentions functions but does not parse; the message says why.
    Broken(String),
}

/// Whether a JSON value has the shape of a plan (which may still be invalid).
fn functions_of(value: &Value) -> Option<&Vec<Value>> {
    match value {
        Value::Object(map) => map.get("functions").and_then(Value::as_array),
        Value::Array(items)
            if !items.is_empty()
                && items
                    .iter()
                    .all(|f| f.as_object().is_some_and(|o| o.contains_key("name"))) =>
        {
            Some(items)
        }
        _ => None,
    }
}

fn plan_from(functions: &[Value]) -> Result<Vec<FunctionSpec>, String> {
    if functions.is_empty() {
        return Err("the plan lists no functions; list at least one".into());
    }
    let mut specs = Vec::new();
    for (k, f) in functions.iter().enumerate() {
        let named = f
            .get("name")
            .and_then(Value::as_str)
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        let f = PlanFunction::deserialize(f)
            .map_err(|e| format!("function {}{named} in the plan is not valid: {e}", k + 1))?;
        let name = f.name.trim().to_string();
        if name.is_empty() {
            return Err(format!("function {} in the plan has an empty name", k + 1));
        }
        specs.push(FunctionSpec {
            name,
            purpose: f.purpose,
            inputs: f.inputs,
            output: f.output,
            depends_on: f.depends_on,
        });
    }
    Ok(specs)
}

fn candidate(text: &str) -> Candidate {
    let (cleaned, closed) = clean(text);
    let first = serde_json::Deserializer::from_str(&cleaned)
        .into_iter::<Value>()
        .next();
    let looks_like_plan = cleaned.contains("\"functions\"") || cleaned.contains("\"name\"");
    match first {
        Some(Ok(value)) => match functions_of(&value) {
            Some(functions) => Candidate::Plan(plan_from(functions)),
            None => Candidate::NotAPlan,
        },
        Some(Err(e)) if looks_like_plan && (e.is_eof() || !closed) => Candidate::Broken(format!(
            "the reply's JSON plan is cut off before its end (the reply stopped mid-plan, \
             perhaps at the token limit); send the whole plan: {e}"
        )),
        Some(Err(e)) if looks_like_plan => {
            Candidate::Broken(format!("the reply's JSON plan does not parse: {e}"))
        }
        Some(Err(_)) | None => Candidate::NotAPlan,
    }
}

/// The function specs of a plan reply (reasoning already removed).
pub fn plan(answer: &str) -> Result<Vec<FunctionSpec>, String> {
    // Starts inside ```json (or unnamed) blocks first, where the JSON ends
    // with the block, then every start in the whole text.
    let blocks: Vec<String> = fenced_blocks(answer)
        .into_iter()
        .filter(|b| matches!(b.lang.as_str(), "json" | "jsonc" | "json5" | ""))
        .map(|b| b.body)
        .collect();
    let texts = blocks.iter().map(String::as_str).chain([answer]);
    let mut broken: Option<String> = None;
    for text in texts {
        for from in bracket_starts(text) {
            match candidate(&text[from..]) {
                Candidate::Plan(result) => return result,
                Candidate::NotAPlan => {}
                Candidate::Broken(message) => {
                    broken.get_or_insert(message);
                }
            }
        }
    }
    Err(broken.unwrap_or_else(|| {
        "the reply holds no JSON plan: reply with one ```json block holding \
         {\"functions\": [...]}"
            .to_string()
    }))
}

fn bracket_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.match_indices(['{', '[']).map(|(k, _)| k)
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_go_but_not_inside_strings() {
        let text = "{\"a\": \"http://x, ]\", // note\n \"b\": [1, 2, /* two */ ],\n}\ntail {";
        assert_eq!(
            clean(text),
            (
                "{\"a\": \"http://x, ]\", \n \"b\": [1, 2  ]\n}".to_string(),
                true
            )
        );
        assert_eq!(clean("[1, [2"), ("[1, [2".to_string(), false));
    }
}
