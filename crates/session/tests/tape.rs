//! The tape: write, read back, fold; a last line cut off mid-write; the state at every prefix.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::io::Write;

use codeloop_protocol::*;
use codeloop_session::*;

fn spec(name: &str, deps: &[&str]) -> FunctionSpec {
    FunctionSpec {
        name: name.into(),
        purpose: format!("does {name}"),
        inputs: "x: int".into(),
        output: "int".into(),
        depends_on: deps.iter().map(|d| d.to_string()).collect(),
        head: None,
    }
}

/// A small but complete session: plan, code, a failing run, localization,
/// a streamed reflection, a repair, a passing run.
fn session_events() -> Vec<Event> {
    let failing = RunRecord {
        passed: false,
        exit_code: Some(1),
        signal: None,
        limit_hit: None,
        duration_ms: 40,
        dropped_bytes: 0,
        layers: vec!["hygiene".into()],
        tests_passed: Some(1),
        tests_failed: Some(1),
        failed_tests: Vec::new(),
        resources: None,
    };
    vec![
        Event::SessionStarted(SessionStartedEvent {
            version: TAPE_VERSION,
            session_id: "s1".into(),
            started_at: "2026-11-22T15:00:00Z".into(),
            task: "double numbers".into(),
            inputs: vec![],
            config: ConfigSummary {
                provider: "scripted".into(),
                model: "fixture".into(),
                ..Default::default()
            },
        }),
        Event::Plan(PlanEvent {
            specs: vec![spec("double", &[]), spec("double_all", &["double"])],
        }),
        Event::NodeStatus(NodeStatusEvent {
            node: "double".into(),
            status: NodeStatus::Generating,
        }),
        Event::Code(CodeEvent {
            node: "double".into(),
            iteration: 1,
            code: "def double(x):\n    return x + 2\n".into(),
            source: CodeSource::Model,
            notes: Vec::new(),
        }),
        Event::RunStarted(RunStartedEvent {
            run_id: 1,
            node: Some("double".into()),
            iteration: 1,
            kind: RunKind::NodeTests,
        }),
        Event::Output(OutputEvent {
            run_id: 1,
            stream: Stream::Stderr,
            text: "AssertionError: assert 5 == 6\n".into(),
        }),
        Event::RunFinished(RunFinishedEvent {
            run_id: 1,
            record: failing,
        }),
        Event::NodeStatus(NodeStatusEvent {
            node: "double".into(),
            status: NodeStatus::Failed,
        }),
        Event::Localized(LocalizedEvent {
            node: "double".into(),
            iteration: 1,
            location: Location {
                file: "solution.py".into(),
                line: Some(2),
                error_type: "AssertionError".into(),
                message: "assert 5 == 6".into(),
                expected: Some("6".into()),
                actual: Some("5".into()),
                in_node_code: true,
                ..Default::default()
            },
        }),
        Event::ModelRequest(ModelRequestEvent {
            call_id: 7,
            purpose: Purpose::Reflect {
                node: "double".into(),
            },
            tag: "reflect/double/1".into(),
            messages: vec![ChatMessage {
                role: Role::User,
                content: "why?".into(),
            }],
        }),
        Event::ModelDelta(ModelDeltaEvent {
            call_id: 7,
            text: "It adds ".into(),
        }),
        Event::ModelDelta(ModelDeltaEvent {
            call_id: 7,
            text: "instead of multiplying.".into(),
        }),
        Event::ModelReply(ModelReplyEvent {
            call_id: 7,
            text: "It adds instead of multiplying.".into(),
            usage: Some(Usage::new(10, 6)),
            duration_ms: 5,
            reasoning: String::new(),
            finish_reason: None,
            usage_estimated: false,
            structured: None,
            prefilled: None,
            stopped: None,
        }),
        Event::Reflection(ReflectionEvent {
            node: "double".into(),
            iteration: 1,
            text: "It adds instead of multiplying.".into(),
        }),
        Event::Code(CodeEvent {
            node: "double".into(),
            iteration: 2,
            code: "def double(x):\n    return x * 2\n".into(),
            source: CodeSource::Model,
            notes: Vec::new(),
        }),
        Event::NodeStatus(NodeStatusEvent {
            node: "double".into(),
            status: NodeStatus::Passed,
        }),
    ]
}

fn write_tape(dir: &std::path::Path) -> (std::path::PathBuf, Vec<Record>) {
    let path = dir.join("tape.jsonl");
    let mut writer = TapeWriter::create(&path).unwrap();
    let records = session_events()
        .into_iter()
        .map(|e| writer.append(e).unwrap())
        .collect();
    writer.flush().unwrap();
    (path, records)
}

#[test]
fn a_written_tape_reads_back_identical_and_numbered() {
    let dir = tempfile::tempdir().unwrap();
    let (path, written) = write_tape(dir.path());
    let read = read_tape(&path).unwrap();
    assert_eq!(read.truncated_tail, None);
    assert_eq!(read.records, written);
    let seqs: Vec<u64> = read.records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (0..written.len() as u64).collect::<Vec<_>>());
    assert!(read.records.windows(2).all(|w| w[0].t_ms <= w[1].t_ms));
}

#[test]
fn the_tape_never_overwrites_an_existing_session() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_tape(dir.path());
    assert!(matches!(
        TapeWriter::create(&path),
        Err(TapeError::Open { .. })
    ));
}

#[test]
fn the_fold_rebuilds_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_tape(dir.path());
    let state = State::from_records(&read_tape(&path).unwrap().records);
    assert_eq!(state.task, "double numbers");
    let node = &state.nodes["double"];
    assert_eq!(node.status, NodeStatus::Passed);
    assert_eq!(node.versions.len(), 2);
    assert_eq!(node.code(), Some("def double(x):\n    return x * 2\n"));
    assert!(
        state.last_failure("double").is_none(),
        "a pass clears the last failure"
    );
    assert_eq!(state.failures_of("double").count(), 1, "and keeps it");
    assert_eq!(state.nodes["double_all"].status, NodeStatus::Pending);
    assert_eq!(state.usage.completion_tokens, 6);
    assert_eq!(state.repair_iterations(), 1);
    let reflections: Vec<_> = state
        .history
        .iter()
        .filter_map(|h| state.reflection(h).map(|r| (r.text, r.whole)))
        .collect();
    assert_eq!(reflections, vec![("It adds instead of multiplying.", true)]);
}

#[test]
fn the_state_at_every_prefix_is_what_a_view_shows_then() {
    let records: Vec<Record> = session_events()
        .into_iter()
        .enumerate()
        .map(|(i, event)| Record {
            seq: i as u64,
            t_ms: i as u64 * 10,
            event,
        })
        .collect();
    for n in 0..=records.len() {
        let state = State::from_records(&records[..n]);
        assert_eq!(state.events_applied, n as u64);
        let node = state.nodes.get("double");
        match n {
            0..=1 => assert!(node.is_none(), "no node before the plan"),
            // After the first code version: one version, failing line not known yet.
            4..=8 => {
                let node = node.unwrap();
                assert_eq!(node.versions.len(), 1);
                assert!(state.last_failure("double").is_none());
            }
            // After localization and before the repair: the failure is shown at line 2.
            9..=14 => {
                let node = node.unwrap();
                let failure = state.last_failure("double").map(|f| &f.location);
                assert_eq!(failure.and_then(|l| l.line), Some(2));
                assert_eq!(node.status, NodeStatus::Failed);
            }
            _ => {}
        }
        // The reflection streams in: after the first delta its text is the first piece.
        if n == 11 {
            let text = state
                .history
                .iter()
                .find_map(|h| state.reflection(h))
                .map(|r| (r.text, r.streaming, r.whole));
            assert_eq!(text, Some(("It adds ", true, false)));
        }
    }
    // Folding step by step equals folding at once.
    let mut stepwise = State::default();
    for r in &records {
        stepwise.apply(r);
    }
    assert_eq!(stepwise, State::from_records(&records));
}

#[test]
fn a_last_line_cut_off_mid_write_is_reported_and_the_rest_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (path, written) = write_tape(dir.path());
    let full = std::fs::read(&path).unwrap();
    // Cut the file in the middle of its last line.
    let last_line_start = full[..full.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    let cut = last_line_start + (full.len() - last_line_start) / 2;
    std::fs::write(&path, &full[..cut]).unwrap();
    let read = read_tape(&path).unwrap();
    assert_eq!(read.records, written[..written.len() - 1]);
    let (line, bytes) = read.truncated_tail.unwrap();
    assert_eq!(line, written.len());
    assert_eq!(bytes, cut - last_line_start);
}

#[test]
fn damage_before_the_last_line_is_reported_by_line_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let (path, written) = write_tape(dir.path());
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{\"seq\": 2, \"garbage";
    lines[4] = "{\"seq\": 4, \"t_ms\": 1, \"type\": \"an_event_from_the_future\"}";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let read = read_tape(&path).unwrap();
    let mut kept = written.clone();
    kept.remove(4);
    kept.remove(2);
    assert_eq!(read.records, kept);
    assert_eq!(read.truncated_tail, None);
    let skipped: Vec<usize> = read.skipped.iter().map(|s| s.line).collect();
    assert_eq!(skipped, vec![3, 5]);
    assert!(
        read.skipped[0].message.contains("EOF while parsing"),
        "{:?}",
        read.skipped
    );
    assert!(
        read.skipped[1]
            .message
            .contains("unknown variant `an_event_from_the_future`"),
        "{:?}",
        read.skipped
    );
    let report = read.damage_report().unwrap();
    assert!(
        report.starts_with("2 unreadable lines skipped (line 3: "),
        "{report}"
    );
    assert!(report.contains("; line 5: unknown variant"), "{report}");
}

#[test]
fn a_tape_with_nothing_readable_is_refused_naming_the_first_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tape.jsonl");
    std::fs::write(&path, "not json\nnor this\n").unwrap();
    match read_tape(&path) {
        Err(e @ TapeError::Corrupt { line: 1, .. }) => {
            assert!(e.to_string().contains("not a codeloop tape"), "{e}")
        }
        other => panic!("expected a corrupt-tape error, got {other:?}"),
    }
}

#[test]
fn a_tape_from_a_newer_codeloop_is_refused_naming_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_tape(dir.path());
    let text = std::fs::read_to_string(&path).unwrap();
    let newer = TAPE_VERSION + 1;
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // The newer format may change any event's shape: the version is read
    // even when the first line is no longer an event this codeloop knows.
    let mut first: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    first["version"] = newer.into();
    first["config"] = "a shape this codeloop does not know".into();
    lines[0] = first.to_string();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let err = read_tape(&path).unwrap_err();
    match &err {
        TapeError::NewerVersion {
            found, supported, ..
        } => {
            assert_eq!(*found, u64::from(newer));
            assert_eq!(*supported, TAPE_VERSION);
        }
        other => panic!("expected a newer-version error, got {other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.contains(&format!("tape format {newer}"))
            && message.contains(&format!("reads format {TAPE_VERSION} and older"))
            && message.contains("upgrade codeloop"),
        "{message}"
    );

    // The same version, or an older one, reads.
    let mut first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    first["version"] = TAPE_VERSION.into();
    lines[0] = first.to_string();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    assert!(read_tape(&path).unwrap().skipped.is_empty());
}

#[test]
fn a_session_without_a_finished_event_did_not_finish() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_tape(dir.path());
    let read = read_tape(&path).unwrap();
    assert!(
        !read.finished(),
        "the fixture session has no finished event"
    );
    assert_eq!(read.damage_report(), None);

    let path = dir.path().join("finished.jsonl");
    let mut writer = TapeWriter::create(&path).unwrap();
    for event in session_events() {
        writer.append(event).unwrap();
    }
    writer
        .append(Event::Finished(FinishedEvent {
            result: FinalResult {
                passed: true,
                nodes_passed: 1,
                nodes_total: 1,
                iterations: 1,
                usage: Usage::default(),
                summary: "done".into(),
                output_dir: None,
            },
        }))
        .unwrap();
    writer.flush().unwrap();
    assert!(read_tape(&path).unwrap().finished());
}

#[test]
fn an_empty_tape_is_an_error_not_an_empty_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tape.jsonl");
    std::fs::File::create(&path).unwrap().flush().unwrap();
    assert!(matches!(read_tape(&path), Err(TapeError::Empty { .. })));
}

/// A tape cut to its first 40 bytes is not "empty": it says the line was
/// cut off, and where.
#[test]
fn a_tape_cut_inside_its_first_line_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_tape(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..40]).unwrap();
    let err = read_tape(&path).unwrap_err();
    assert!(
        matches!(
            err,
            TapeError::CutOff {
                line: 1,
                bytes: 40,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("its only line (1) was cut off after 40 bytes"),
        "{err}"
    );
}

#[test]
fn output_kept_in_memory_is_bounded_and_counts_what_it_dropped() {
    let mut state = State::default();
    let mut seq = 0;
    let mut push = |state: &mut State, event: Event| {
        state.apply(&Record {
            seq,
            t_ms: 0,
            event,
        });
        seq += 1;
    };
    push(
        &mut state,
        Event::RunStarted(RunStartedEvent {
            run_id: 1,
            node: None,
            iteration: 1,
            kind: RunKind::Program,
        }),
    );
    let line = "x".repeat(1023) + "\n";
    let total = 4 * state::OUTPUT_KEEP_BYTES;
    for _ in 0..total / line.len() {
        push(
            &mut state,
            Event::Output(OutputEvent {
                run_id: 1,
                stream: Stream::Stdout,
                text: line.clone(),
            }),
        );
    }
    let run = &state.runs[&1];
    assert!(run.kept_bytes <= state::OUTPUT_KEEP_BYTES);
    assert_eq!(run.kept_bytes as u64 + run.dropped_bytes, total as u64);
}

#[test]
fn events_round_trip_through_json_with_their_tag() {
    for event in session_events() {
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["type"], event.kind());
        let back: Event = serde_json::from_value(json).unwrap();
        assert_eq!(back, event);
    }
}

/// One real file of each kind an input can be (`scripts/input_fixtures.py`).
const INPUT_FIXTURES: &[&str] = &[
    "table.csv",
    "table.tsv",
    "doc.json",
    "records.jsonl",
    "book.xlsx",
    "book.ods",
    "data.parquet",
    "pic.png",
    "pic.jpg",
    "pic.gif",
    "doc.pdf",
    "notes.txt",
    "blob.bin",
];

fn fixture_input(name: &str) -> InputFile {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/inputs")
        .join(name);
    let description = codeloop_inputs::describe(&path).unwrap();
    InputFile {
        name: name.into(),
        source_path: path.display().to_string(),
        size_bytes: description.size_bytes,
        preview: String::new(),
        description: Some(description),
    }
}

fn started_with(inputs: Vec<InputFile>) -> Event {
    Event::SessionStarted(SessionStartedEvent {
        version: TAPE_VERSION,
        session_id: "s1".into(),
        started_at: "2026-11-28T12:00:00Z".into(),
        task: "read the inputs".into(),
        inputs,
        config: ConfigSummary {
            provider: "demo".into(),
            model: "roman".into(),
            ..Default::default()
        },
    })
}

#[test]
fn a_session_started_with_any_kind_of_input_reads_back_and_is_listed() {
    for name in INPUT_FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s1");
        std::fs::create_dir(&session).unwrap();
        let path = session.join("tape.jsonl");
        let mut writer = TapeWriter::create(&path).unwrap();
        let written = vec![
            writer
                .append(started_with(vec![fixture_input(name)]))
                .unwrap(),
        ];
        writer.flush().unwrap();
        let read = read_tape(&path).unwrap();
        assert_eq!(read.skipped, [], "{name}");
        assert_eq!(read.records, written, "{name}");
        let listing = codeloop_session::index::list(dir.path()).unwrap();
        assert_eq!(listing.damaged, [], "{name}");
        assert_eq!(listing.sessions[0].task, "read the inputs", "{name}");
    }
}

#[test]
fn a_tape_whose_image_input_said_format_twice_reads_back() {
    // As codeloop wrote an image input before its kind was `kind`.
    let line = r#"{"seq":0,"t_ms":0,"type":"session_started","version":1,"session_id":"s1","started_at":"2026-11-28T12:00:00Z","task":"look at it","inputs":[{"name":"pic.png","source_path":"/tmp/pic.png","size_bytes":148,"preview":"","description":{"name":"pic.png","size_bytes":148,"what":{"format":"image","format":"PNG","width":16,"height":12}}}],"config":{"provider":"demo","model":"roman","endpoint":"","max_iterations":4,"workers":2,"timeout_secs":10}}"#;
    let read = parse_tape(format!("{line}\n").as_bytes(), std::path::Path::new("t")).unwrap();
    assert_eq!(read.skipped, []);
    let Event::SessionStarted(SessionStartedEvent { inputs, .. }) = &read.records[0].event else {
        panic!("{:?}", read.records[0])
    };
    assert_eq!(inputs[0].summary(), fixture_input("pic.png").summary());
}

#[test]
fn a_tape_older_than_the_repair_policy_reads_with_what_it_ran_and_a_newer_one_with_its_own() {
    let old = r#"{"seq":0,"t_ms":0,"type":"session_started","version":1,"session_id":"s1","started_at":"2026-11-28T12:00:00Z","task":"t","inputs":[],"config":{"provider":"demo","model":"roman","endpoint":"","max_iterations":4,"workers":2,"timeout_secs":10}}"#;
    let read = parse_tape(format!("{old}\n").as_bytes(), std::path::Path::new("t")).unwrap();
    assert_eq!(read.skipped, []);
    let state = State::from_records(&read.records);
    assert_eq!(state.config.policy, None);
    // Today's defaults, but for the first code, which such a session
    // wrote shown the model's tests (today's default writes it without),
    // and for blame, which such a session never laid on a test.
    assert_eq!(
        state.config.policy(),
        RepairPolicy {
            first_code_sees_model_tests: true,
            suspect_test_after: 0,
            ..RepairPolicy::default()
        }
    );
    assert!(state.config.policy().fresh_start);
    assert_eq!(state.config.policy().fresh_after, 3);

    let new = old.replace(
        r#""timeout_secs":10}"#,
        r#""timeout_secs":10,"policy":{"fresh_start":false,"fresh_after":5}}"#,
    );
    let read = parse_tape(format!("{new}\n").as_bytes(), std::path::Path::new("t")).unwrap();
    let state = State::from_records(&read.records);
    assert!(!state.config.policy().fresh_start);
    assert_eq!(state.config.policy().fresh_after, 5);
    assert_eq!(state.config.policy().program_repairs, 2, "unnamed: today's");
}
