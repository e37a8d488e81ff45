//! Describing large input files, measured and printed (not asserted): the
//! time and the peak memory of `codeloop_inputs::describe` on a 2 GB CSV
//! and a 2 GB JSON Lines file, each written into a temporary folder by
//! repeating a block (and removed after). The goal: at most 200 ms and
//! 16 MB each.
//!
//! Run: `cargo bench --bench inputs` (both), or `-- csv` / `-- jsonl`.
//! Peak memory is the process's VmHWM, reset through /proc/self/clear_refs
//! just before the description (so the writing does not count); the
//! growth is that peak less the resident size before it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a bench program stops on what it cannot measure

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use codeloop::inputs;

const SIZE: u64 = 2 << 30;

fn status_kb(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
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
    // Reset the peak: what the writing used does not count.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let before = status_kb("VmRSS:");
    let started = Instant::now();
    let d = inputs::describe(path).unwrap();
    let took = started.elapsed();
    let peak = status_kb("VmHWM:");
    println!("{label}: {}", d.summary());
    println!(
        "  described in {:.1} ms; peak memory {:.1} MB (VmHWM{}), {:.1} MB above the {:.1} MB resident before; goal 200 ms, 16 MB",
        took.as_secs_f64() * 1000.0,
        peak as f64 / 1024.0,
        if reset {
            ", reset before"
        } else {
            ", since start: clear_refs refused"
        },
        peak.saturating_sub(before) as f64 / 1024.0,
        before as f64 / 1024.0,
    );
    println!("  rows written: {rows}");
    println!("{}", indent(&d.render()));
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
