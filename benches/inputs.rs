//! Describing input files, measured and printed (not asserted).
//!
//! - A 2 GB CSV and a 2 GB JSON Lines file, each written into a temporary
//!   folder by repeating a block (and removed after): the time and peak
//!   memory of the library's `describe` in this process (as before issue
//!   33), and of the description as codeloop makes it now, in its child
//!   process. The goal: at most 200 ms and 16 MB each.
//! - The attack files of issue 33 (`codeloop_testkit::attack_files`),
//!   each described in its child: the child's peak
//!   resident memory (its own VmHWM, which it reports), its CPU time, the
//!   wall time codeloop waited, and codeloop's own peak growth (this
//!   process's VmHWM, reset before each).
//!
//! Run: `cargo bench --bench inputs` (all), or `-- csv`, `-- jsonl`,
//! `-- attacks`. The describing child is the `codeloop` binary beside this
//! bench (`cargo bench` builds it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a bench program stops on what it cannot measure

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use codeloop::engine::inputs::{describe_contained, describe_limits};
use codeloop::inputs;

use codeloop_testkit::attack_files;

const SIZE: u64 = 2 << 30;

fn status_kb(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Reset this process's peak (what came before does not count); whether
/// the kernel allowed it, and the resident size now (KiB).
fn reset_peak() -> (bool, u64) {
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    (reset, status_kb("VmRSS:"))
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Write `SIZE` bytes: the header, then `block` again and again.
fn write_file(path: &Path, header: &str, block: &str) {
    let started = Instant::now();
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    f.write_all(header.as_bytes()).unwrap();
    let mut written = header.len() as u64;
    while written + block.len() as u64 <= SIZE {
        f.write_all(block.as_bytes()).unwrap();
        written += block.len() as u64;
    }
    f.flush().unwrap();
    println!(
        "  wrote {} ({written} bytes) in {:.1} s",
        path.display(),
        started.elapsed().as_secs_f64()
    );
}

fn measure(label: &str, path: &Path, rows: u64) {
    // In this process, as the library alone (how it was before issue 33).
    let (reset, before) = reset_peak();
    let started = Instant::now();
    let d = inputs::describe(path).unwrap();
    let took = started.elapsed();
    let peak = status_kb("VmHWM:");
    println!("{label}: {}", d.summary());
    println!(
        "  in this process: {:.1} ms; peak memory {:.1} MB (VmHWM{}), {:.1} MB above the {:.1} MB resident before; goal 200 ms, 16 MB",
        took.as_secs_f64() * 1000.0,
        mib(peak),
        if reset {
            ", reset before"
        } else {
            ", since start: clear_refs refused"
        },
        mib(peak.saturating_sub(before)),
        mib(before),
    );
    in_child(path);
    println!("  rows written: {rows}");
    println!("{}", indent(&d.render()));
}

/// `path` described as codeloop does, in its child: the child's figures
/// and this process's growth.
fn in_child(path: &Path) {
    let (_, before) = reset_peak();
    let started = Instant::now();
    let (d, cost) = describe_contained(path, &describe_limits()).unwrap();
    let took = started.elapsed();
    let peak = status_kb("VmHWM:");
    match cost {
        Some(cost) => println!(
            "  in its child: {:.1} ms waited ({:.1} ms of the child's CPU); the child's peak {:.1} MB; codeloop's peak {:.1} MB above the {:.1} MB before{}",
            took.as_secs_f64() * 1000.0,
            cost.cpu.as_secs_f64() * 1000.0,
            cost.peak_rss_bytes as f64 / f64::from(1 << 20),
            mib(peak.saturating_sub(before)),
            mib(before),
            d.failure()
                .map(|why| format!("; NOT DESCRIBED: {why}"))
                .unwrap_or_default()
        ),
        None => println!(
            "  in its child: {:.1} ms; NOT DESCRIBED: {}",
            took.as_secs_f64() * 1000.0,
            d.failure().unwrap_or("?")
        ),
    }
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    | {l}\n")).collect()
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let want = |name: &str| args.is_empty() || args.iter().any(|a| a == name);
    let dir = tempfile::tempdir().unwrap();
    if want("attacks") {
        println!("The attack files of issue 33, each described in its child:");
        for (name, bytes) in attack_files::all() {
            let path = dir.path().join(name);
            std::fs::write(&path, &bytes).unwrap();
            let (d, _) = describe_contained(&path, &describe_limits()).unwrap();
            println!("{name} ({} bytes): {}", bytes.len(), d.summary());
            in_child(&path);
            std::fs::remove_file(&path).unwrap();
        }
        println!();
    }
    if want("csv") {
        let mut block = String::new();
        for i in 0..1000 {
            block.push_str(&format!(
                "{i},2024-03-{:02},{}.{:02},{},\"Store {}, north\",{}\n",
                i % 28 + 1,
                i * 7 % 1000,
                i % 100,
                if i % 3 == 0 { "true" } else { "false" },
                i % 17,
                if i % 10 == 0 { "" } else { "ok" }
            ));
        }
        let header = "id,day,amount,paid,store,status\n";
        let path = dir.path().join("sales.csv");
        write_file(&path, header, &block);
        let rows = (SIZE - header.len() as u64) / block.len() as u64 * 1000;
        measure("2 GB CSV", &path, rows);
        std::fs::remove_file(&path).unwrap();
    }
    if want("jsonl") {
        let mut block = String::new();
        for i in 0..1000 {
            block.push_str(&format!(
                "{{\"id\": {i}, \"at\": \"2024-03-{:02}T10:{:02}:00Z\", \"value\": {}.5, \"tags\": [\"a\", \"b\"], \"user\": {{\"name\": \"u{}\", \"age\": {}}}}}\n",
                i % 28 + 1,
                i % 60,
                i,
                i % 97,
                20 + i % 50
            ));
        }
        let path = dir.path().join("events.jsonl");
        write_file(&path, "", &block);
        let rows = SIZE / block.len() as u64 * 1000;
        measure("2 GB JSON Lines", &path, rows);
        std::fs::remove_file(&path).unwrap();
    }
}
