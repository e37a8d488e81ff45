//! The scripted model: replies by tag in order, exhaustion, tape input, streaming.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::io::Write;
use std::time::{Duration, Instant};

use codeloop::llm::scripted::{Pacing, ScriptedModel};
use codeloop::llm::{ChatModel, ChatRequest, LlmError};
use codeloop::protocol::{ChatMessage, Role, Usage};
use codeloop::session::{
    Event, ModelDeltaEvent, ModelErrorEvent, ModelReplyEvent, ModelRequestEvent, Purpose,
    TapeWriter,
};
use tokio::sync::mpsc;

fn request(tag: &str) -> ChatRequest {
    ChatRequest {
        tag: tag.into(),
        messages: vec![ChatMessage {
            role: Role::User,
            content: "x".repeat(40),
        }],
        ..Default::default()
    }
}

/// Ask, collect every delta, return (reply text, deltas).
async fn ask(
    model: &dyn ChatModel,
    tag: &str,
) -> Result<(codeloop::llm::ChatReply, Vec<String>), LlmError> {
    let (tx, mut rx) = mpsc::channel(8);
    let collector = tokio::spawn(async move {
        let mut got = Vec::new();
        while let Some(d) = rx.recv().await {
            got.push(d);
        }
        got
    });
    let reply = model.stream_chat(request(tag), tx).await;
    let deltas = collector.await.unwrap();
    reply.map(|r| (r, deltas))
}

fn write_file(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    path
}

const REPLIES: &str = r#"{"tag": "plan", "text": "the plan", "usage": {"prompt_tokens": 11, "completion_tokens": 3}}
{"tag": "code/parse/1", "text": "def parse(s):\n    return s.split(',')  # première version ✓\n"}

{"tag": "code/parse/1", "text": "second reply with the same tag"}
{"tag": "reflect/parse/1", "text": "the split keeps spaces"}
"#;

#[tokio::test]
async fn replies_are_answered_by_tag_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(&dir, "replies.jsonl", REPLIES);
    let model = ScriptedModel::from_file(&path, Pacing::instant()).unwrap();
    assert_eq!(model.provider(), "scripted");
    assert_eq!(model.model_name(), "replies.jsonl");
    assert_eq!(model.remaining(), 4);

    // Asked out of file order: each tag keeps its own order.
    let (reflect, _) = ask(&model, "reflect/parse/1").await.unwrap();
    assert_eq!(reflect.text, "the split keeps spaces");
    let (first, _) = ask(&model, "code/parse/1").await.unwrap();
    assert!(first.text.starts_with("def parse(s):"));
    let (second, _) = ask(&model, "code/parse/1").await.unwrap();
    assert_eq!(second.text, "second reply with the same tag");
    let (plan, _) = ask(&model, "plan").await.unwrap();
    assert_eq!(plan.text, "the plan");
    // Given usage is reported as given.
    assert_eq!(plan.usage, Some(Usage::new(11, 3)));
    assert!(!plan.usage_estimated);
    // Missing usage is estimated at ~4 characters a token, and says so.
    assert!(reflect.usage_estimated);
    assert_eq!(reflect.usage, Some(Usage::new(10, 6)));
    assert_eq!(model.remaining(), 0);
}

#[tokio::test]
async fn an_exhausted_tag_is_an_error_naming_it_and_the_tags_there_are() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(&dir, "replies.jsonl", REPLIES);
    let model = ScriptedModel::from_file(&path, Pacing::instant()).unwrap();
    ask(&model, "plan").await.unwrap();

    let used_up = ask(&model, "plan").await.unwrap_err();
    assert!(
        matches!(used_up, LlmError::ScriptExhausted(_)),
        "{used_up:?}"
    );
    let message = used_up.to_string();
    assert!(message.contains("\"plan\""), "{message}");
    assert!(
        message.contains("all 1 replies tagged so are used"),
        "{message}"
    );

    let unknown = ask(&model, "tests/parse").await.unwrap_err().to_string();
    assert!(unknown.contains("\"tests/parse\""), "{unknown}");
    assert!(unknown.contains("replies.jsonl"), "{unknown}");
    for tag in [
        "\"plan\" (1)",
        "\"code/parse/1\" (2)",
        "\"reflect/parse/1\" (1)",
    ] {
        assert!(unknown.contains(tag), "{tag} missing from: {unknown}");
    }
}

#[tokio::test]
async fn deltas_concatenate_to_the_text() {
    let long = "ab→ç😀\n".repeat(50);
    let script = format!("{}\n", serde_json::json!({"tag": "code/x/1", "text": long}));
    for chars_per_chunk in [1, 3, 7, 1000] {
        let model = ScriptedModel::demo(
            "t",
            &script,
            Pacing {
                chars_per_chunk,
                delay: Duration::ZERO,
            },
        )
        .unwrap();
        let (reply, deltas) = ask(&model, "code/x/1").await.unwrap();
        assert_eq!(reply.text, long);
        assert_eq!(deltas.concat(), long, "chunks of {chars_per_chunk}");
        let chars = long.chars().count();
        assert_eq!(deltas.len(), chars.div_ceil(chars_per_chunk));
        assert!(deltas.iter().all(|d| d.chars().count() <= chars_per_chunk));
    }
}

#[tokio::test]
async fn a_demo_is_labelled_and_paced() {
    let model = ScriptedModel::demo(
        "csv",
        "{\"tag\":\"plan\",\"text\":\"0123456789\"}\n",
        Pacing {
            chars_per_chunk: 2,
            delay: Duration::from_millis(30),
        },
    )
    .unwrap();
    assert_eq!(model.provider(), "demo");
    assert!(model.endpoint().contains("csv"), "{}", model.endpoint());
    let start = Instant::now();
    let (_, deltas) = ask(&model, "plan").await.unwrap();
    // Five deltas, four pauses between them.
    assert_eq!(deltas.len(), 5);
    assert!(
        start.elapsed() >= Duration::from_millis(120),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn a_closed_delta_receiver_is_not_an_error() {
    let model = ScriptedModel::demo(
        "t",
        "{\"tag\":\"plan\",\"text\":\"hello\"}\n",
        Pacing::instant(),
    )
    .unwrap();
    let (tx, rx) = mpsc::channel(1);
    drop(rx);
    let reply = model.stream_chat(request("plan"), tx).await.unwrap();
    assert_eq!(reply.text, "hello");
}

/// A tape written by the session's own writer replays as a script: replies
/// paired to their requests by call_id, answered by the requests' tags, a
/// failed call skipped, and a last line cut off mid-write ignored.
#[tokio::test]
async fn a_recorded_tape_is_a_script() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tape.jsonl");
    let mut tape = TapeWriter::create(&path).unwrap();
    let req = |call_id, tag: &str, purpose| {
        Event::ModelRequest(ModelRequestEvent {
            call_id,
            purpose,
            tag: tag.into(),
            // The prompt `request()` asks: a tape answers by the prompt.
            messages: request("").messages,
        })
    };
    let reply = |call_id, text: &str, usage| {
        Event::ModelReply(ModelReplyEvent {
            call_id,
            text: text.into(),
            usage,
            duration_ms: 5,
            reasoning: String::new(),
            finish_reason: None,
            usage_estimated: false,
            structured: None,
            prefilled: None,
            stopped: None,
        })
    };
    tape.append(req(1, "plan", Purpose::Plan)).unwrap();
    tape.append(Event::ModelDelta(ModelDeltaEvent {
        call_id: 1,
        text: "pl".into(),
    }))
    .unwrap();
    tape.append(reply(1, "plan text", Some(Usage::new(7, 2))))
        .unwrap();
    let node = || "parse".to_string();
    // Two calls in flight at once; their replies land in the other order.
    tape.append(req(2, "code/parse/1", Purpose::Code { node: node() }))
        .unwrap();
    tape.append(req(3, "tests/parse", Purpose::Tests { node: node() }))
        .unwrap();
    tape.append(reply(3, "tests text", None)).unwrap();
    tape.append(reply(2, "code v1", None)).unwrap();
    // A call that failed: no reply, so nothing to replay.
    tape.append(req(4, "code/parse/2", Purpose::Repair { node: node() }))
        .unwrap();
    tape.append(Event::ModelError(ModelErrorEvent {
        call_id: 4,
        message: "timeout".into(),
        usage: None,
    }))
    .unwrap();
    tape.append(req(5, "code/parse/2", Purpose::Repair { node: node() }))
        .unwrap();
    tape.append(reply(5, "code v2", None)).unwrap();
    tape.flush().unwrap();
    drop(tape);
    // The session was killed mid-write.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(br#"{"seq":99,"t_ms":1,"type":"model_req"#)
        .unwrap();

    let model = ScriptedModel::from_file(&path, Pacing::instant()).unwrap();
    assert_eq!(model.remaining(), 4);
    let (plan, _) = ask(&model, "plan").await.unwrap();
    assert_eq!(plan.text, "plan text");
    assert_eq!(plan.usage, Some(Usage::new(7, 2)));
    assert_eq!(
        ask(&model, "tests/parse").await.unwrap().0.text,
        "tests text"
    );
    assert_eq!(ask(&model, "code/parse/1").await.unwrap().0.text, "code v1");
    let (v2, _) = ask(&model, "code/parse/2").await.unwrap();
    assert_eq!(v2.text, "code v2");
    assert!(v2.usage_estimated);
    assert!(matches!(
        ask(&model, "code/parse/2").await,
        Err(LlmError::ScriptExhausted(_))
    ));
}

#[tokio::test]
async fn unreadable_scripts_say_where_and_what() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.jsonl");
    let err = ScriptedModel::from_file(&missing, Pacing::instant())
        .unwrap_err()
        .to_string();
    assert!(err.contains("nope.jsonl"), "{err}");

    let bad = write_file(
        &dir,
        "bad.jsonl",
        "{\"tag\":\"plan\",\"text\":\"x\"}\nnot json\n",
    );
    let err = ScriptedModel::from_file(&bad, Pacing::instant())
        .unwrap_err()
        .to_string();
    assert!(err.contains("bad.jsonl") && err.contains("line 2"), "{err}");

    let tape_without_replies = write_file(
        &dir,
        "t.jsonl",
        "{\"seq\":0,\"t_ms\":0,\"type\":\"notice\",\"level\":\"info\",\"message\":\"hi\"}\n",
    );
    let err = ScriptedModel::from_file(&tape_without_replies, Pacing::instant())
        .unwrap_err()
        .to_string();
    assert!(err.contains("no model replies"), "{err}");
}

/// Every bundled demo's authored replies load as a script and stream back
/// exactly, starting with a plan.
#[tokio::test]
async fn the_bundled_demo_replies_load() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demos");
    let mut seen = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path().join("replies.jsonl");
        if !path.exists() {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let replies = codeloop::llm::scripted::parse_script(&text, "demo").unwrap();
        assert_eq!(replies[0].tag, "plan", "{}", path.display());
        let model = ScriptedModel::demo("d", &text, Pacing::instant()).unwrap();
        for reply in &replies {
            let (got, deltas) = ask(&model, &reply.tag).await.unwrap();
            assert_eq!(got.text, reply.text);
            assert_eq!(deltas.concat(), reply.text);
        }
        assert_eq!(model.remaining(), 0);
    }
    assert!(seen > 0, "no demos under {}", root.display());
}

#[tokio::test]
async fn recorded_reasoning_and_a_cut_off_reply_replay_as_they_were() {
    use codeloop::llm::{Delta, FinishReason};
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(
        &dir,
        "r.jsonl",
        concat!(
            r#"{"tag": "plan", "text": "<think>which shape?</think>\nthe plan", "reasoning": "recorded apart. "}"#,
            "\n",
            r#"{"tag": "code/f/1", "text": "def f(", "finish_reason": "length"}"#,
            "\n",
        ),
    );
    let model = ScriptedModel::from_file(&path, Pacing::instant()).unwrap();
    let (tx, mut rx) = mpsc::channel(64);
    let reply = model.stream(request("plan"), tx).await.unwrap();
    let mut deltas = Vec::new();
    while let Some(d) = rx.recv().await {
        deltas.push(d);
    }
    assert_eq!(reply.text, "the plan");
    assert_eq!(reply.reasoning, "recorded apart. which shape?");
    assert_eq!(reply.finish_reason, FinishReason::Stop);
    assert_eq!(
        deltas,
        vec![
            Delta::Reasoning("recorded apart. which shape?".into()),
            Delta::Content("the plan".into())
        ]
    );
    // The estimate counts the reasoning as written tokens.
    assert!(reply.usage_estimated);
    assert_eq!(reply.usage.map(|u| u.completion_tokens), Some(9));

    let (reply, _) = ask(&model, "code/f/1").await.unwrap();
    assert_eq!(reply.text, "def f(");
    assert!(reply.is_cut_off());
}

/// A tape written with real prompts: each request recorded with its messages.
fn tape_with_prompts(dir: &tempfile::TempDir, calls: &[(&str, &str, &str)]) -> std::path::PathBuf {
    let path = dir.path().join("prompted.jsonl");
    let mut tape = TapeWriter::create(&path).unwrap();
    for (i, (tag, prompt, answer)) in calls.iter().enumerate() {
        let call_id = i as u64 + 1;
        tape.append(Event::ModelRequest(ModelRequestEvent {
            call_id,
            purpose: Purpose::Plan,
            tag: (*tag).into(),
            messages: vec![
                ChatMessage::system("You write small Python functions."),
                ChatMessage::user(*prompt),
            ],
        }))
        .unwrap();
        tape.append(Event::ModelReply(ModelReplyEvent {
            call_id,
            text: (*answer).into(),
            usage: None,
            duration_ms: 1,
            reasoning: String::new(),
            finish_reason: None,
            usage_estimated: false,
            structured: None,
            prefilled: None,
            stopped: None,
        }))
        .unwrap();
    }
    tape.flush().unwrap();
    path
}

async fn ask_prompt(model: &dyn ChatModel, tag: &str, prompt: &str) -> Result<String, LlmError> {
    let (tx, mut rx) = mpsc::channel(64);
    tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let request = ChatRequest {
        tag: tag.into(),
        messages: vec![
            ChatMessage::system("You write small Python functions."),
            ChatMessage::user(prompt),
        ],
        ..Default::default()
    };
    model.stream_chat(request, tx).await.map(|r| r.text)
}

/// A tape answers by the prompt: two requests under one tag, asked in the
/// other order than recorded, each get the answer recorded for their own
/// prompt (by order alone they would swap).
#[tokio::test]
async fn a_tape_answers_by_the_prompt_whatever_the_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = tape_with_prompts(
        &dir,
        &[
            (
                "code/f/1",
                "Write f.\nIt adds one.",
                "def f(x): return x + 1",
            ),
            (
                "code/f/1",
                "Write f.\nIt doubles.",
                "def f(x): return 2 * x",
            ),
        ],
    );
    let model = ScriptedModel::from_file(&path, Pacing::instant()).unwrap();
    assert_eq!(
        ask_prompt(&model, "code/f/1", "Write f.\nIt doubles.")
            .await
            .unwrap(),
        "def f(x): return 2 * x"
    );
    assert_eq!(
        ask_prompt(&model, "code/f/1", "Write f.\nIt adds one.")
            .await
            .unwrap(),
        "def f(x): return x + 1"
    );
    // Asked again: the prompt was recorded, but its answer is used.
    let again = ask_prompt(&model, "code/f/1", "Write f.\nIt adds one.")
        .await
        .unwrap_err();
    assert!(matches!(again, LlmError::ScriptExhausted(_)), "{again:?}");
}

/// A prompt the tape did not record: the error names the call and shows
/// the first lines where it differs from the nearest recorded prompt.
#[tokio::test]
async fn a_prompt_miss_names_the_call_and_the_nearest_recorded_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let path = tape_with_prompts(
        &dir,
        &[
            ("plan", "Plan the task: sum a CSV column.", "the plan"),
            (
                "code/parse_line/2",
                "Repair parse_line.\nThe failure: KeyError 'x' at line 3.\nKeep the signature.",
                "def parse_line(s): ...",
            ),
        ],
    );
    let model = ScriptedModel::from_file(&path, Pacing::instant()).unwrap();
    let err = ask_prompt(
        &model,
        "code/parse_line/2",
        "Repair parse_line.\nThe failure: ValueError at line 5.\nKeep the signature.",
    )
    .await
    .unwrap_err();
    assert!(matches!(err, LlmError::ScriptMiss(_)), "{err:?}");
    let said = err.to_string();
    assert!(
        said.contains("the call \"code/parse_line/2\" (code, node `parse_line`, iteration 2)"),
        "{said}"
    );
    assert!(said.contains("prompted.jsonl"), "{said}");
    assert!(
        said.contains("nearest recorded one (\"code/parse_line/2\")"),
        "{said}"
    );
    assert!(
        said.contains(
            " Repair parse_line.\n-The failure: KeyError 'x' at line 3.\n+The failure: ValueError at line 5."
        ),
        "{said}"
    );
    // The recorded answer is still there for its own prompt.
    assert_eq!(model.remaining(), 2);
}

/// A bundled demo's tape, replayed anywhere, names no folder of the machine
/// it was recorded on (issue 21): its results are in the session's `out`.
#[test]
fn the_bundled_demo_tapes_name_no_folder_of_the_recording_machine() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demos");
    let mut seen = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path().join("tape.jsonl");
        if !path.exists() {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("/tmp/"), "{}", path.display());
        let records = codeloop::session::read_tape(&path).unwrap().records;
        let state = codeloop::session::State::from_records(&records);
        let finished = state.finished.expect("the demo finished");
        assert_eq!(
            finished.output_dir.as_deref(),
            Some("out"),
            "{}",
            path.display()
        );
    }
    assert_eq!(seen, codeloop::demos::all().len());
}
