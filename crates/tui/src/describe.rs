//! Steering in words: a spec as the person edits it (and read back), a
//! command in a few words, where a code version came from, and what the
//! engine is paused before. Shared by the panes and the app.

use codeloop_session::{CodeSource, Command, FunctionSpec, Step};

/// A spec as the person edits it: one `key: value` a line.
pub fn spec_text(spec: &FunctionSpec) -> String {
    format!(
        "purpose: {}\ninputs: {}\noutput: {}\ndepends_on: {}\n",
        spec.purpose,
        spec.inputs,
        spec.output,
        spec.depends_on.join(", ")
    )
}

/// Read an edited spec back (the name stays the node's).
pub fn parse_spec(node: &str, text: &str) -> Result<FunctionSpec, String> {
    let mut spec = FunctionSpec {
        name: node.to_string(),
        purpose: String::new(),
        inputs: String::new(),
        output: String::new(),
        depends_on: Vec::new(),
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

/// A command in a few words, for the flash line and the history.
pub fn describe_command(command: &Command) -> String {
    match command {
        Command::SetStepMode { on: true } => "step mode on".into(),
        Command::SetStepMode { on: false } => "step mode off".into(),
        Command::Approve => "approved".into(),
        Command::Skip => "skipped".into(),
        Command::EditTask { .. } => "task edited".into(),
        Command::EditSpec { node, .. } => format!("spec of {node} edited"),
        Command::EditCode { node, code } => {
            format!("code of {node} edited ({} lines)", code.lines().count())
        }
        Command::EditTests { node, .. } => format!("tests of {node} edited"),
        Command::Hint { node, text } => format!("hint for {node}: {text}"),
        Command::RerunNode { node } => format!("re-run {node}"),
        Command::Cancel => "cancelled".into(),
        Command::ReviewPrompt => "show the prompt before it is sent".into(),
        Command::EditPrompt { messages } => format!(
            "prompt edited ({} lines)",
            messages
                .iter()
                .map(|m| m.content.lines().count())
                .sum::<usize>()
        ),
    }
}

/// The label of a code version's origin.
pub fn source_label(source: CodeSource) -> &'static str {
    match source {
        CodeSource::Model => "model",
        CodeSource::Edit => "edited by you",
        CodeSource::Cache => "cache",
        CodeSource::Given => "given",
        CodeSource::PlanReply => "model (its plan reply)",
    }
}

/// What the engine is paused before, in words.
pub fn describe_step(step: &Step) -> String {
    use codeloop_session::Purpose;
    match step {
        Step::ModelCall { purpose } => match purpose {
            Purpose::Plan => "the planning call".into(),
            Purpose::Tests { node } => format!("writing tests for {node}"),
            Purpose::Code { node } => format!("writing code for {node}"),
            Purpose::Reflect { node } => format!("reflecting on {node}"),
            Purpose::Repair { node } => format!("repairing {node}"),
        },
        Step::Run {
            node: Some(n),
            iteration,
        } => format!("running {n} (iteration {iteration})"),
        Step::Run { node: None, .. } => "running the program".into(),
        Step::TestFix { node, .. } => format!("changing the tests of {node} (the model's fix)"),
        Step::Prompt { tag, .. } => {
            format!("sending the prompt of {tag}")
        }
    }
}

/// The model as the status bar names it.
pub fn model_label(c: &codeloop_session::ConfigSummary) -> String {
    match c.provider.as_str() {
        "demo" => "demo model: authored replies, offline".to_string(),
        "scripted" => format!("scripted model ({})", c.endpoint),
        _ => format!("{} at {}", c.model, c.endpoint),
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
        };
        assert_eq!(parse_spec("parse", &spec_text(&spec)), Ok(spec));
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
