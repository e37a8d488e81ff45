//! The assembled program, run as a program, calls what the task asked for
//! (issue 42: a words task's `out/program.py` printed nothing): the plan's
//! last function on the task's own examples, or on the attached file for a
//! function of one parameter. Real engine, scripted model, real python3.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-engine-child");

use codeloop_engine::{self as engine, EngineOptions};
use codeloop_session::*;
use codeloop_testkit::engine as engine_kit;
use codeloop_testkit::{py, reply};

fn plan(name: &str, inputs: &str) -> String {
    format!(
        "```json\n{{\"functions\": [{{\"name\": \"{name}\", \"purpose\": \"the words\", \"inputs\": \"{inputs}\", \"output\": \"int\", \"depends_on\": []}}]}}\n```"
    )
}

#[tokio::test]
async fn the_program_calls_the_last_function_on_the_tasks_example_and_prints_it() {
    let dir = tempfile::tempdir().unwrap();
    let replies = vec![
        reply("plan", &plan("count_words", "text: str")),
        reply(
            "tests/count_words",
            &py("def test_two():\n    assert count_words('a b') == 2\n"),
        ),
        reply(
            "code/count_words/1",
            &py("def count_words(text):\n    return len(text.split())\n"),
        ),
    ];
    let setup = engine_kit::setup(
        "Count the words of a text. Example: count_words('the cat sat') == 3",
        engine_kit::scripted(replies),
        EngineOptions::default(),
        dir.path().join("session"),
        HELPER,
    );
    let (state, result, _) =
        engine_kit::finish(engine::start(setup).unwrap(), |_| Vec::<Command>::new()).await;
    assert!(result.passed, "{}", result.summary);
    let program = &state.program.as_ref().unwrap().code;
    assert!(
        program.contains("_result = count_words('the cat sat')"),
        "{program}"
    );
    assert_eq!(state.program_output.as_ref().unwrap().stdout.trim(), "3");
    assert!(
        result.summary.contains("it printed: 3"),
        "{}",
        result.summary
    );
    let written = std::fs::read_to_string(
        std::path::Path::new(result.output_dir.as_deref().unwrap()).join("program.py"),
    )
    .unwrap();
    assert!(written.contains("count_words('the cat sat')"), "{written}");
}

#[tokio::test]
async fn a_function_of_one_parameter_is_called_on_the_attached_file() {
    let dir = tempfile::tempdir().unwrap();
    let words = dir.path().join("words.txt");
    std::fs::write(&words, "one two three four\n").unwrap();
    let replies = vec![
        reply("plan", &plan("count_file_words", "path: str")),
        reply(
            "tests/count_file_words",
            &py("def test_file():\n    assert count_file_words('words.txt') == 4\n"),
        ),
        reply(
            "code/count_file_words/1",
            &py(
                "def count_file_words(path):\n    with open(path) as f:\n        return len(f.read().split())\n",
            ),
        ),
    ];
    let mut setup = engine_kit::setup(
        "Count the words in the attached file",
        engine_kit::scripted(replies),
        EngineOptions::default(),
        dir.path().join("session"),
        HELPER,
    );
    setup.inputs = vec![words];
    let (state, result, _) =
        engine_kit::finish(engine::start(setup).unwrap(), |_| Vec::<Command>::new()).await;
    assert!(result.passed, "{}", result.summary);
    let program = &state.program.as_ref().unwrap().code;
    assert!(
        program.contains("_result = count_file_words(\"words.txt\")"),
        "{program}"
    );
    assert_eq!(state.program_output.as_ref().unwrap().stdout.trim(), "4");
}
