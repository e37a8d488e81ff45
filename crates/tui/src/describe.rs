//! A spec and a plan as the person edits them (and read back), and the
//! model as the status bar names it. Shared by the panes and the app; what
//! the tape says (a command, a step, where code came from) is worded once,
//! in the story (`codeloop_session::story::words`).

use codeloop_session::FunctionSpec;

/// A spec as the person edits it: one `key: value` a line.
pub(crate) fn spec_text(spec: &FunctionSpec) -> String {
    format!(
        "purpose: {}\ninputs: {}\noutput: {}\ndepends_on: {}\n",
        spec.purpose,
        spec.inputs,
        spec.output,
        spec.depends_on.join(", ")
    )
}

/// Read an edited spec back (the name stays the node's).
pub(crate) fn parse_spec(node: &str, text: &str) -> Result<FunctionSpec, String> {
    let mut spec = FunctionSpec {
        name: node.to_string(),
        purpose: String::new(),
        inputs: String::new(),
        output: String::new(),
        depends_on: Vec::new(),
        head: None,
    };
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!(
                "spec line {} has no `key: value` (keys: purpose, inputs, output, depends_on)",
                i + 1
            ));
        };
        let value = value.trim().to_string();
        match key.trim() {
            "purpose" => spec.purpose = value,
            "inputs" => spec.inputs = value,
            "output" => spec.output = value,
            "depends_on" => {
                spec.depends_on = value
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            }
            other => {
                return Err(format!(
                    "spec line {}: unknown key `{other}` (keys: purpose, inputs, output, depends_on)",
                    i + 1
                ));
            }
        }
    }
    if spec.purpose.is_empty() {
        return Err("the spec needs a `purpose:` line".into());
    }
    Ok(spec)
}

/// How the plan editor begins when there is no plan to edit.
const PLAN_TEMPLATE: &str = "\
# The plan: a block a function, from its name: line.
# Lines with # are left out. The model writes the
# tests and code; depends_on names other functions.
#
# name: parse_line
# purpose: split a key=value line into key and value
# inputs: line: str
# output: tuple[str, int]
# depends_on:

";

/// The plan as the person writes or edits it: the functions' specs as
/// text, one block a function, each beginning with `name:`.
pub(crate) fn plan_text(specs: &[FunctionSpec]) -> String {
    if specs.is_empty() {
        return PLAN_TEMPLATE.to_string();
    }
    specs
        .iter()
        .map(|s| format!("name: {}\n{}", s.name, spec_text(s)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Read a written plan back: its specs, checked as a plan (names, unknown
/// dependencies, cycles) the way the engine checks the model's.
pub(crate) fn parse_plan(text: &str) -> Result<Vec<FunctionSpec>, String> {
    let mut blocks: Vec<(String, usize, String)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') {
            continue;
        }
        if let Some(("name", name)) = trimmed.split_once(':').map(|(k, v)| (k.trim(), v.trim())) {
            if name.is_empty() {
                return Err(format!(
                    "plan line {}: `name:` needs a function name",
                    i + 1
                ));
            }
            blocks.push((name.to_string(), i + 1, String::new()));
            continue;
        }
        match blocks.last_mut() {
            Some((_, _, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None if trimmed.is_empty() => {}
            None => {
                return Err(format!(
                    "plan line {}: each function begins with a `name:` line",
                    i + 1
                ));
            }
        }
    }
    if blocks.is_empty() {
        return Err("the plan names no function: write a `name:` line and its spec".into());
    }
    let mut specs = Vec::new();
    for (name, line, body) in blocks {
        let spec = parse_spec(&name, &body)
            .map_err(|e| format!("function `{name}` (from line {line}): {e}"))?;
        specs.push(spec);
    }
    codeloop_session::Dag::new(specs.clone()).map_err(|e| e.to_string())?;
    Ok(specs)
}

/// The model as the status bar names it.
pub(crate) fn model_label(c: &codeloop_session::ConfigSummary) -> String {
    match c.provider.as_str() {
        "demo" => "demo model: authored replies, offline".to_string(),
        "scripted" => format!("scripted model ({})", c.endpoint),
        _ => format!("{} at {}", c.model_shown(), c.endpoint),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_reads_back_as_it_was_written() {
        let spec = FunctionSpec {
            name: "parse".into(),
            purpose: "split a line".into(),
            inputs: "line: str".into(),
            output: "tuple".into(),
            depends_on: vec!["a".into(), "b".into()],
            head: None,
        };
        assert_eq!(parse_spec("parse", &spec_text(&spec)), Ok(spec));
    }

    #[test]
    fn a_written_plan_reads_back_and_a_bad_one_says_why() {
        let specs = vec![
            FunctionSpec {
                name: "parse".into(),
                purpose: "split a line".into(),
                inputs: "line: str".into(),
                output: "tuple".into(),
                depends_on: vec![],
                head: None,
            },
            FunctionSpec {
                name: "total".into(),
                purpose: "sum the values".into(),
                inputs: "lines: list[str]".into(),
                output: "int".into(),
                depends_on: vec!["parse".into()],
                head: None,
            },
        ];
        assert_eq!(parse_plan(&plan_text(&specs)), Ok(specs));
        // The template is all comments: it names no function yet.
        let err = parse_plan(&plan_text(&[])).unwrap_err();
        assert!(err.contains("names no function"), "{err}");
        let err = parse_plan("purpose: x\n").unwrap_err();
        assert!(err.contains("line 1") && err.contains("`name:`"), "{err}");
        let err = parse_plan("name: a\npurpose: x\ndepends_on: b\n").unwrap_err();
        assert!(err.contains('b'), "an unknown dependency is named: {err}");
        let err = parse_plan("name: a\ninputs: x\n").unwrap_err();
        assert!(err.contains("`a`") && err.contains("purpose"), "{err}");
    }

    #[test]
    fn a_bad_spec_says_which_line_and_which_keys() {
        let err = parse_spec("p", "purpose: x\nowner: me\n").unwrap_err();
        assert!(
            err.contains("line 2") && err.contains("unknown key `owner`"),
            "{err}"
        );
        let err = parse_spec("p", "inputs: x\n").unwrap_err();
        assert!(err.contains("purpose"), "{err}");
    }
}
