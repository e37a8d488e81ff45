//! A part of codeloop that panics (a bug, or a number a lying server gave
//! that some code trusted) never leaves a session hanging: the views' event
//! stream ends, the error reaches whoever waits on the engine, and `run`
//! exits. The model here panics on purpose: no server can make our own code
//! panic once its numbers are bounded (see `llm_faults.rs` and
//! `run_lying_server.rs` for those, at the wire).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-engine-child");

use std::sync::Arc;
use std::time::Duration;

use codeloop_engine::{self as engine, EngineOptions};
use codeloop_llm::scripted::{Pacing, ScriptedModel, ScriptedReply};
use codeloop_llm::{ChatFuture, ChatModel, ChatRequest, Delta};
use codeloop_testkit::engine as engine_kit;
use tokio::sync::mpsc;

/// Answers as its script does, and panics at the call whose tag starts
/// with `panic_at`.
struct PanicsAt {
    script: ScriptedModel,
    panic_at: &'static str,
}

impl ChatModel for PanicsAt {
    fn stream<'a>(&'a self, request: ChatRequest, deltas: mpsc::Sender<Delta>) -> ChatFuture<'a> {
        if request.tag.starts_with(self.panic_at) {
            panic!("a semaphore may not have more than MAX_PERMITS permits");
        }
        self.script.stream(request, deltas)
    }
    fn provider(&self) -> &str {
        "test"
    }
    fn model_name(&self) -> &str {
        "panics"
    }
    fn endpoint(&self) -> &str {
        "nowhere"
    }
}

const PLAN: &str = "```json\n{\"functions\": [{\"name\": \"f\", \"purpose\": \"f\", \"inputs\": \"x\", \"output\": \"y\", \"depends_on\": []}]}\n```";

async fn ends_with_the_error(panic_at: &'static str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let script = ScriptedModel::from_replies(
        "panics",
        vec![ScriptedReply {
            tag: "plan".into(),
            text: PLAN.into(),
            usage: None,
        }],
        Pacing::instant(),
    );
    let setup = engine_kit::setup(
        "a task",
        Arc::new(PanicsAt { script, panic_at }),
        EngineOptions::default(),
        dir.path().join("session"),
        HELPER,
    );
    let mut handle = engine::start(setup).unwrap();
    // Before the fix the views' stream never ended: bounded here so the
    // test fails rather than hangs.
    let drained = tokio::time::timeout(Duration::from_secs(60), async {
        while handle.events.recv().await.is_some() {}
    })
    .await;
    assert!(
        drained.is_ok(),
        "the session's events never ended ({panic_at})"
    );
    match handle.done.await {
        Err(join) => join.to_string(),
        Ok(Err(e)) => format!("{e:#}"),
        Ok(Ok(_)) => panic!("a panic ended as a result ({panic_at})"),
    }
}

#[tokio::test]
async fn a_panic_in_the_sessions_own_task_ends_the_session_with_the_error() {
    let said = ends_with_the_error("plan").await;
    assert!(said.contains("MAX_PERMITS"), "{said}");
}

#[tokio::test]
async fn a_panic_in_a_nodes_task_ends_the_session_with_the_error() {
    let said = ends_with_the_error("tests/").await;
    assert!(
        said.contains("codeloop stopped on an internal error"),
        "{said}"
    );
    assert!(said.contains("MAX_PERMITS"), "{said}");
}
