//! The JSON schemas of the replies the engine reads as data, and the
//! longest reply each kind of call is given by default.
//!
//! A schema is asked of the server in the shape it takes (`codeloop_llm::
//! Structured`): a constrained server cannot answer with anything but a
//! plan, which is what makes a small model's plan parse. The prompt still
//! describes the format (servers do not show the schema to the model), and
//! the reply is still validated as a DAG.

use codeloop_llm::ReplySchema;
use codeloop_session::Purpose;
use serde_json::json;

/// The most functions a plan may have (the prompt asks for 1 to 5).
const MAX_FUNCTIONS: u64 = 8;
/// The longest purpose, inputs or output a plan may write: a model that
/// rambles inside a string is stopped by the grammar, not the window.
const MAX_FIELD_CHARS: u64 = 200;
/// A function's name: a Python identifier in snake_case, at most 60
/// characters (llama.cpp and llama-cpp-python both turn the pattern into
/// their grammar, so a small model cannot name a function `function-1`).
const NAME_PATTERN: &str = "^[a-z_][a-z0-9_]{0,59}$";

/// The schema of a plan reply: `{"functions": [{name, purpose, inputs,
/// output, depends_on}]}`.
pub(crate) fn plan() -> ReplySchema {
    let text = json!({ "type": "string", "minLength": 1, "maxLength": MAX_FIELD_CHARS });
    ReplySchema {
        name: "plan".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "functions": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_FUNCTIONS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": { "type": "string", "pattern": NAME_PATTERN },
                            "purpose": text,
                            "inputs": { "type": "string", "maxLength": MAX_FIELD_CHARS },
                            "output": text,
                            "depends_on": {
                                "type": "array",
                                "maxItems": MAX_FUNCTIONS,
                                "items": { "type": "string", "pattern": NAME_PATTERN }
                            }
                        },
                        "required": ["name", "purpose", "inputs", "output", "depends_on"]
                    }
                }
            },
            "required": ["functions"]
        }),
    }
}

/// The most findings a review may list.
const MAX_FINDINGS: u64 = 8;
/// The longest finding a review may write.
const MAX_FINDING_CHARS: u64 = 300;

/// The schema of a review's reply: `{"verdict": "ok" | "concerns",
/// "findings": [{severity: "serious" | "minor", line, what}]}`.
pub(crate) fn review() -> ReplySchema {
    ReplySchema {
        name: "review".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "verdict": { "type": "string", "enum": ["ok", "concerns"] },
                "findings": {
                    "type": "array",
                    "maxItems": MAX_FINDINGS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "severity": { "type": "string", "enum": ["serious", "minor"] },
                            "line": { "type": ["integer", "null"] },
                            "what": { "type": "string", "minLength": 1, "maxLength": MAX_FINDING_CHARS }
                        },
                        "required": ["severity", "line", "what"]
                    }
                }
            },
            "required": ["verdict", "findings"]
        }),
    }
}

/// The most calls the model may propose to vote on.
pub(crate) const MAX_PROPOSED_INPUTS: u64 = 8;

/// The schema of proposed inputs: `{"calls": ["f(1, 2)", ...]}`.
pub(crate) fn inputs() -> ReplySchema {
    ReplySchema {
        name: "inputs".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "calls": {
                    "type": "array",
                    "maxItems": MAX_PROPOSED_INPUTS,
                    "items": { "type": "string", "minLength": 3, "maxLength": MAX_FINDING_CHARS }
                }
            },
            "required": ["calls"]
        }),
    }
}

/// The schema of a function's test cases: `{"cases": [{args, expected}]}`,
/// each a Python literal as a string (`cases.rs`).
pub(crate) fn cases() -> ReplySchema {
    let literal = |min: u64| json!({ "type": "string", "minLength": min, "maxLength": super::cases::MAX_LITERAL });
    ReplySchema {
        name: "cases".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "cases": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": super::cases::MAX_CASES,
                    "items": {
                        "type": "object",
                        "properties": { "args": literal(0), "expected": literal(1) },
                        "required": ["args", "expected"]
                    }
                }
            },
            "required": ["cases"]
        }),
    }
}

/// The schema a call's reply must follow, when it is read as data.
pub(crate) fn for_purpose(purpose: &Purpose) -> Option<ReplySchema> {
    match purpose {
        Purpose::Plan => Some(plan()),
        Purpose::Review { .. } => Some(review()),
        Purpose::Inputs { .. } => Some(inputs()),
        Purpose::Tests { .. }
        | Purpose::Code { .. }
        | Purpose::Reflect { .. }
        | Purpose::Repair { .. } => None,
    }
}

/// The longest reply a call is given by default, in tokens: room for its
/// answer with a margin, and no more, so a small model that rambles is
/// stopped in seconds, not minutes. The person's own limit (`max_tokens`
/// in the config or a profile, `--max-tokens`) wins over these.
pub(crate) fn reply_tokens(purpose: &Purpose) -> u32 {
    match purpose {
        Purpose::Plan | Purpose::Review { .. } | Purpose::Inputs { .. } => 1024,
        Purpose::Tests { .. } | Purpose::Code { .. } => 1536,
        Purpose::Reflect { .. } | Purpose::Repair { .. } => 2048,
    }
}
