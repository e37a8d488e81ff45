//! The workbench's speed, measured and printed (not asserted):
//!
//! - startup to first frame (in process, and the real binary in tmux);
//! - idle CPU over 10 s;
//! - a 1,000,000-line stdout flood from a real Python run through the
//!   sandbox into the output pane: frames per second, key-to-frame latency,
//!   peak RSS, and the on-disk log checked line by line;
//! - highlighting a 5,000-line file while typing, and from an edit of it
//!   to the frame showing the edit highlighted;
//! - opening a 400,000-event tape (87 MB) to its first frame and to the
//!   frame with all of it folded, and where opening spends its time, step
//!   by step (`big_tape` says how the tape is built); `replay` of it to its
//!   first frame, read whole first (as before) and in the background.
//!
//! Run: `cargo bench --bench tui` (all), or name sections after `--`:
//! `cargo bench --bench tui -- startup flood highlight edit open`. Frames go to a real crossterm backend
//! writing into a sink (escape sequences generated, not displayed).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a bench program stops on what it cannot measure

use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codeloop::engine::EngineHandle;
use codeloop::protocol::*;
use codeloop::session::*;
use codeloop::tui::app::Focus;
use codeloop::tui::event_loop::{self, FrameStats, Hooks};
use codeloop::tui::loader::Loaded;
use codeloop::tui::{App, Info, Theme};
use codeloop_sandbox::{Limits, RunSpec, Sandbox};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use futures_util::Stream;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};
use tokio::sync::mpsc;

type Input = Pin<Box<dyn Stream<Item = io::Result<TermEvent>> + Send>>;
type Frames = Arc<Mutex<Vec<FrameStats>>>;

const FLOOD_LINES: u64 = 1_000_000;

fn terminal() -> Terminal<CrosstermBackend<io::Sink>> {
    let viewport = Viewport::Fixed(Rect::new(0, 0, 160, 48));
    Terminal::with_options(
        CrosstermBackend::new(io::sink()),
        TerminalOptions { viewport },
    )
    .expect("a terminal over a sink")
}

fn input() -> (mpsc::UnboundedSender<io::Result<TermEvent>>, Input) {
    let (tx, rx) = mpsc::unbounded_channel();
    let stream =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) });
    (tx, Box::pin(stream))
}

fn key(code: KeyCode) -> io::Result<TermEvent> {
    Ok(TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn hooks(frames: &Frames) -> Hooks {
    let frames = Arc::clone(frames);
    Hooks {
        on_frame: Some(Box::new(move |f| {
            if let Ok(mut v) = frames.lock() {
                v.push(f);
            }
        })),
        ..Hooks::default()
    }
}

fn info() -> Info {
    Info {
        model_label: "bench".into(),
        ..Info::default()
    }
}

/// A fake engine: records go in through the returned sender.
fn engine() -> (mpsc::Sender<Record>, EngineHandle) {
    let (tx, rx) = mpsc::channel(4096);
    let (ctx, _crx) = mpsc::channel(64);
    let done = tokio::spawn(async {
        Ok(FinalResult {
            passed: true,
            nodes_passed: 0,
            nodes_total: 0,
            iterations: 0,
            usage: Usage::default(),
            summary: String::new(),
            output_dir: None,
        })
    });
    let handle = EngineHandle {
        events: rx,
        commands: ctx,
        done,
        session_dir: std::env::temp_dir(),
    };
    (tx, handle)
}

/// A live app with a session started on one node.
fn live_app(theme: Theme) -> App {
    let mut app = App::live(info(), theme);
    app.task_mut().insert_str("bench");
    let _ = app.submit_task_now();
    app
}

fn session_records(node: &str) -> Vec<Event> {
    vec![
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
        }),
        Event::Plan(PlanEvent {
            specs: vec![FunctionSpec {
                name: node.into(),
                purpose: "bench".into(),
                inputs: String::new(),
                output: String::new(),
                depends_on: vec![],
                head: None,
            }],
        }),
    ]
}

struct Seq(u64, Instant);
impl Seq {
    fn record(&mut self, event: Event) -> Record {
        self.0 += 1;
        Record {
            seq: self.0,
            t_ms: self.1.elapsed().as_millis() as u64,
            event,
        }
    }
}

/// Latency from each key's sending to the first frame drawn after the app handled it.
fn key_latencies(sent: &[Instant], frames: &[FrameStats], keys_before: u64) -> Vec<Duration> {
    let mut out = Vec::new();
    for (i, at) in sent.iter().enumerate() {
        let needed = keys_before + i as u64 + 1;
        if let Some(f) = frames
            .iter()
            .find(|f| f.keys_handled >= needed && f.at >= *at)
        {
            out.push(f.at - *at);
        }
    }
    out
}

fn percentile(values: &mut [Duration], p: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    values.sort();
    let i = ((values.len() as f64 - 1.0) * p).round() as usize;
    values[i]
}

fn cpu_time() -> Duration {
    // The process's CPU clock: user and system time of all its threads.
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::try_from(t).unwrap_or_default()
}

fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    // `cargo bench` passes --bench. `cargo test --all-targets` runs this
    // binary too, without it: measuring there would only slow the suite down.
    if !std::env::args().any(|a| a == "--bench") {
        println!("tui benchmark: run it with `cargo bench --bench tui`");
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        println!("codeloop TUI benchmark (160x48, crossterm backend into a sink)");
        let named: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| !a.starts_with('-'))
            .collect();
        let wanted = |s: &str| named.is_empty() || named.iter().any(|n| n == s);
        if wanted("startup") {
            startup_and_idle().await;
            startup_binary_in_tmux();
        }
        if wanted("flood") {
            flood().await;
        }
        if wanted("highlight") {
            highlight_while_typing().await;
        }
        if wanted("edit") {
            edit_to_highlighted_frame().await;
        }
        if wanted("open") {
            open_big_tape().await;
        }
    });
}

async fn startup_and_idle() {
    let t0 = Instant::now();
    let demo = codeloop::demos::find("wordfreq").expect("the wordfreq demo");
    let tape = parse_tape(demo.tape.as_bytes(), Path::new("demo:wordfreq")).expect("its tape");
    let mut app = App::review(tape, info(), Theme::dark());
    let mut term = terminal();
    let frames: Frames = Arc::default();
    let (tx, input) = input();
    let h = hooks(&frames);
    let task = tokio::spawn(async move {
        let r = event_loop::run(&mut term, &mut app, input, None, h).await;
        (r, app)
    });
    while frames.lock().map(|f| f.is_empty()).unwrap_or(true) {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let first = frames.lock().map(|f| f[0].at).unwrap_or(t0) - t0;
    println!(
        "startup to first frame (in process: parse a demo tape, fold, draw): {}",
        ms(first)
    );

    // Let the highlighter load and answer, then measure 10 s of nothing.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let frames_before = frames.lock().map(|f| f.len()).unwrap_or(0);
    let cpu0 = cpu_time();
    let wall0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let cpu = cpu_time() - cpu0;
    let wall = wall0.elapsed();
    let idle_frames = frames.lock().map(|f| f.len()).unwrap_or(0) - frames_before;
    println!(
        "idle over {:.1} s: CPU {} ({:.3}% of one core), frames drawn {}",
        wall.as_secs_f64(),
        ms(cpu),
        cpu.as_secs_f64() / wall.as_secs_f64() * 100.0,
        idle_frames
    );
    let _ = tx.send(key(KeyCode::Char('q')));
    let _ = task.await;
}

/// The real binary in a real terminal: from spawning it to its first screen
/// showing in tmux (polled every 2 ms, so this is an upper bound).
fn startup_binary_in_tmux() {
    use std::process::Command;
    if Command::new("tmux").arg("-V").output().is_err() {
        println!("startup of the binary in tmux: skipped (tmux is not installed)");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_codeloop");
    let mut times = Vec::new();
    for i in 0..5 {
        let session = format!("codeloop-bench-{}-{i}", std::process::id());
        let t0 = Instant::now();
        let ok = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-x",
                "160",
                "-y",
                "48",
                "-s",
                &session,
                bin,
            ])
            .args(["open", "wordfreq"])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            println!("startup of the binary in tmux: tmux could not start it");
            return;
        }
        let mut seen = None;
        while t0.elapsed() < Duration::from_secs(5) {
            let out = Command::new("tmux")
                .args(["capture-pane", "-p", "-t", &session])
                .output();
            if out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(" REVIEW ")) {
                seen = Some(t0.elapsed());
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &session])
            .status();
        if let Some(t) = seen {
            times.push(t);
        }
    }
    let median = percentile(&mut times, 0.5);
    println!(
        "startup of the binary to its first screen in tmux (`codeloop open wordfreq`, median of {}): {}",
        times.len(),
        ms(median)
    );
}

async fn flood() {
    let sandbox = tokio::task::spawn_blocking(|| {
        Sandbox::probe(&codeloop_sandbox::SandboxOptions::from_env())
    })
    .await
    .expect("probe");
    if let Some(p) = sandbox.interpreter_problem() {
        println!("flood: skipped ({p})");
        return;
    }
    let dir = tempfile::tempdir().expect("a temp dir");
    let log = dir.path().join("flood.log");
    let mut app = live_app(Theme::dark());
    app.set_focus(Focus::Output);
    let mut term = terminal();
    let frames: Frames = Arc::default();
    let (keys, input) = input();
    let (records, handle) = engine();
    let h = hooks(&frames);
    let ui = tokio::spawn(async move {
        let r = event_loop::run(&mut term, &mut app, input, Some(handle), h).await;
        (r, app)
    });
    let mut seq = Seq(0, Instant::now());
    for e in session_records("flood") {
        let _ = records.send(seq.record(e)).await;
    }
    let _ = records
        .send(seq.record(Event::RunStarted(RunStartedEvent {
            run_id: 1,
            node: Some("flood".into()),
            iteration: 1,
            kind: RunKind::NodeTests,
        })))
        .await;

    let spec = RunSpec {
        files: vec![(
            "flood.py".into(),
            format!(
                "import sys\nw = sys.stdout.write\nfor i in range({FLOOD_LINES}):\n    w(f\"line {{i}} of the flood\\n\")\n"
            ),
        )],
        script: "flood.py".into(),
        limits: Limits {
            wall: Duration::from_secs(120),
            cpu_secs: 120,
            output_bytes: 256 << 20,
            ..Limits::default()
        },
        log_path: Some(log.clone()),
        ..RunSpec::default()
    };
    let (chunks_tx, mut chunks_rx) = mpsc::channel(1024);
    let started = Instant::now();
    let run = tokio::spawn({
        let sandbox = sandbox.clone();
        async move {
            sandbox
                .run(
                    spec,
                    Some(chunks_tx),
                    tokio_util::sync::CancellationToken::new(),
                )
                .await
        }
    });
    // Keys every 20 ms while the flood runs: scroll up one line, back down.
    let frames_at_start = frames.lock().map(|f| f.len()).unwrap_or(0);
    let keys_before = frames
        .lock()
        .ok()
        .and_then(|f| f.last().map(|l| l.keys_handled))
        .unwrap_or(0);
    let sent: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let typing = tokio::spawn({
        let sent = Arc::clone(&sent);
        let keys = keys.clone();
        async move {
            let mut up = true;
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                if let Ok(mut s) = sent.lock() {
                    s.push(Instant::now());
                }
                let code = if up { KeyCode::Up } else { KeyCode::Down };
                up = !up;
                if keys.send(key(code)).is_err() {
                    return;
                }
            }
        }
    });
    // RSS sampled while the flood runs (VmHWM would include the phases before).
    let rss_peak = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sampler = tokio::spawn({
        let rss_peak = Arc::clone(&rss_peak);
        async move {
            loop {
                rss_peak.fetch_max(status_kb("VmRSS:"), std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    });
    let mut bytes_sent = 0u64;
    let mut chunks = 0u64;
    // Gathered as the engine gathers a run's output for its tape.
    while let Some(pieces) = codeloop::engine::output::gather(&mut chunks_rx).await {
        for chunk in pieces {
            chunks += 1;
            bytes_sent += chunk.text.len() as u64;
            let _ = records
                .send(seq.record(Event::Output(OutputEvent {
                    run_id: 1,
                    stream: chunk.stream,
                    text: chunk.text,
                })))
                .await;
        }
    }
    let outcome = run.await.expect("the run task").expect("the run");
    let _ = records
        .send(seq.record(Event::RunFinished(RunFinishedEvent {
            run_id: 1,
            record: RunRecord {
                passed: outcome.exit_code == Some(0),
                exit_code: outcome.exit_code,
                signal: outcome.signal,
                limit_hit: outcome.limit_hit.as_ref().map(|l| format!("{l:?}")),
                duration_ms: outcome.duration.as_millis() as u64,
                dropped_bytes: 0,
                layers: outcome.layers.clone(),
                tests_passed: None,
                tests_failed: None,
                failed_tests: Vec::new(),
                resources: None,
            },
        })))
        .await;
    let total_records = seq.0 as usize;
    // Wait for the frame that shows the last record.
    let deadline = Instant::now() + Duration::from_secs(30);
    let end = loop {
        let last = frames.lock().ok().and_then(|f| f.last().copied());
        if let Some(f) = last
            && f.records >= total_records
        {
            break f.at;
        }
        if Instant::now() > deadline {
            break Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    typing.abort();
    sampler.abort();
    let flood_time = end - started;
    let peak_kb = status_kb("VmHWM:");
    let frames_v = frames.lock().map(|f| f.clone()).unwrap_or_default();
    let flood_frames: Vec<FrameStats> = frames_v[frames_at_start..]
        .iter()
        .filter(|f| f.at <= end)
        .copied()
        .collect();
    let sent_v = sent.lock().map(|s| s.clone()).unwrap_or_default();
    let sent_during: Vec<Instant> = sent_v.into_iter().filter(|t| *t <= end).collect();
    let mut lat = key_latencies(&sent_during, &frames_v, keys_before);
    let _ = keys.send(key(KeyCode::Char('q')));
    // A running session asks before quitting.
    let _ = keys.send(key(KeyCode::Char('y')));
    let _ = ui.await;

    let log_bytes = std::fs::read(&log).unwrap_or_default();
    let log_lines = log_bytes.iter().filter(|b| **b == b'\n').count() as u64;
    let last_ok = log_bytes
        .rsplit(|b| *b == b'\n')
        .nth(1)
        .is_some_and(|l| l == format!("line {} of the flood", FLOOD_LINES - 1).as_bytes());
    println!(
        "flood of {FLOOD_LINES} stdout lines ({:.1} MB) from python3 through the sandbox into the output pane:",
        bytes_sent as f64 / 1e6
    );
    println!(
        "  {:.2} s until the last line was on screen; {} frames = {:.1} frames/s",
        flood_time.as_secs_f64(),
        flood_frames.len(),
        flood_frames.len() as f64 / flood_time.as_secs_f64()
    );
    println!(
        "  key-to-frame latency over {} keys: p50 {}, p99 {}, max {}",
        lat.len(),
        ms(percentile(&mut lat, 0.5)),
        ms(percentile(&mut lat, 0.99)),
        ms(percentile(&mut lat, 1.0))
    );
    println!(
        "  RSS during the flood: peak {:.1} MB sampled every 10 ms (process high-water mark {:.1} MB); {chunks} output records",
        rss_peak.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1024.0,
        peak_kb as f64 / 1024.0,
    );
    println!(
        "  on-disk log: {log_lines} lines, {} bytes, last line intact: {last_ok}; output records carried {} bytes ({})",
        log_bytes.len(),
        bytes_sent,
        if log_lines == FLOOD_LINES && log_bytes.len() as u64 == bytes_sent && last_ok {
            "nothing lost"
        } else {
            "MISMATCH"
        }
    );
}

/// A 5,000-line Python file.
fn big_file() -> String {
    let block = "def f_{i}(values, limit=10):\n    \"\"\"Sum what is below the limit.\"\"\"\n    total = 0\n    for v in values:\n        if v < limit:\n            total += v * {i}\n    return total\n\n\n";
    let mut code = String::new();
    let mut i = 0;
    while code.lines().count() < 5000 {
        code.push_str(&block.replace("{i}", &i.to_string()));
        i += 1;
    }
    code.lines().take(5000).collect::<Vec<_>>().join("\n") + "\n"
}

async fn highlight_while_typing() {
    let code = big_file();
    // Off the UI thread, how long one highlight of it takes.
    let request = codeloop::tui::highlight::HighlightRequest {
        generation: 1,
        key: 1,
        code: code.clone(),
        theme: "base16-ocean.dark".into(),
        first: 100,
    };
    let mut highlighter = codeloop::tui::highlight::Engine::new();
    let mut times = Vec::new();
    for _ in 0..3 {
        highlighter.forget();
        let t = Instant::now();
        let lines = highlighter
            .highlight(&request, |_| {}, || false)
            .expect("highlighted");
        assert_eq!(lines.len(), 5000);
        times.push(t.elapsed());
    }
    let one = percentile(&mut times, 0.5);

    // Typing in the hint editor while new versions of the file keep arriving
    // (each one a new highlight request; the newest wins).
    let mut app = live_app(Theme::dark());
    app.set_focus(Focus::Code);
    let mut term = terminal();
    let frames: Frames = Arc::default();
    let (keys, input) = input();
    let (records, handle) = engine();
    let h = hooks(&frames);
    let ui = tokio::spawn(async move {
        let r = event_loop::run(&mut term, &mut app, input, Some(handle), h).await;
        (r, app)
    });
    let mut seq = Seq(0, Instant::now());
    for e in session_records("big") {
        let _ = records.send(seq.record(e)).await;
    }
    let _ = records
        .send(seq.record(Event::Code(CodeEvent {
            node: "big".into(),
            iteration: 1,
            code: code.clone(),
            source: CodeSource::Model,
            notes: Vec::new(),
        })))
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _ = keys.send(key(KeyCode::Char('h')));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let keys_before = frames
        .lock()
        .ok()
        .and_then(|f| f.last().map(|l| l.keys_handled))
        .unwrap_or(0);
    let mut sent = Vec::new();
    let start = Instant::now();
    let mut version = 1;
    let text = "a hint typed while the code pane re-highlights 5000 lines ";
    for (n, c) in text.chars().cycle().take(300).enumerate() {
        if n % 8 == 0 {
            version += 1;
            let changed = code.replacen("total = 0", &format!("total = {version}"), 1);
            let _ = records
                .send(seq.record(Event::Code(CodeEvent {
                    node: "big".into(),
                    iteration: version,
                    code: changed,
                    source: CodeSource::Model,
                    notes: Vec::new(),
                })))
                .await;
        }
        sent.push(Instant::now());
        let _ = keys.send(key(KeyCode::Char(c)));
        tokio::time::sleep(Duration::from_millis(12)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let typing = start.elapsed();
    let frames_v = frames.lock().map(|f| f.clone()).unwrap_or_default();
    let mut lat = key_latencies(&sent, &frames_v, keys_before);
    let last = frames_v.last().copied();
    let _ = keys.send(key(KeyCode::Esc));
    let _ = keys.send(key(KeyCode::Char('q')));
    // A running session asks before quitting.
    let _ = keys.send(key(KeyCode::Char('y')));
    let _ = ui.await;
    println!("highlighting a 5,000-line file:");
    println!(
        "  one highlight off the UI thread: {} (median of 3)",
        ms(one)
    );
    println!(
        "  typing {} keys over {:.1} s while {} new versions arrived: key-to-frame p50 {}, p99 {}, max {}",
        lat.len(),
        typing.as_secs_f64(),
        version - 1,
        ms(percentile(&mut lat, 0.5)),
        ms(percentile(&mut lat, 0.99)),
        ms(percentile(&mut lat, 1.0))
    );
    if let Some(f) = last {
        println!(
            "  highlight requests {}, results taken {} (the others were superseded: latest wins)",
            f.highlight_requests, f.highlights_applied
        );
    }
}

/// Wait (polling) until a frame satisfies `ready`; its time, or None after 20 s.
async fn frame_when(frames: &Frames, ready: impl Fn(&FrameStats) -> bool) -> Option<Instant> {
    let give_up = Instant::now() + Duration::from_secs(20);
    while Instant::now() < give_up {
        if let Some(at) = frames
            .lock()
            .ok()
            .and_then(|f| f.iter().find(|f| ready(f)).map(|f| f.at))
        {
            return Some(at);
        }
        tokio::time::sleep(Duration::from_micros(300)).await;
    }
    None
}

/// A new version of the 5,000-line file arrives with one line changed (in
/// the middle, where the pane shows it): the time until a frame shows it
/// highlighted.
/// The 5,000-line file with one line in the middle edited (a different
/// one for each version).
fn edited(code: &str, version: u32) -> String {
    let nth = 2400 / 9 + version as usize % 7;
    let at = code
        .match_indices("total = 0")
        .nth(nth)
        .map_or(0, |(i, _)| i);
    let mut changed = code.to_string();
    changed.replace_range(
        at..at + "total = 0".len(),
        &format!("total = {version}  # edited"),
    );
    changed
}

/// The highlighter's own share of an edit, off the event loop: the
/// incremental update, and the copy of the lines it sends.
fn edit_worker_share(code: &str) {
    let mut engine = codeloop::tui::highlight::Engine::new();
    let request = |generation: u64, code: String| codeloop::tui::highlight::HighlightRequest {
        generation,
        key: generation,
        code,
        theme: "base16-ocean.dark".into(),
        first: 120,
    };
    let _ = engine.highlight(&request(1, code.to_string()), |_| {}, || false);
    let (mut updates, mut copies) = (Vec::new(), Vec::new());
    for version in 2..=41u32 {
        let r = request(u64::from(version), edited(code, version));
        let t = Instant::now();
        let lines = engine.highlight(&r, |_| {}, || false).expect("highlighted");
        updates.push(t.elapsed());
        let t = Instant::now();
        let copy = lines.to_vec();
        copies.push(t.elapsed());
        drop(copy);
    }
    println!(
        "  the highlighter alone, per edit: update p50 {} p95 {}; copying the lines to send p50 {}",
        ms(percentile(&mut updates, 0.5)),
        ms(percentile(&mut updates, 0.95)),
        ms(percentile(&mut copies, 0.5))
    );
}

async fn edit_to_highlighted_frame() {
    let code = big_file();
    let mut app = live_app(Theme::dark());
    app.set_focus(Focus::Code);
    let mut term = terminal();
    let frames: Frames = Arc::default();
    let (keys, input) = input();
    let (records, handle) = engine();
    let h = hooks(&frames);
    let ui = tokio::spawn(async move {
        let r = event_loop::run(&mut term, &mut app, input, Some(handle), h).await;
        (r, app)
    });
    let mut seq = Seq(0, Instant::now());
    for e in session_records("big") {
        let _ = records.send(seq.record(e)).await;
    }
    let sent = Instant::now();
    let _ = records
        .send(seq.record(Event::Code(CodeEvent {
            node: "big".into(),
            iteration: 1,
            code: code.clone(),
            source: CodeSource::Model,
            notes: Vec::new(),
        })))
        .await;
    let first = frame_when(&frames, |f| f.highlights_applied > 0).await;
    // Let the whole file finish (the first screen may come ahead of it).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut lat = Vec::new();
    for version in 2..=41u32 {
        let before = frames
            .lock()
            .ok()
            .and_then(|f| f.last().map(|l| l.highlights_applied))
            .unwrap_or(0);
        // One line in the middle, a different one each time.
        let changed = edited(&code, version);
        let sent = Instant::now();
        let _ = records
            .send(seq.record(Event::Code(CodeEvent {
                node: "big".into(),
                iteration: version,
                code: changed,
                source: CodeSource::Model,
                notes: Vec::new(),
            })))
            .await;
        if let Some(at) =
            frame_when(&frames, |f| f.at >= sent && f.highlights_applied > before).await
        {
            lat.push(at - sent);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = keys.send(key(KeyCode::Char('q')));
    let _ = keys.send(key(KeyCode::Char('y')));
    let _ = ui.await;
    println!("an edit of the 5,000-line file:");
    if let Some(at) = first {
        println!(
            "  new file to its first highlighted frame: {}",
            ms(at - sent)
        );
    }
    println!(
        "  edit to highlighted frame over {} edits: p50 {}, p95 {}, p99 {}, max {}",
        lat.len(),
        ms(percentile(&mut lat, 0.5)),
        ms(percentile(&mut lat, 0.95)),
        ms(percentile(&mut lat, 0.99)),
        ms(percentile(&mut lat, 1.0))
    );
    edit_worker_share(&code);
}

const BIG_TAPE_EVENTS: u64 = 400_000;

/// A tape of a run with a large output, written by the real `TapeWriter`:
/// the session's start, its plan, one code version, a run started, then
/// 400,000 output events of about 140 characters each: 87 MB.
fn big_tape(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("tape.jsonl");
    let mut w = TapeWriter::create(&path).expect("a new tape");
    for e in session_records("big") {
        w.append(e).expect("written");
    }
    w.append(Event::Code(CodeEvent {
        node: "big".into(),
        iteration: 1,
        code: "def big():\n    for i in range(400000):\n        print(i)\n".into(),
        source: CodeSource::Model,
        notes: Vec::new(),
    }))
    .expect("written");
    // The output belongs to a run, so folding it is real work (the state
    // keeps a bounded tail of it), as it is in a recorded session.
    w.append(Event::RunStarted(RunStartedEvent {
        run_id: 1,
        node: Some("big".into()),
        iteration: 1,
        kind: RunKind::NodeTests,
    }))
    .expect("written");
    let filler = "x".repeat(96);
    for i in 0..BIG_TAPE_EVENTS {
        w.append(Event::Output(OutputEvent {
            run_id: 1,
            stream: codeloop::protocol::Stream::Stdout,
            text: format!("line {i:>8} of the big run's output {filler}\n"),
        }))
        .expect("written");
    }
    w.flush().expect("flushed");
    path
}

/// `codeloop open` of a 400,000-event tape, in process: from the call to the
/// first frame, and to the frame that shows the whole tape folded.
async fn open_big_tape() {
    let dir = std::env::temp_dir().join(format!("codeloop-bench-open-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp folder");
    let path = big_tape(&dir);
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    open_breakdown(&path);
    let mut firsts = Vec::new();
    let mut wholes = Vec::new();
    let mut first_records = 0;
    for _ in 0..3 {
        let t0 = Instant::now();
        let (app, loading) = open_app(&path, &dir);
        let (frames, tx, task) = run_loading(app, loading);
        let first = frame_when(&frames, |_| true).await;
        let total = BIG_TAPE_EVENTS as usize;
        let whole = frame_when(&frames, |f| !f.loading && f.records > total).await;
        if let (Some(a), Some(b)) = (first, whole) {
            firsts.push(a - t0);
            wholes.push(b - t0);
        }
        if let Some(f) = frames.lock().ok().and_then(|f| f.first().copied()) {
            first_records = f.records;
        }
        let _ = tx.send(key(KeyCode::Char('q')));
        let _ = tx.send(key(KeyCode::Char('y')));
        let _ = task.await;
    }
    let replay = replay_first_frames(&path, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "opening a {}-event tape ({:.0} MB):",
        BIG_TAPE_EVENTS,
        size as f64 / 1e6
    );
    println!(
        "  open to first frame {} (median of 3; it showed the first {first_records} records, \"loading N%\"); to the frame with the whole tape folded {}",
        ms(percentile(&mut firsts, 0.5)),
        ms(percentile(&mut wholes, 0.5))
    );
    println!("{replay}");
}

type Keys = mpsc::UnboundedSender<io::Result<TermEvent>>;
type LoopTask = tokio::task::JoinHandle<(anyhow::Result<()>, App)>;

/// The event loop over an app whose tape is still being read, on a task;
/// its frames, its keys, and the task.
fn run_loading(
    mut app: App,
    loading: Option<mpsc::Receiver<codeloop::tui::loader::Loaded>>,
) -> (Frames, Keys, LoopTask) {
    let mut term = terminal();
    let frames: Frames = Arc::default();
    let (tx, input) = input();
    let mut h = hooks(&frames);
    h.loading = loading;
    let task = tokio::spawn(async move {
        let r = event_loop::run(&mut term, &mut app, input, None, h).await;
        (r, app)
    });
    (frames, tx, task)
}

/// `codeloop replay` of the big tape to its first frame (median of 3): as
/// it was (the whole tape read, then the first frame) and as it is (the
/// first records, the rest read while it plays).
async fn replay_first_frames(path: &Path, dir: &Path) -> String {
    let (mut whole, mut background) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let t0 = Instant::now();
        let (contents, _) = codeloop::commands::ui::load_tape(path, dir).expect("the tape");
        let mut app = App::replay(contents, info(), Theme::dark(), 1.0, false, false);
        event_loop::draw_once(&mut terminal(), &mut app).expect("drawn");
        whole.push(t0.elapsed());
        drop(app);

        let t0 = Instant::now();
        let (opening, _) = codeloop::commands::ui::open_tape(path, dir).expect("the tape");
        let clock = codeloop::tui::app::Replay::new(1.0, true, false);
        let (app, loading) = App::open_replay(opening, info(), Theme::dark(), clock);
        let (frames, tx, task) = run_loading(app, loading);
        if let Some(first) = frame_when(&frames, |_| true).await {
            background.push(first - t0);
        }
        let _ = tx.send(key(KeyCode::Char('q')));
        let _ = tx.send(key(KeyCode::Char('y')));
        let _ = task.await;
    }
    format!(
        "  replay to first frame (median of 3): {} reading the whole tape first (as before); {} from the first records, the rest read while it plays",
        ms(percentile(&mut whole, 0.5)),
        ms(percentile(&mut background, 0.5))
    )
}

/// Where opening the big tape spends its time, each step alone (median of 3).
fn open_breakdown(path: &Path) {
    let mut steps: Vec<(&str, Vec<Duration>)> = vec![
        ("read the file", vec![]),
        (
            "JSON well-formedness only (serde IgnoredAny, a floor)",
            vec![],
        ),
        (
            "parse: the derived Record, line by line (the parse before)",
            vec![],
        ),
        ("parse it into records (parse_tape)", vec![]),
        ("fold (timeline: push, apply, checkpoints)", vec![]),
        ("first render of the folded app", vec![]),
    ];
    for _ in 0..3 {
        let t = Instant::now();
        let bytes = std::fs::read(path).expect("the tape");
        steps[0].1.push(t.elapsed());
        let t = Instant::now();
        for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let _: serde::de::IgnoredAny = serde_json::from_slice(line).expect("json");
        }
        steps[1].1.push(t.elapsed());
        let t = Instant::now();
        let derived: Vec<Record> = bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).expect("a record"))
            .collect();
        steps[2].1.push(t.elapsed());
        let t = Instant::now();
        let contents = parse_tape(&bytes, path).expect("parsed");
        steps[3].1.push(t.elapsed());
        assert_eq!(
            derived, contents.records,
            "both parses read the same records"
        );
        drop(derived);
        drop(bytes);
        let records = contents.records.clone();
        let t = Instant::now();
        let mut timeline = codeloop::tui::timeline::Timeline::default();
        for r in records {
            timeline.push(r);
        }
        timeline.set_cursor(timeline.records().len());
        steps[4].1.push(t.elapsed());
        drop(timeline);
        let mut app = App::review(contents, info(), Theme::dark());
        let mut term = terminal();
        let t = Instant::now();
        event_loop::draw_once(&mut term, &mut app).expect("drawn");
        steps[5].1.push(t.elapsed());
    }
    println!("opening the big tape, step by step (each alone, median of 3):");
    for (name, mut times) in steps {
        println!("  {name}: {}", ms(percentile(&mut times, 0.5)));
    }
}

/// The open path of `codeloop open`: the first records read, the rest on its way.
fn open_app(path: &Path, sessions: &Path) -> (App, Option<mpsc::Receiver<Loaded>>) {
    let (opening, _) = codeloop::commands::ui::open_tape(path, sessions).expect("the tape");
    App::open(opening, info(), Theme::dark())
}
