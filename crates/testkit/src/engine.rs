//! A session of the engine as its tests run one: a scripted model, the
//! test crate's sandbox helper, a session folder of the test's own, and
//! the session read to its end.

use std::path::PathBuf;
use std::sync::Arc;

use codeloop_engine::{EngineHandle, EngineOptions, EngineSetup};
use codeloop_llm::ChatModel;
use codeloop_llm::scripted::{Pacing, ScriptedModel, ScriptedReply};
use codeloop_session::{Command, Event, FinalResult, PausedEvent, Record, State, Step};

/// A model that answers `replies` by their tags, at once.
pub fn scripted(replies: Vec<ScriptedReply>) -> Arc<dyn ChatModel> {
    Arc::new(ScriptedModel::from_replies(
        "test-script",
        replies,
        Pacing::instant(),
    ))
}

/// `task` answered by `model` with `options`, its tape and files in
/// `session_dir`, its sandbox's helper `helper` (the test crate's
/// `env!("CARGO_BIN_EXE_...")`): no inputs, no prompt overrides, no plan
/// given.
pub fn setup(
    task: &str,
    model: Arc<dyn ChatModel>,
    options: EngineOptions,
    session_dir: PathBuf,
    helper: &str,
) -> EngineSetup {
    EngineSetup {
        task: task.into(),
        inputs: vec![],
        model,
        sandbox: crate::sandbox(helper),
        options,
        session_dir,
        prompt_overrides: None,
        given: None,
    }
}

/// A live session read to its end, each pause answered by the commands
/// `on_pause` gives (`[Command::Approve]`, or none where the session never
/// pauses): the state its records fold into, its result and its records.
pub async fn finish<C: IntoIterator<Item = Command>>(
    mut handle: EngineHandle,
    on_pause: impl Fn(&Step) -> C,
) -> (State, FinalResult, Vec<Record>) {
    let mut records = Vec::new();
    while let Some(r) = handle.events.recv().await {
        if let Event::Paused(PausedEvent { step }) = &r.event {
            for command in on_pause(step) {
                handle.commands.send(command).await.unwrap();
            }
        }
        records.push(r);
    }
    let result = handle.done.await.unwrap().unwrap();
    (State::from_records(&records), result, records)
}
