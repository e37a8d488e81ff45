//! The browser player's size and speed, measured and printed (not
//! asserted): for the five demo tapes and two tapes of 400,000 events,
//! the page `codeloop export --format html --player` writes (bytes, and
//! the time the export takes), and in headless Chromium (where installed)
//! the time from opening the page to its first drawing, a jump across the
//! whole tape and back, and a step of one event, with the page's heap.
//!
//! The two big tapes (written by the real `TapeWriter` into a temporary
//! folder; `big_tapes` says how):
//! - `output`: a run printing 400,000 lines, one output event each
//!   (the shape `cargo bench --bench tui` opens);
//! - `streams`: the roman demo's session copied until it holds 400,000
//!   events: each copy's two functions renamed (`roman_to_int_7`), all of
//!   them in one plan, each model reply streamed a character an event.
//!
//! Run: `cargo bench --bench player` (all), or name pages after `--`:
//! `cargo bench --bench player -- roman streams`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a bench program stops on what it cannot measure

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use codeloop::session::*;
use codeloop_testkit::cdp;
use serde_json::Value;

const BIG: usize = 400_000;

fn main() {
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    let dir = std::env::temp_dir().join(format!("codeloop-bench-player-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut tapes: Vec<(String, PathBuf)> = Vec::new();
    for demo in ["collatz", "csvmeans", "roman", "sales", "wordfreq"] {
        if wanted(demo) {
            tapes.push((
                demo.into(),
                root.join("assets/demos").join(demo).join("tape.jsonl"),
            ));
        }
    }
    if wanted("output") {
        tapes.push(("output".into(), output_tape(&dir)));
    }
    if wanted("streams") {
        tapes.push((
            "streams".into(),
            streams_tape(&dir, &root.join("assets/demos/roman/tape.jsonl")),
        ));
    }
    let mut browser = cdp::chromium().map(|path| cdp::Browser::launch(&path, 1280, 900));
    if browser.is_none() {
        println!("no chromium: sizes and export times only");
    }
    println!(
        "{:<9} {:>8} {:>10} {:>10} {:>9} {:>9} {:>11} {:>11} {:>9} {:>9}",
        "tape", "events", "tape", "page", "export", "load", "Home→End", "End→Home", "← p50", "heap"
    );
    for (name, tape) in tapes {
        let events = read_tape(&tape).map(|c| c.records.len()).unwrap_or(0);
        let tape_bytes = std::fs::metadata(&tape).map(|m| m.len()).unwrap_or(0);
        let page = dir.join(format!("{name}.html"));
        let start = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
            .arg("export")
            .arg(&tape)
            .args(["--format", "html", "--player", "-o"])
            .arg(&page)
            .env("CODELOOP_DATA_DIR", &dir)
            .env("CODELOOP_CONFIG", dir.join("no-config.toml"))
            .output()
            .unwrap();
        let export = start.elapsed();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let page_bytes = std::fs::metadata(&page).map(|m| m.len()).unwrap_or(0);
        let mut row = format!(
            "{name:<9} {events:>8} {:>10} {:>10} {:>9}",
            mb(tape_bytes),
            mb(page_bytes),
            ms(export)
        );
        if let Some(b) = browser.as_mut() {
            let figures = in_browser(b, &page, events);
            row.push_str(&figures);
        }
        println!("{row}");
    }
    if std::env::var_os("PLAYER_BENCH_KEEP").is_some() {
        println!("pages kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Opening the page (best of three: from the navigation's start to the end
/// of DOMContentLoaded, which the player's inline script ends by drawing),
/// a jump to the end and back, and a step (median of 50): each from the
/// key's event to the frame drawn after it, timed in the page.
fn in_browser(b: &mut cdp::Browser, page: &Path, events: usize) -> String {
    let url = format!("file://{}", page.display());
    let ready = "document.getElementById('app').dataset.ready === 'yes'";
    let mut loads = Vec::new();
    for _ in 0..3 {
        b.call("Page.navigate", serde_json::json!({"url": "about:blank"}));
        b.wait("document.readyState === 'complete'");
        b.open(&url, ready);
        let dcl = b.eval("performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd");
        loads.push(dcl.as_f64().unwrap());
    }
    loads.sort_by(f64::total_cmp);
    let key = |b: &mut cdp::Browser, key: &str| -> f64 {
        let js = format!(
            "new Promise((done) => {{ const t0 = performance.now(); \
             document.dispatchEvent(new KeyboardEvent('keydown', {{ key: '{key}', bubbles: true }})); \
             requestAnimationFrame(() => done(performance.now() - t0)); }})"
        );
        b.eval(&js).as_f64().unwrap()
    };
    let at = |b: &mut cdp::Browser, cursor: usize| {
        b.wait(&format!(
            "document.getElementById('app').dataset.cursor === '{cursor}'"
        ));
    };
    // The page opens at the end: to the start and back (on a fresh page
    // the copies of the view along the tape are made as the cursor passes).
    let back = key(b, "Home");
    at(b, 0);
    let forward = key(b, "End");
    at(b, events);
    let mut steps: Vec<f64> = (0..50).map(|_| key(b, "ArrowLeft")).collect();
    at(b, events - 50);
    steps.sort_by(f64::total_cmp);
    let heap = b.eval("performance.memory ? performance.memory.usedJSHeapSize : 0");
    format!(
        " {:>9} {:>11} {:>11} {:>9} {:>9}",
        format!("{:.0} ms", loads[0]),
        format!("{forward:.0} ms"),
        format!("{back:.0} ms"),
        format!("{:.1} ms", steps[steps.len() / 2]),
        mb(heap.as_u64().unwrap_or(0))
    )
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn mb(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MB", bytes as f64 / (1 << 20) as f64)
    } else {
        format!("{:.0} KB", bytes as f64 / 1024.0)
    }
}

fn spec(name: &str) -> FunctionSpec {
    FunctionSpec {
        name: name.into(),
        purpose: "bench".into(),
        inputs: String::new(),
        output: String::new(),
        depends_on: vec![],
        head: None,
    }
}

fn started() -> Event {
    Event::SessionStarted(SessionStartedEvent {
        version: TAPE_VERSION,
        session_id: "bench".into(),
        started_at: "2026-11-23T00:00:00Z".into(),
        task: "bench".into(),
        inputs: vec![],
        config: ConfigSummary {
            provider: "demo".into(),
            ..ConfigSummary::default()
        },
    })
}

/// A run that prints 400,000 lines, one output event each (about 140
/// characters a line), as in `cargo bench --bench tui`'s big tape.
fn output_tape(dir: &Path) -> PathBuf {
    let path = dir.join("output.jsonl");
    let mut w = TapeWriter::create(&path).unwrap();
    w.append(started()).unwrap();
    w.append(Event::Plan(PlanEvent {
        specs: vec![spec("big")],
    }))
    .unwrap();
    w.append(Event::Code(CodeEvent {
        node: "big".into(),
        iteration: 1,
        code: "def big():\n    for i in range(400000):\n        print(i)\n".into(),
        source: CodeSource::Model,
        notes: Vec::new(),
    }))
    .unwrap();
    w.append(Event::RunStarted(RunStartedEvent {
        run_id: 1,
        node: Some("big".into()),
        iteration: 1,
        kind: RunKind::NodeTests,
    }))
    .unwrap();
    let filler = "x".repeat(96);
    for i in 0..BIG - 4 {
        w.append(Event::Output(OutputEvent {
            run_id: 1,
            stream: codeloop::protocol::Stream::Stdout,
            text: format!("line {i:>8} of the big run's output {filler}\n"),
        }))
        .unwrap();
    }
    w.flush().unwrap();
    path
}

/// The roman demo's session copied until it holds 400,000 events: copy
/// `k` renames its functions `NAME_k` and numbers its calls and runs
/// after the copy before; one plan holds every copy's functions; each
/// model delta is split into one event a character; the session starts
/// once and finishes once.
fn streams_tape(dir: &Path, roman: &Path) -> PathBuf {
    let records = read_tape(roman).unwrap().records;
    let plan: Vec<FunctionSpec> = records
        .iter()
        .find_map(|r| match &r.event {
            Event::Plan(p) => Some(p.specs.clone()),
            _ => None,
        })
        .unwrap();
    let body: Vec<Value> = records
        .iter()
        .filter(|r| {
            !matches!(
                r.event,
                Event::SessionStarted(_) | Event::Plan(_) | Event::Program(_) | Event::Finished(_)
            )
        })
        .map(|r| serde_json::to_value(&r.event).unwrap())
        .collect();
    let per_copy: usize = body
        .iter()
        .map(|e| match e["type"].as_str() {
            Some("model_delta") => e["text"].as_str().unwrap().chars().count(),
            _ => 1,
        })
        .sum();
    let copies = BIG.div_ceil(per_copy);
    let mut specs = Vec::new();
    for k in 0..copies {
        for s in &plan {
            let mut s = s.clone();
            s.name = format!("{}_{k}", s.name);
            s.depends_on = s.depends_on.iter().map(|d| format!("{d}_{k}")).collect();
            specs.push(s);
        }
    }
    let path = dir.join("streams.jsonl");
    let mut w = TapeWriter::create(&path).unwrap();
    w.append(started()).unwrap();
    w.append(Event::Plan(PlanEvent { specs })).unwrap();
    let mut written = 2;
    'copies: for k in 0..copies {
        for e in &body {
            let mut e = e.clone();
            rename(&mut e, k);
            let event: Event = serde_json::from_value(e.clone()).unwrap();
            let pieces: Vec<Event> = match &event {
                Event::ModelDelta(d) => d
                    .text
                    .chars()
                    .map(|c| {
                        Event::ModelDelta(ModelDeltaEvent {
                            call_id: d.call_id,
                            text: c.to_string(),
                        })
                    })
                    .collect(),
                _ => vec![event],
            };
            for p in pieces {
                if written >= BIG - 1 {
                    break 'copies;
                }
                w.append(p).unwrap();
                written += 1;
            }
        }
    }
    let finished = records
        .iter()
        .rev()
        .find(|r| matches!(r.event, Event::Finished(_)))
        .unwrap();
    w.append(finished.event.clone()).unwrap();
    w.flush().unwrap();
    path
}

/// A copy's event: its functions `NAME_k`, its calls and runs numbered after
/// the copies before.
fn rename(v: &mut Value, k: usize) {
    match v {
        Value::Object(m) => {
            for (key, x) in m.iter_mut() {
                match (key.as_str(), &x) {
                    ("node", Value::String(s)) => *x = Value::String(format!("{s}_{k}")),
                    ("call_id" | "run_id", Value::Number(n)) => {
                        *x = Value::from(n.as_u64().unwrap() + 1000 * k as u64)
                    }
                    _ => rename(x, k),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| rename(x, k)),
        _ => {}
    }
}
