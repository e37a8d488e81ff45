//! `codeloop export SESSION --format html --player`: one self-contained
//! page that replays the session as the workbench's review does: a
//! timeline to scrub, event by event and iteration by iteration, every
//! pane at the cursor, played at a chosen speed, and a link to any moment
//! (`page.html#seq=N`).
//!
//! The state at each cursor is the real fold (`State::apply` over the
//! tape's records), turned into the view at that moment in Rust
//! (`view.rs`) and written into the page as compact per-record frames
//! (`store.rs`: every text once, by id; each frame the slots it changed).
//! The page's script (`player.js`) applies frames and draws; it never
//! folds events, so it cannot disagree with the workbench.
//!
//! Nothing is fetched: the style and script are inline, the graph is
//! inline SVG, and a Content-Security-Policy lets only this page's own
//! script run (by its hash). Every text is put in the page by the script
//! as text, never as markup.

mod history;
mod store;
mod view;

use std::fmt::Write;

use sha2::{Digest, Sha256};

use super::html::esc;
use super::pictures::base64;
use crate::session::{Record, State, moments};

const CSS: &str = concat!(include_str!("player.css"), include_str!("../graph.css"));
const JS: &str = include_str!("player.js");

/// The whole page of the session whose tape held `records`, read from `source`.
pub(crate) fn page(records: &[Record], source: &str) -> String {
    let (state, data) = data(records, source, false);
    let title = state.task.lines().next().unwrap_or("session");
    let script_hash = base64(&Sha256::digest(JS.as_bytes()));
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{script_hash}'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>codeloop player: {}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n\
         <noscript><p class=\"noscript\">This page replays the session with a script, and the browser runs none here. \
         <code>codeloop export SESSION --format html</code> (without <code>--player</code>) writes a page with no script.</p></noscript>\n\
         <div id=\"app\" data-ready=\"no\"></div>\n\
         <script type=\"application/json\" id=\"data\">{}</script>\n<script>{JS}</script>\n</body>\n</html>\n",
        esc(title),
        // Inside a script element, `<` could end it: JSON has it only in
        // strings, where `\u003c` reads the same.
        data.replace('<', "\\u003c"),
    );
    out
}

/// The page's data for `records` (as JSON), and the state at their end.
/// `full`: every slot computed at every record (what the fast way is
/// tested against).
fn data(records: &[Record], source: &str, full: bool) -> (State, String) {
    let mut state = State::default();
    let mut views = view::Views::new(records, full);
    for r in records {
        state.apply(r);
        views.frame(&state, r);
    }
    let head = serde_json::json!({
        "task": state.task,
        "id": state.session_id,
        "model": state.config.model_shown(),
        "provider": state.config.provider,
        "sandbox": state.config.sandbox_layers.join(", "),
        "started": state.started_at,
        "source": source,
    });
    let extra = [
        ("head", head.to_string()),
        ("moments", moments_json(records)),
        ("gap", crate::tui::timeline::REPLAY_MAX_GAP_MS.to_string()),
        ("kept", views.kept.to_string()),
    ];
    let json = views.store.json(&extra);
    (state, json)
}

/// Each record's seq, time and kind, compactly, and the moments a cursor
/// jumps to: `seqs` (the first record's seq and those that do not follow
/// the one before, as [index, seq]), `t` (times as differences), `k` (kinds, by
/// index in `kinds`), `iters` (where each iteration begins), `fails`
/// (after each localized failure), `first` (the first failure).
fn moments_json(records: &[Record]) -> String {
    let mut kinds: Vec<&str> = Vec::new();
    let mut k = String::new();
    let mut t = String::new();
    let mut seqs: Vec<[u64; 2]> = Vec::new();
    let mut last: Option<(u64, u64)> = None;
    for (i, r) in records.iter().enumerate() {
        let kind = r.event.kind();
        let index = match kinds.iter().position(|x| *x == kind) {
            Some(p) => p,
            None => {
                kinds.push(kind);
                kinds.len() - 1
            }
        };
        number(&mut k, index as u64);
        let (seq0, t0) = last.unwrap_or((r.seq, 0));
        if last.is_none() || r.seq != seq0.wrapping_add(1) {
            seqs.push([i as u64, r.seq]);
        }
        number(&mut t, zigzag(r.t_ms as i64 - t0 as i64));
        last = Some((r.seq, r.t_ms));
    }
    let mut iters = Vec::new();
    let mut at = 0;
    while let Some(next) = moments::iteration_from(records, at, true) {
        iters.push(next);
        at = next;
    }
    let fails: Vec<usize> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.event, crate::session::Event::Localized(_)))
        .map(|(i, _)| i + 1)
        .collect();
    serde_json::json!({
        "n": records.len(),
        "seqs": seqs,
        "t": t,
        "k": k,
        "kinds": kinds,
        "iters": iters,
        "fails": fails,
        "first": moments::first_failure(records),
    })
    .to_string()
}

/// A signed difference as an unsigned number (0, -1, 1, -2, ... → 0, 1, 2, 3, ...).
fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// The digits of the page's number code: 32 that end a number, 32 that
/// go on.
const DIGITS: &[u8; 64] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";

/// `n` in the page's number code: five bits a character, the most
/// significant first; every character but the last from the second half.
fn number(out: &mut String, n: u64) {
    let mut groups = Vec::new();
    let mut n = n;
    loop {
        groups.push((n & 31) as usize);
        n >>= 5;
        if n == 0 {
            break;
        }
    }
    for (i, g) in groups.iter().rev().enumerate() {
        let last = i == groups.len() - 1;
        out.push(DIGITS[if last { *g } else { g + 32 }] as char);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_five_bits_a_character() {
        let mut s = String::new();
        for n in [0, 31, 32, 1000, 1 << 40] {
            number(&mut s, n);
            s.push(' ');
        }
        assert_eq!(s, "0 v x0 _8 xwwwwwww0 ");
        assert_eq!([zigzag(0), zigzag(-1), zigzag(1), zigzag(-2)], [0, 1, 2, 3]);
    }

    /// The view at every cursor of a page's data, as the page's script
    /// reads it (frames applied in order), each slot's value with the texts
    /// it names written out: a slot by its name, the history as "h".
    fn views(json: &str) -> Vec<std::collections::BTreeMap<String, String>> {
        use serde_json::Value;
        let data: Value = serde_json::from_str(json).unwrap();
        let texts: Vec<String> = serde_json::from_value(data["texts"].clone()).unwrap();
        let vals = data["vals"].as_array().unwrap().clone();
        let slots: Vec<String> = serde_json::from_value(data["slots"].clone()).unwrap();
        // Text ids in shared values, written out.
        fn resolve(v: &Value, texts: &[String]) -> Value {
            match v {
                Value::Object(m) => Value::Object(
                    m.iter()
                        .map(|(k, x)| {
                            let x = match (k.as_str(), x.as_u64()) {
                                ("c" | "p" | "d" | "t" | "v" | "svg", Some(id)) => {
                                    Value::String(texts[id as usize].clone())
                                }
                                _ => resolve(x, texts),
                            };
                            (k.clone(), x)
                        })
                        .collect(),
                ),
                other => other.clone(),
            }
        }
        let shown = |v: &Value| -> String {
            match v {
                Value::Number(n) => {
                    resolve(&vals[n.as_u64().unwrap() as usize], &texts).to_string()
                }
                Value::Array(p) => {
                    let text = &texts[p[0].as_u64().unwrap() as usize];
                    let len = p[1].as_u64().unwrap() as usize;
                    let prefix: String = String::from_utf16_lossy(
                        &text.encode_utf16().take(len).collect::<Vec<u16>>(),
                    );
                    format!("{prefix:?} {}", Value::from(p[2..].to_vec()))
                }
                other => other.to_string(),
            }
        };
        let mut now: Vec<Option<Value>> = vec![None; slots.len()];
        let mut lines: Vec<Value> = Vec::new();
        let mut out = Vec::new();
        let snapshot = |now: &[Option<Value>], lines: &[Value]| {
            let mut m: std::collections::BTreeMap<String, String> = now
                .iter()
                .zip(&slots)
                .filter_map(|(v, s)| v.as_ref().map(|v| (s.clone(), shown(v))))
                .collect();
            m.insert(
                "h".into(),
                lines.iter().map(&shown).collect::<Vec<_>>().join("\n"),
            );
            m
        };
        out.push(snapshot(&now, &lines));
        for frame in data["frames"].as_array().unwrap() {
            if let Some(f) = frame.as_array() {
                for pair in f.chunks(2) {
                    let slot = pair[0].as_u64().unwrap() as usize;
                    let v = &pair[1];
                    if slot == 0 && v.is_number() {
                        let last = lines.last_mut().unwrap();
                        let grown = last[1].as_i64().unwrap() - v.as_i64().unwrap();
                        last[1] = grown.into();
                    } else if slot == 0 {
                        let op = v.as_array().unwrap();
                        lines.truncate(op[0].as_u64().unwrap() as usize);
                        lines.extend(op[1..].iter().cloned());
                    } else if v.is_null() {
                        now[slot] = None;
                    } else if v.as_i64().is_some_and(|g| g < 0) {
                        let mut p = now[slot].clone().unwrap();
                        let grown = p[1].as_i64().unwrap() - v.as_i64().unwrap();
                        p[1] = grown.into();
                        now[slot] = Some(p);
                    } else {
                        now[slot] = Some(v.clone());
                    }
                }
            }
            out.push(snapshot(&now, &lines));
        }
        out
    }

    /// A run that prints a lot: the page keeps its first and last
    /// `OUTPUT_KEPT` bytes; in between it shows the first with a flag, and
    /// at the end the last with the bytes before them.
    #[test]
    fn a_long_output_keeps_its_head_and_its_tail() {
        use crate::session::*;
        let mut events = vec![
            Event::SessionStarted(SessionStartedEvent {
                version: TAPE_VERSION,
                session_id: "s".into(),
                started_at: String::new(),
                task: "t".into(),
                inputs: vec![],
                config: ConfigSummary::default(),
            }),
            Event::Plan(PlanEvent {
                specs: vec![FunctionSpec {
                    name: "f".into(),
                    purpose: "p".into(),
                    inputs: String::new(),
                    output: String::new(),
                    depends_on: vec![],
                    head: None,
                }],
            }),
            Event::RunStarted(RunStartedEvent {
                run_id: 1,
                node: Some("f".into()),
                iteration: 1,
                kind: RunKind::NodeTests,
            }),
        ];
        let line = |i: usize| format!("line {i:>6} {}\n", "x".repeat(87));
        let lines = 3 * view::OUTPUT_KEPT as usize / 100;
        for i in 0..lines {
            events.push(Event::Output(OutputEvent {
                run_id: 1,
                stream: crate::protocol::Stream::Stdout,
                text: line(i),
            }));
        }
        let records: Vec<Record> = events
            .into_iter()
            .enumerate()
            .map(|(i, event)| Record {
                seq: i as u64,
                t_ms: i as u64,
                event,
            })
            .collect();
        let (_, json) = data(&records, "t", false);
        let seen = views(&json);
        let total = (lines * 100) as u64;
        let kept = view::OUTPUT_KEPT;
        // Early on, all of it; in the middle, the first bytes and a flag.
        let first: String = (0..10).map(line).collect();
        assert_eq!(seen[13]["o/1"], format!("{first:?} []"));
        let middle = &seen[3 + lines / 2]["o/1"];
        assert!(
            middle.ends_with(" [0,1]"),
            "{}",
            &middle[middle.len() - 40..]
        );
        // At the end, the last bytes, and how many came before them.
        let end = &seen[records.len()]["o/1"];
        assert!(
            end.ends_with(&format!("[{}]", total - kept)),
            "{}",
            &end[end.len() - 40..]
        );
        assert!(end.contains(&line(lines - 1)[..20]));
        assert!(!end.contains("line      0 "));
    }

    /// Every tape in the repository: the page's frames made the fast way
    /// (each record computes only what it can change) are the frames made
    /// by computing every slot at every record.
    #[test]
    fn the_frames_computed_by_scope_are_those_computed_in_full() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut tapes: Vec<std::path::PathBuf> = Vec::new();
        for dir in [
            "assets/demos",
            "tests/fixtures",
            "crates/session/tests/fixtures",
        ] {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.join("tape.jsonl").is_file() {
                    tapes.push(p.join("tape.jsonl"));
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    tapes.push(p);
                }
            }
        }
        assert!(tapes.len() >= 5, "{tapes:?}");
        let mut checked = 0;
        for tape in tapes {
            let Ok(contents) = crate::session::read_tape(&tape) else {
                continue;
            };
            if contents.records.is_empty() {
                continue;
            }
            let (_, fast) = data(&contents.records, "t", false);
            let (_, full) = data(&contents.records, "t", true);
            let (fast, full) = (views(&fast), views(&full));
            assert_eq!(fast.len(), contents.records.len() + 1);
            if let Some(at) = fast.iter().zip(&full).position(|(a, b)| a != b) {
                panic!(
                    "{}: after record {} ({}) the views differ:\nfast {:?}\nfull {:?}",
                    tape.display(),
                    at - 1,
                    contents.records[at - 1].event.kind(),
                    fast[at],
                    full[at]
                );
            }
            checked += 1;
        }
        assert!(checked >= 5);
    }
}
