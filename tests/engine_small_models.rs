//! What small models do to the loop, scripted with real python3 in the real
//! sandbox: code the static check knows cannot run goes to repair unrun, in
//! step mode unasked.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::sync::Arc;

use codeloop::engine::{self, EngineOptions, EngineSetup};
use codeloop::exec::Sandbox;
use codeloop::llm::scripted::{Pacing, ScriptedModel, ScriptedReply};
use codeloop::session::*;

fn reply(tag: &str, text: &str) -> ScriptedReply {
    ScriptedReply {
        tag: tag.into(),
        text: text.into(),
        usage: None,
    }
}

fn py(code: &str) -> String {
    format!("```python\n{code}```\n")
}

/// Run `task` to the end; in step mode, `on_pause` answers each pause.
async fn finish(
    task: &str,
    replies: Vec<ScriptedReply>,
    options: EngineOptions,
    on_pause: impl Fn(&Step) -> Command,
) -> (State, FinalResult, Vec<Record>) {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::from_replies("test-script", replies, Pacing::instant());
    let setup = EngineSetup {
        task: task.into(),
        inputs: vec![],
        model: Arc::new(model),
        sandbox: Arc::new(Sandbox::probe()),
        options,
        session_dir: dir.path().join("session"),
        prompt_overrides: None,
        given: None,
    };
    let mut handle = engine::start(setup).unwrap();
    let mut records = Vec::new();
    while let Some(r) = handle.events.recv().await {
        if let Event::Paused { step } = &r.event {
            handle.commands.send(on_pause(step)).await.unwrap();
        }
        records.push(r);
    }
    let result = handle.done.await.unwrap().unwrap();
    (State::from_records(&records), result, records)
}

/// The user prompt of the request tagged `tag`.
fn prompt_of(records: &[Record], tag: &str) -> String {
    records
        .iter()
        .find_map(|r| match &r.event {
            Event::ModelRequest {
                tag: t, messages, ..
            } if t == tag => Some(messages.last().unwrap().content.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no request tagged {tag}"))
}

const ADD_TESTS: &str = "def test_add():\n    assert add(2, 3) == 5\n";

#[tokio::test]
async fn code_the_check_knows_cannot_run_is_repaired_unrun_and_unasked() {
    let replies = vec![
        reply(
            "plan",
            r#"{"functions": [{"name": "add", "purpose": "Add.", "inputs": "a, b", "output": "int"}]}"#,
        ),
        reply("tests/add", &py(ADD_TESTS)),
        // A syntax error, then no function of the planned name.
        reply("code/add/1", &py("def add(a, b)\n    return a + b\n")),
        reply(
            "repair/add/2",
            &format!(
                "A colon was missing.\n{}",
                py("def plus(a, b):\n    return a + b\n")
            ),
        ),
        reply(
            "repair/add/3",
            &format!(
                "It must be called add.\n{}",
                py("def add(a, b):\n    return a + b\n")
            ),
        ),
    ];
    let options = EngineOptions {
        step_mode: true,
        ..EngineOptions::default()
    };
    let (state, result, records) =
        finish("add two numbers", replies, options, |_| Command::Approve).await;
    assert!(result.passed, "{}", result.summary);
    let localized: Vec<(u32, String, Option<u32>)> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Localized {
                iteration,
                location,
                ..
            } => Some((*iteration, location.error_type.clone(), location.line)),
            _ => None,
        })
        .collect();
    assert_eq!(
        localized,
        vec![
            (1, "SyntaxError".to_string(), Some(1)),
            (2, "MissingDefinition".to_string(), None)
        ]
    );
    // Neither broken version ran, and step mode asked to run only the third.
    let ran: Vec<u32> = state
        .runs
        .values()
        .filter(|r| r.node.is_some())
        .map(|r| r.iteration)
        .collect();
    assert_eq!(ran, vec![3]);
    let asked: Vec<u32> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Paused {
                step:
                    Step::Run {
                        node: Some(_),
                        iteration,
                    },
            } => Some(*iteration),
            _ => None,
        })
        .collect();
    assert_eq!(asked, vec![3]);
    // The repairs were shown the check's findings.
    let first = prompt_of(&records, "repair/add/2");
    assert!(first.contains("SyntaxError"), "{first}");
    let second = prompt_of(&records, "repair/add/3");
    assert!(
        second.contains("defines no top-level function named 'add'"),
        "{second}"
    );
}
