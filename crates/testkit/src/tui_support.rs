//! A scripted session for the TUI tests: two nodes, a real-looking failure,
//! a streamed reflection, a repair, a passing program. Built by hand, record
//! by record, as the engine would write it.

use codeloop_protocol::*;
use codeloop_session::*;
use codeloop_tui::{Action, App, Info, Msg, Theme};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// A key pressed without modifiers.
pub fn key(c: KeyCode) -> Msg {
    Msg::Term(TermEvent::Key(KeyEvent::new(c, KeyModifiers::NONE)))
}

/// A character typed.
pub fn ch(c: char) -> Msg {
    key(KeyCode::Char(c))
}

/// Ctrl and a character.
pub fn ctrl(c: char) -> Msg {
    Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::CONTROL,
    )))
}

/// What the app asked for, for these messages in turn.
pub fn press(app: &mut App, msgs: impl IntoIterator<Item = Msg>) -> Vec<Action> {
    msgs.into_iter().flat_map(|m| app.update(m)).collect()
}

/// The event loop's part for the input files the app asked to describe:
/// each described (by the library the describing child process runs, here
/// in the test's own) and handed back; how many were.
pub fn describe_asked(app: &mut App, actions: Vec<Action>) -> usize {
    let mut n = 0;
    for action in actions {
        if let Action::DescribeInput { path, from } = action {
            let result = codeloop_inputs::describe(&path).map(|d| InputFile {
                name: d.name.clone(),
                source_path: path.display().to_string(),
                size_bytes: d.size_bytes,
                preview: String::new(),
                description: Some(d),
            });
            app.update(Msg::InputDescribed { path, from, result });
            n += 1;
        }
    }
    n
}

/// The engine commands among `actions`.
pub fn steers(actions: &[Action]) -> Vec<Command> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Steer(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

pub fn spec(name: &str, purpose: &str, deps: &[&str]) -> FunctionSpec {
    FunctionSpec {
        name: name.into(),
        purpose: purpose.into(),
        inputs: "line: str".into(),
        output: "tuple[str, int]".into(),
        depends_on: deps.iter().map(|d| d.to_string()).collect(),
        head: None,
    }
}

pub const PARSE_V1: &str = "def parse_line(line):\n    key, value = line.split(\"=\")\n    return key.strip(), int(value)\n";
pub const PARSE_V2: &str = "def parse_line(line):\n    if \"=\" not in line:\n        return None\n    key, value = line.split(\"=\", 1)\n    return key.strip(), int(value)\n";
pub const SUM_V1: &str = "def sum_by_key(lines):\n    totals = {}\n    for line in lines:\n        item = parse_line(line)\n        if item:\n            key, value = item\n            totals[key] = totals.get(key, 0) + value\n    return totals\n";
pub const PARSE_TESTS: &str = "def test_simple():\n    assert parse_line(\"a=1\") == (\"a\", 1)\n\ndef test_blank():\n    assert parse_line(\"\") is None\n";

fn run_record(passed: bool, exit: i32, tp: u32, tf: u32) -> RunRecord {
    RunRecord {
        passed,
        exit_code: Some(exit),
        signal: None,
        limit_hit: None,
        duration_ms: 48,
        dropped_bytes: 0,
        layers: vec!["hygiene".into(), "rlimits".into()],
        tests_passed: Some(tp),
        tests_failed: Some(tf),
        failed_tests: Vec::new(),
        resources: None,
    }
}

/// The events of the session, in order.
pub fn events() -> Vec<Event> {
    let failure = Location {
        file: "solution.py".into(),
        line: Some(2),
        column: None,
        function: Some("parse_line".into()),
        error_type: "ValueError".into(),
        message: "not enough values to unpack (expected 2, got 1)".into(),
        test: Some("test_blank".into()),
        expected: None,
        actual: None,
        context: vec![
            (1, "def parse_line(line):".into()),
            (2, "    key, value = line.split(\"=\")".into()),
            (3, "    return key.strip(), int(value)".into()),
        ],
        in_node_code: true,
        ..Default::default()
    };
    vec![
        Event::SessionStarted(SessionStartedEvent {
            version: TAPE_VERSION,
            session_id: "s-test".into(),
            started_at: "2026-11-23T01:00:00Z".into(),
            task: "Sum the values of key=value lines per key; skip blank lines.".into(),
            inputs: vec![],
            config: ConfigSummary {
                provider: "demo".into(),
                model: "demo".into(),
                endpoint: "bundled".into(),
                max_iterations: 4,
                workers: 2,
                timeout_secs: 10,
                sandbox_layers: vec!["hygiene".into(), "rlimits".into(), "landlock".into()],
                step_mode: false,
                ..Default::default()
            },
        }),
        Event::ModelRequest(ModelRequestEvent {
            call_id: 1,
            purpose: Purpose::Plan,
            tag: "plan".into(),
            messages: vec![],
        }),
        Event::ModelReply(ModelReplyEvent {
            call_id: 1,
            text: "plan".into(),
            usage: Some(Usage::new(300, 120)),
            duration_ms: 200,
            reasoning: String::new(),
            finish_reason: None,
            usage_estimated: false,
            structured: None,
            prefilled: None,
            stopped: None,
        }),
        Event::Plan(PlanEvent {
            specs: vec![
                spec("parse_line", "split one key=value line", &[]),
                spec("sum_by_key", "total the values per key", &["parse_line"]),
            ],
        }),
        Event::Tests(TestsEvent {
            node: "parse_line".into(),
            code: PARSE_TESTS.into(),
            source: CodeSource::Model,
        }),
        Event::NodeStatus(NodeStatusEvent {
            node: "parse_line".into(),
            status: NodeStatus::Generating,
        }),
        Event::Code(CodeEvent {
            node: "parse_line".into(),
            iteration: 1,
            code: PARSE_V1.into(),
            source: CodeSource::Model,
            notes: Vec::new(),
        }),
        Event::NodeStatus(NodeStatusEvent {
            node: "parse_line".into(),
            status: NodeStatus::Running,
        }),
        Event::RunStarted(RunStartedEvent {
            run_id: 1,
            node: Some("parse_line".into()),
            iteration: 1,
            kind: RunKind::NodeTests,
        }),
        Event::Output(OutputEvent {
            run_id: 1,
            stream: Stream::Stdout,
            text: "test_simple ... ok\n\x1b]0;owned title\x07test_blank ... ".into(),
        }),
        Event::Output(OutputEvent {
            run_id: 1,
            stream: Stream::Stdout,
            text: "FAIL\n".into(),
        }),
        Event::Output(OutputEvent {
            run_id: 1,
            stream: Stream::Stderr,
            text: "Traceback (most recent call last):\n  File \"solution.py\", line 2, in parse_line\n\x1b[31mValueError: not enough values to unpack (expected 2, got 1)\x1b[0m\n".into(),
        }),
        Event::RunFinished(RunFinishedEvent {
            run_id: 1,
            record: run_record(false, 1, 1, 1),
        }),
        Event::NodeStatus(NodeStatusEvent {
            node: "parse_line".into(),
            status: NodeStatus::Failed,
        }),
        Event::NodeStatus(NodeStatusEvent {
            node: "sum_by_key".into(),
            status: NodeStatus::Blocked,
        }),
        Event::Localized(LocalizedEvent {
            node: "parse_line".into(),
            iteration: 1,
            location: failure,
        }),
        Event::ModelRequest(ModelRequestEvent {
            call_id: 2,
            purpose: Purpose::Reflect {
                node: "parse_line".into(),
            },
            tag: "reflect/parse_line/1".into(),
            messages: vec![],
        }),
        Event::ModelDelta(ModelDeltaEvent {
            call_id: 2,
            text: "A blank line has no '=', so the split ".into(),
        }),
        Event::ModelDelta(ModelDeltaEvent {
            call_id: 2,
            text: "gives one value. Return None for lines without '='.".into(),
        }),
        Event::ModelReply(ModelReplyEvent {
            call_id: 2,
            text: "A blank line has no '=', so the split gives one value. Return None for lines without '='.".into(),
            usage: Some(Usage::new(500, 40)),
            duration_ms: 300,
            reasoning: String::new(),
            finish_reason: None,
            usage_estimated: false,
            structured: None,
            prefilled: None,
            stopped: None,
        }),
        Event::Reflection(ReflectionEvent {
            node: "parse_line".into(),
            iteration: 1,
            text: "A blank line has no '=', so the split gives one value. Return None for lines without '='.".into(),
        }),
        Event::Code(CodeEvent {
            node: "parse_line".into(),
            iteration: 2,
            code: PARSE_V2.into(),
            source: CodeSource::Model,
            notes: Vec::new(),
        }),
        Event::RunStarted(RunStartedEvent {
            run_id: 2,
            node: Some("parse_line".into()),
            iteration: 2,
            kind: RunKind::NodeTests,
        }),
        Event::Output(OutputEvent {
            run_id: 2,
            stream: Stream::Stdout,
            text: "test_simple ... ok\ntest_blank ... ok\n".into(),
        }),
        Event::RunFinished(RunFinishedEvent {
            run_id: 2,
            record: run_record(true, 0, 2, 0),
        }),
        Event::NodeStatus(NodeStatusEvent {
            node: "parse_line".into(),
            status: NodeStatus::Passed,
        }),
        Event::Code(CodeEvent {
            node: "sum_by_key".into(),
            iteration: 1,
            code: SUM_V1.into(),
            source: CodeSource::Model,
            notes: Vec::new(),
        }),
        Event::RunStarted(RunStartedEvent {
            run_id: 3,
            node: Some("sum_by_key".into()),
            iteration: 1,
            kind: RunKind::NodeTests,
        }),
        Event::Output(OutputEvent {
            run_id: 3,
            stream: Stream::Stdout,
            text: "test_totals ... ok\n".into(),
        }),
        Event::RunFinished(RunFinishedEvent {
            run_id: 3,
            record: run_record(true, 0, 1, 0),
        }),
        Event::NodeStatus(NodeStatusEvent {
            node: "sum_by_key".into(),
            status: NodeStatus::Passed,
        }),
        Event::Program(ProgramEvent {
            code: format!("{PARSE_V2}\n\n{SUM_V1}"),
            tests: PARSE_TESTS.into(),
        }),
        Event::Finished(FinishedEvent {
            result: FinalResult {
                passed: true,
                nodes_passed: 2,
                nodes_total: 2,
                iterations: 1,
                usage: Usage::new(800, 160),
                summary: "every node and the program passed after 1 repair".into(),
                output_dir: None,
            },
        }),
    ]
}

/// The events as records, 150 ms apart.
pub fn records() -> Vec<Record> {
    events()
        .into_iter()
        .enumerate()
        .map(|(i, event)| Record {
            seq: i as u64,
            t_ms: i as u64 * 150,
            event,
        })
        .collect()
}

pub fn tape() -> TapeContents {
    TapeContents {
        records: records(),
        truncated_tail: None,
        skipped: Vec::new(),
    }
}

/// The tape as JSON Lines.
pub fn tape_text() -> String {
    records()
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect()
}

pub fn info() -> Info {
    Info {
        model_label: "demo model: authored replies, offline".into(),
        sandbox_layers: vec!["hygiene".into(), "rlimits".into()],
        source: "test".into(),
        ..Info::default()
    }
}

/// Colourless, so snapshots show structure only and do not depend on NO_COLOR.
pub fn theme() -> Theme {
    Theme::no_color()
}

pub fn terminal(w: u16, h: u16) -> Terminal<TestBackend> {
    Terminal::new(TestBackend::new(w, h)).unwrap()
}

/// Draw and return the screen as text.
pub fn screen(app: &mut App, w: u16, h: u16) -> String {
    let mut t = terminal(w, h);
    codeloop_tui::event_loop::draw_once(&mut t, app).unwrap();
    t.backend().to_string()
}

/// Write the scripted session to `dir/tape.jsonl` and return its path.
pub fn write_tape(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("tape.jsonl");
    std::fs::write(&path, tape_text()).unwrap();
    path
}

/// `tape` reviewed at its first localized failure, the code pane focused.
pub fn at_failure(tape: TapeContents) -> App {
    let mut app = App::review(tape, info(), theme());
    let n = app
        .records()
        .iter()
        .position(|r| matches!(r.event, Event::Localized(_)))
        .expect("the tape has a localized failure")
        + 1;
    app.set_cursor(n);
    app.set_focus(codeloop_tui::app::Focus::Code);
    app
}
