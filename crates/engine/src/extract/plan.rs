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
                    if b[i] < 0x20 {
                        // A raw line break or tab inside a string (small
                        // models write them, and some grammars let them):
                        // escaped, as JSON wants it.
                        out.push_str(&text[copied..i]);
                        out.push_str(&format!("\\u{:04x}", b[i]));
                        i += 1;
                        copied = i;
                        continue;
                    }
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
            head: None,
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

/// What is said of a reply with no JSON plan in it.
const NO_PLAN: &str =
    r#"the reply holds no JSON plan: reply with one ```json block holding {"functions": [...]}"#;

/// The function specs of a plan reply (reasoning already removed).
pub(super) fn plan(answer: &str) -> Result<Vec<FunctionSpec>, String> {
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
    Err(broken.unwrap_or_else(|| NO_PLAN.to_string()))
}

/// The function names of the plan prompt's worked example (prompts/plan.md),
/// a plan for another task: a plan of these names alone copied the example.
const EXAMPLE_NAMES: &[&str] = &["parse_duration_parts", "duration_to_minutes"];
/// The example's purposes, word for word: a function that says one of them
/// was copied whatever its name (SmolLM2-135M planned "reverse the words in
/// a sentence" as `parse_duration_parts`, "Add up the parts of a duration").
const EXAMPLE_PURPOSES: &[&str] = &[
    "Split a duration such as '2h 15m' into (amount, unit) pairs.",
    "Add up the parts of a duration in minutes (h is 60, m is 1).",
];
/// Placeholders earlier plan prompts showed, which small models copied as
/// names: never a function of a real task.
const PLACEHOLDER_NAMES: &[&str] = &["snake_case_name", "other_name", "function_name"];
/// Python's own names a plan sometimes lists as a dependency.
const PYTHON_NAMES: &[&str] = &[
    "abs",
    "all",
    "any",
    "dict",
    "enumerate",
    "filter",
    "float",
    "input",
    "int",
    "isinstance",
    "len",
    "list",
    "map",
    "max",
    "min",
    "open",
    "print",
    "range",
    "round",
    "set",
    "sorted",
    "str",
    "sum",
    "tuple",
    "zip",
    "collections",
    "csv",
    "itertools",
    "json",
    "math",
    "os",
    "re",
    "sys",
];

/// Whether `task` is about what the worked example is about (durations in
/// hours and minutes): then the example's names and purposes may be right.
fn about_durations(task: &str) -> bool {
    let task = task.to_lowercase();
    ["duration", "minute", "hour"]
        .iter()
        .any(|w| task.contains(w))
}

/// A plan read from a reply, before it is checked as a graph: the specs,
/// with the dependencies dropped as safe to drop (one notice each).
#[derive(Debug, PartialEq)]
pub(crate) struct Vetted {
    pub(crate) specs: Vec<FunctionSpec>,
    pub(crate) dropped: Vec<String>,
}

/// What is wrong with a plan that copied the prompt instead of planning
/// `task`: a placeholder name, or the worked example's functions (unless the
/// task itself names them). Dependencies no plan could hold are dropped
/// (see `droppable`); an unknown dependency on a function of the task's own
/// is left for the graph's check to report.
pub(crate) fn vet(specs: Vec<FunctionSpec>, task: &str) -> Result<Vetted, String> {
    if let Some(s) = specs
        .iter()
        .find(|s| PLACEHOLDER_NAMES.contains(&s.name.as_str()))
    {
        return Err(format!(
            "`{}` is the format's placeholder, not a function of this task: give each function a name that says what it does in this task",
            s.name
        ));
    }
    // The example's functions, all of them and nothing else: one of its
    // names alone may be the right name for a task of durations.
    let copied = (specs.len() == EXAMPLE_NAMES.len()
        && EXAMPLE_NAMES
            .iter()
            .all(|n| specs.iter().any(|s| s.name == *n) && !task.contains(n)))
        // Any of the example's names, for a task that is not about durations
        // (SmolLM2-135M planned "reverse the words" as `parse_duration_parts`,
        // and "sum the even numbers" with it beside functions of its own).
        || (!about_durations(task)
            && specs
                .iter()
                .any(|s| EXAMPLE_NAMES.contains(&s.name.as_str())));
    if copied {
        let names: Vec<String> = specs.iter().map(|s| format!("`{}`", s.name)).collect();
        return Err(format!(
            "the plan is the prompt's example ({}), which is for another task: plan the functions of this task",
            names.join(", ")
        ));
    }
    if !about_durations(task)
        && let Some(s) = specs.iter().find(|s| {
            // The example's purpose anywhere in one: a small model copies it
            // whole and goes on ("Add up ... (h is 60, m is 1). So your plan ...").
            let purpose = s.purpose.to_lowercase();
            EXAMPLE_PURPOSES
                .iter()
                .any(|p| purpose.contains(&p.to_lowercase()))
        })
    {
        return Err(format!(
            "the purpose of `{}` is the prompt's example's (\"{}\"), which is for another task: say what each function does in this task",
            s.name,
            s.purpose.trim()
        ));
    }
    let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
    let mut dropped = Vec::new();
    let specs = specs
        .into_iter()
        .map(|mut s| {
            let own = s.name.clone();
            s.depends_on.retain(|d| {
                if names.contains(d) && *d != own {
                    return true;
                }
                match droppable(d, &own) {
                    Some(why) => {
                        dropped.push(format!(
                            "the plan said `{own}` depends on `{d}`, {why}: that dependency is dropped"
                        ));
                        false
                    }
                    None => true,
                }
            });
            s
        })
        .collect();
    Ok(Vetted { specs, dropped })
}

/// Why a dependency `dep` of `node` that is no other function of the plan
/// may be dropped, if it may. Dropping is safe when `dep` names no function
/// any plan could hold: a dependency only orders the nodes and shows the
/// dependency's code in the node's prompts, and such a name orders nothing
/// (the node itself: recursion needs no order) and has no code to show (a
/// placeholder, Python's own names, which exist already). An unknown
/// dependency on a function of the task's own is not safe to drop: the plan
/// lacks a function the node may need, and the model is asked to fix it.
fn droppable(dep: &str, node: &str) -> Option<&'static str> {
    if dep == node {
        Some("itself")
    } else if dep.trim().is_empty() || PLACEHOLDER_NAMES.contains(&dep) {
        Some("a placeholder, not a function")
    } else if PYTHON_NAMES.contains(&dep) {
        Some("which is Python's own")
    } else {
        None
    }
}

fn bracket_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.match_indices(['{', '[']).map(|(k, _)| k)
}
#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, deps: &[&str]) -> FunctionSpec {
        FunctionSpec {
            name: name.into(),
            purpose: String::new(),
            inputs: String::new(),
            output: String::new(),
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
            head: None,
        }
    }

    /// Under a schema a worked example teaches no format; it only gives a
    /// small model something to copy (SmolLM2 planned "count the vowels"
    /// as the example's functions, three times): the shipped prompt has
    /// none. The guard stays for a prompt overridden with the old example.
    #[test]
    fn the_shipped_plan_prompt_gives_no_example_to_copy_and_no_placeholder() {
        let shipped = include_str!("../../../../prompts/plan.md");
        for name in EXAMPLE_NAMES.iter().chain(PLACEHOLDER_NAMES) {
            assert!(!shipped.contains(name), "{name}");
        }
        for purpose in EXAMPLE_PURPOSES {
            assert!(!shipped.contains(purpose), "{purpose}");
        }
    }

    #[test]
    fn a_function_with_the_examples_purpose_was_copied_whatever_its_name() {
        let mut copied = spec("parse_duration_parts", &[]);
        copied.purpose = "Add up the parts of a duration in minutes (h is 60, m is 1).".into();
        let err = vet(vec![copied.clone()], "reverse the words in a sentence").unwrap_err();
        assert!(err.contains("for another task"), "{err}");
        copied.name = "reverse_words".into();
        assert!(vet(vec![copied.clone()], "reverse the words").is_err());
        // A task about durations may mean it.
        assert!(vet(vec![copied], "sum a list of durations").is_ok());
        // The example's name alone, or beside others, for another task.
        let err = vet(vec![spec("parse_duration_parts", &[])], "reverse the words").unwrap_err();
        assert!(err.contains("for another task"), "{err}");
        let mixed = vec![spec("time", &[]), spec("parse_duration_parts", &["time"])];
        assert!(vet(mixed, "sum the even numbers in a list").is_err());
    }

    #[test]
    fn a_copied_example_or_placeholder_is_refused_with_what_is_wrong() {
        let echo = vec![spec("snake_case_name", &["other_name"])];
        let err = vet(echo, "reverse the words").unwrap_err();
        assert!(
            err.contains("`snake_case_name` is the format's placeholder"),
            "{err}"
        );
        let example = vec![
            spec("parse_duration_parts", &[]),
            spec("duration_to_minutes", &["parse_duration_parts"]),
        ];
        let err = vet(example.clone(), "count the vowels").unwrap_err();
        assert!(err.contains("the prompt's example"), "{err}");
        // A task that names them itself may have them; for a task about
        // durations, one shared name is no copy.
        assert!(
            vet(
                example,
                "write duration_to_minutes and parse_duration_parts"
            )
            .is_ok()
        );
        assert!(
            vet(
                vec![spec("duration_to_minutes", &[]), spec("main", &[])],
                "total the hours of a timesheet"
            )
            .is_ok()
        );
        assert!(vet(vec![spec("duration_to_minutes", &[])], "minutes of '1h 5m'").is_ok());
    }

    #[test]
    fn only_dependencies_no_plan_could_hold_are_dropped() {
        let specs = vec![
            spec("count", &["count", "other_name", "len"]),
            spec("main", &["count", "missing"]),
        ];
        let vetted = vet(specs, "count things").unwrap();
        assert_eq!(vetted.specs[0].depends_on, Vec::<String>::new());
        // `missing` may be a function the plan lacks: the graph's check reports it.
        assert_eq!(vetted.specs[1].depends_on, vec!["count", "missing"]);
        assert_eq!(vetted.dropped.len(), 3, "{:?}", vetted.dropped);
        assert!(vetted.dropped[0].contains("`count` depends on `count`, itself"));
    }

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
        assert_eq!(
            clean("{\"a\": \"one\ntwo\"}"),
            ("{\"a\": \"one\\u000atwo\"}".to_string(), true)
        );
    }
}
