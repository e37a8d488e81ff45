//! `codeloop export --format html --player`: the page that replays a
//! session, opened in headless Chromium and driven by its keys; what it
//! shows at each cursor is compared with the fold of the same tape at the
//! same record (what the workbench shows there).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::{Path, PathBuf};
use std::process::Command;

use codeloop::protocol::sanitize::sanitize;
use codeloop::session::{Dag, NodeStatus, Purpose, Record, State, moments, read_tape};
use codeloop_testkit::cdp;
use serde_json::Value;

const DEMOS: [&str; 5] = ["collatz", "csvmeans", "roman", "sales", "wordfreq"];

fn demo_tape(demo: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/demos")
        .join(demo)
        .join("tape.jsonl")
}

/// The player's page of `tape`, written into `dir`.
fn export(tape: &Path, dir: &Path, name: &str) -> PathBuf {
    let page = dir.join(format!("{name}.html"));
    let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["export"])
        .arg(tape)
        .args(["--format", "html", "--player", "-o"])
        .arg(&page)
        .env("CODELOOP_DATA_DIR", dir)
        .env("CODELOOP_CONFIG", dir.join("no-config.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        page.display().to_string()
    );
    page
}

fn records(tape: &Path) -> Vec<Record> {
    read_tape(tape).unwrap().records
}

/// What the workbench shows at `cursor` (records folded), from the fold.
#[derive(Debug, PartialEq)]
struct Seen {
    cursor: usize,
    /// The node followed (the engine's, else the plan's first).
    node: String,
    /// Each node's status word.
    statuses: Vec<(String, String)>,
    /// The code pane: its iteration, and either the code's lines with the
    /// failing one, or the reply streaming in.
    iteration: String,
    code: Vec<String>,
    fail: i64,
    stream: Option<String>,
    /// The last line of the output of the run shown.
    output_end: Option<String>,
    /// The node's latest reflection, and the runtime values of its failure.
    reflection: String,
    values: String,
    /// The history's last reflection line.
    history_why: Option<String>,
}

fn expected(records: &[Record], cursor: usize) -> Seen {
    let mut state = State::default();
    for r in &records[..cursor] {
        state.apply(r);
    }
    let names: Vec<String> = Dag::new(state.specs.clone())
        .map(|d| d.levels().concat())
        .unwrap_or_default();
    let node = moments::active_at(&records[..cursor])
        .filter(|n| state.nodes.contains_key(*n))
        .map(str::to_string)
        .or_else(|| names.first().cloned())
        .unwrap_or_default();
    let mut statuses: Vec<(String, String)> = state
        .nodes
        .values()
        .map(|n| (n.spec.name.clone(), n.status.label().to_string()))
        .collect();
    statuses.sort();
    let n = state.nodes.get(&node);
    let reflecting = state
        .calls
        .values()
        .any(|c| !c.done && matches!(&c.purpose, Purpose::Reflect { node: r } if *r == node));
    let stream = n
        .and_then(|_| state.streaming(&node))
        .filter(|_| !reflecting)
        .map(|s| format!("{s}▌"));
    let code_text = n.and_then(|n| n.code()).filter(|_| stream.is_none());
    let fail = n
        .and_then(|n| {
            let e = state
                .current_failure(&node)
                .filter(|_| n.status != NodeStatus::Passed)?;
            e.line_in(code_text?)
        })
        .map_or(-1, |l| l as i64);
    let output_end = n
        .and_then(|_| state.run_to_show(Some(&node), false))
        .map(|id| {
            let run = &state.runs[&id];
            let text: String = run.chunks.iter().map(|(_, t)| sanitize(t)).collect();
            text.lines().last().unwrap_or("(no output)").to_string()
        });
    let reflection = state
        .history
        .iter()
        .rev()
        .find(|h| {
            matches!(h, codeloop::session::state::HistoryEntry::Reflection { node: r, .. } if *r == node)
        })
        .and_then(|h| state.reflection(h))
        .map(|r| {
            let mut text = r.text.trim().to_string();
            if r.streaming {
                text.push('▌');
            } else if !r.whole {
                text.push_str(" (the reply was cut off here)");
            }
            text
        })
        .unwrap_or_else(|| {
            if node.is_empty() {
                "no reflection yet".to_string()
            } else {
                format!("no reflection on {node} yet")
            }
        });
    let history_why = state
        .history
        .iter()
        .rev()
        .find_map(|h| state.reflection(h))
        .map(|r| {
            format!(
                "    why:   {}{}",
                r.text.trim(),
                if r.streaming { "▌" } else { "" }
            )
        });
    let values = state
        .current_failure(&node)
        .filter(|e| !e.values.is_empty())
        .map(|e| e.values_trace())
        .unwrap_or_else(|| "no runtime values at this moment".to_string());
    Seen {
        cursor,
        node,
        statuses,
        iteration: n.map(|n| n.iteration().to_string()).unwrap_or_default(),
        code: code_text
            .map(|c| c.lines().map(str::to_string).collect())
            .unwrap_or_default(),
        fail,
        stream,
        output_end,
        reflection,
        values,
        history_why,
    }
}

/// What the page shows now, read from its DOM.
const PROBE: &str = r#"(() => {
  const app = document.getElementById('app');
  const statuses = [...document.querySelectorAll('g[data-node]')]
    .map((g) => [g.dataset.node, g.dataset.status]).sort();
  const code = document.getElementById('code');
  const rows = [...code.querySelectorAll('.code-body tr')];
  const text = (td) => [...td.childNodes].filter((n) => n.nodeType === 3).map((n) => n.nodeValue).join('');
  const stream = code.querySelector('pre.streaming');
  const out = [...document.querySelectorAll('#output .line')].map((d) => d.textContent);
  const none = document.querySelector('#output .none');
  return {
    cursor: Number(app.dataset.cursor),
    node: app.dataset.node,
    statuses,
    iteration: code.dataset.iteration,
    code: stream ? [] : rows.map((tr) => text(tr.querySelector('td.text'))),
    fail: rows.findIndex((tr) => tr.classList.contains('fail-line')),
    stream: stream ? stream.textContent : null,
    output_end: out.length ? out[out.length - 1] : (none && none.textContent !== 'no run yet' ? none.textContent : null),
    reflection: document.querySelector('#reflection .why').textContent,
    values: document.querySelector('#values pre').textContent,
    history_why: [...document.querySelectorAll('#history li.why')].map((li) => li.textContent).pop() || null,
  };
})()"#;

fn seen(b: &mut cdp::Browser, cursor: usize) -> Seen {
    b.wait(&format!(
        "document.getElementById('app').dataset.cursor === '{cursor}'"
    ));
    let v = b.eval(PROBE);
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    Seen {
        cursor: v["cursor"].as_u64().unwrap() as usize,
        node: v["node"].as_str().unwrap().to_string(),
        statuses: v["statuses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let p = strings(p);
                (p[0].clone(), p[1].clone())
            })
            .collect(),
        iteration: v["iteration"].as_str().unwrap().to_string(),
        code: strings(&v["code"]),
        fail: v["fail"].as_i64().unwrap(),
        stream: v["stream"].as_str().map(str::to_string),
        output_end: v["output_end"].as_str().map(str::to_string),
        reflection: v["reflection"].as_str().unwrap().to_string(),
        values: v["values"].as_str().unwrap().to_string(),
        history_why: v["history_why"].as_str().map(str::to_string),
    }
}

fn browser(width: u32, height: u32) -> Option<cdp::Browser> {
    match cdp::chromium() {
        Some(path) => Some(cdp::Browser::launch(&path, width, height)),
        None => {
            eprintln!(
                "SKIPPED: no chromium on this machine (scripts/test.sh installs Debian's `chromium`)"
            );
            None
        }
    }
}

fn url(page: &Path, hash: &str) -> String {
    format!("file://{}{hash}", page.display())
}

const READY: &str = "document.getElementById('app').dataset.ready === 'yes'";

#[test]
fn every_demo_replays_with_the_keys_as_the_fold_says() {
    let work = tempfile::tempdir().unwrap();
    let Some(mut b) = browser(1280, 900) else {
        return;
    };
    let mut compared = 0;
    for demo in DEMOS {
        let tape = demo_tape(demo);
        let records = records(&tape);
        let page = export(&tape, work.path(), demo);
        b.open(&url(&page, ""), READY);
        // It opens at the end, like review.
        let n = records.len();
        let mut check = |b: &mut cdp::Browser, cursor: usize| {
            assert_eq!(
                seen(b, cursor),
                expected(&records, cursor),
                "{demo} at {cursor}"
            );
            compared += 1;
        };
        check(&mut b, n);
        b.key("Home");
        check(&mut b, 0);
        // Iteration by iteration, as `]` goes in the workbench.
        let mut at = 0;
        while let Some(next) = moments::iteration_from(&records, at, true) {
            b.key("]");
            check(&mut b, next);
            at = next;
        }
        b.key("[");
        let back = moments::iteration_from(&records, at, false).unwrap_or(at);
        check(&mut b, back);
        // Event by event through the first failure and on past its repair.
        if let Some(first) = moments::first_failure(&records) {
            b.key("f");
            check(&mut b, first);
            for step in 1..=40 {
                b.key("ArrowRight");
                check(&mut b, (first + step).min(n));
            }
            for step in 1..=3 {
                b.key("ArrowLeft");
                check(&mut b, (first + 40).min(n) - step);
            }
        }
        // A stretch of the middle, every event.
        b.key("Home");
        for c in 1..=n.min(120) {
            b.key("ArrowRight");
            if c % 3 == 0 || c > 100 {
                check(&mut b, c);
            }
        }
    }
    assert!(compared > 500, "{compared} moments compared");
    // Nothing fetched, nothing thrown, nothing refused by its policy (the
    // pages themselves were asked for, so the requests are seen).
    assert!(!b.events("Network.requestWillBeSent").is_empty());
    assert_eq!(b.trouble(), Vec::<String>::new());
}

#[test]
fn a_link_opens_its_moment_and_the_address_follows_the_cursor() {
    let work = tempfile::tempdir().unwrap();
    let Some(mut b) = browser(1280, 900) else {
        return;
    };
    let tape = demo_tape("roman");
    let records = records(&tape);
    let page = export(&tape, work.path(), "roman");
    // The record of the first localized failure, by its seq.
    let i = records
        .iter()
        .position(|r| matches!(r.event, codeloop::session::Event::Localized(_)))
        .unwrap();
    let seq = records[i].seq;
    b.open(&url(&page, &format!("#seq={seq}")), READY);
    let at = seen(&mut b, i + 1);
    assert_eq!(at, expected(&records, i + 1));
    assert!(at.fail >= 0, "the failing line is marked: {at:?}");
    // The address names the moment shown, and follows the keys.
    b.wait(&format!("location.hash === '#seq={seq}'"));
    b.key("ArrowRight");
    b.wait(&format!("location.hash === '#seq={}'", records[i + 1].seq));
    assert_eq!(
        b.eval("document.getElementById('link').getAttribute('href')"),
        Value::String(format!("#seq={}", records[i + 1].seq))
    );
    // Another moment's link, followed in the open page.
    let later = records[i + 20].seq;
    b.eval(&format!("location.hash = '#seq={later}'"));
    assert_eq!(seen(&mut b, i + 21), expected(&records, i + 21));
    // A seq the tape skips opens at the last record before it.
    b.open(&url(&page, "#seq=999999"), READY);
    seen(&mut b, records.len());
}

#[test]
fn it_plays_to_the_end_at_the_chosen_speed() {
    let work = tempfile::tempdir().unwrap();
    let Some(mut b) = browser(1280, 900) else {
        return;
    };
    let tape = demo_tape("collatz");
    let records = records(&tape);
    let page = export(&tape, work.path(), "collatz");
    b.open(&url(&page, ""), READY);
    b.key("Home");
    seen(&mut b, 0);
    for _ in 0..6 {
        b.key("+");
    }
    assert_eq!(
        b.eval("document.querySelector('select').value"),
        Value::String("64".into())
    );
    b.key(" ");
    b.wait("document.querySelector('.controls button:nth-child(4)').textContent.includes('pause')");
    // The tape lasts a few seconds; at ×64 it plays through and stops.
    let n = records.len();
    assert_eq!(seen(&mut b, n), expected(&records, n));
    b.wait("document.querySelector('.controls button:nth-child(4)').textContent.includes('play')");
}

/// The roman session with a task full of markup.
fn markup_tape(dir: &Path) -> PathBuf {
    let tape = std::fs::read_to_string(demo_tape("roman")).unwrap();
    let first = tape.lines().next().unwrap();
    let mut started: Value = serde_json::from_str(first).unwrap();
    let task = started["task"].as_str().unwrap().to_string();
    started["task"] =
        format!("{task} </script><script>document.title='pwned'</script> & \"quoted\"").into();
    let rest: String = tape.lines().skip(1).map(|l| format!("{l}\n")).collect();
    let path = dir.join("markup.jsonl");
    std::fs::write(&path, format!("{started}\n{rest}")).unwrap();
    path
}

#[test]
fn the_page_holds_everything_and_shows_text_as_text() {
    let work = tempfile::tempdir().unwrap();
    let page = export(&markup_tape(work.path()), work.path(), "markup");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("http://") && !html.contains("https://"));
    assert!(!html.contains("src=") && !html.contains("@import"));
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    assert!(
        html.contains("script-src 'sha256-"),
        "only its own script runs"
    );
    assert!(
        !html.contains("</script><script>document.title"),
        "the tape's text cannot end the data's script element"
    );
    // Two scripts: the data and the player.
    assert_eq!(html.matches("<script").count(), 2);
    let Some(mut b) = browser(1280, 900) else {
        return;
    };
    b.open(&url(&page, ""), READY);
    assert_eq!(b.eval("document.title === 'pwned'"), Value::Bool(false));
    assert_eq!(b.trouble(), Vec::<String>::new());
    // What the browser reports as trouble is seen: a script the page's
    // policy does not allow is refused, and said so.
    b.eval("const s = document.createElement('script'); s.textContent = 'document.title = 1'; document.body.append(s);");
    let start = std::time::Instant::now();
    while !b
        .trouble()
        .iter()
        .any(|t| t.contains("Content Security Policy"))
    {
        assert!(
            start.elapsed().as_secs() < 10,
            "no refusal seen: {:?}",
            b.trouble()
        );
        b.eval("1");
    }
    assert_ne!(b.eval("document.title"), Value::String("1".into()));
    let task = b.eval("document.querySelector('.task-text').textContent");
    assert!(
        task.as_str()
            .unwrap()
            .contains("</script><script>document.title='pwned'</script> & \"quoted\""),
        "{task}"
    );
}

#[test]
fn screenshots_of_a_failure_on_a_phone_a_laptop_and_a_projector() {
    let work = tempfile::tempdir().unwrap();
    let Some(mut b) = browser(412, 915) else {
        return;
    };
    let tape = demo_tape("roman");
    let records = records(&tape);
    let page = export(&tape, work.path(), "roman");
    let first = moments::first_failure(&records).unwrap();
    let seq = records[first - 1].seq;
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("player-shots");
    for (name, w, h) in [
        ("phone", 412, 915),
        ("laptop", 1280, 800),
        ("projector", 1920, 1080),
    ] {
        b.size(w, h);
        b.open(&url(&page, &format!("#seq={seq}")), READY);
        seen(&mut b, first);
        // Nothing wider than the screen: read at a phone's width without
        // scrolling sideways.
        let wide = b.eval("document.documentElement.scrollWidth");
        assert!(wide.as_u64().unwrap() <= w as u64, "{name}: {wide} px wide");
        let path = shots.join(format!("roman-{name}.png"));
        b.screenshot(&path);
        assert!(std::fs::metadata(&path).unwrap().len() > 10_000);
        eprintln!("{}", path.display());
    }
}

#[test]
fn the_diff_tab_shows_what_the_last_repair_changed() {
    let work = tempfile::tempdir().unwrap();
    let Some(mut b) = browser(1280, 900) else {
        return;
    };
    let tape = demo_tape("roman");
    let records = records(&tape);
    let page = export(&tape, work.path(), "roman");
    b.open(&url(&page, ""), READY);
    seen(&mut b, records.len());
    // The plan's first node, then the next: roman_to_int, repaired twice.
    b.key("ArrowUp");
    b.key("ArrowUp");
    b.key("ArrowDown");
    b.key("d");
    b.wait("document.getElementById('app').dataset.node === 'roman_to_int'");
    b.wait("document.querySelector('#code table.diff') !== null");
    let rows = b.eval(
        "[...document.querySelectorAll('#code table.diff tr')].map((tr) => \
         tr.querySelector('td.sign').textContent + tr.querySelector('td.text').textContent)",
    );
    let state = State::from_records(&records);
    let versions = &state.nodes["roman_to_int"].versions;
    let [.., old, new] = versions.as_slice() else {
        panic!("two versions at least: {versions:?}");
    };
    let expected: Vec<String> = similar::TextDiff::from_lines(&old.code, &new.code)
        .iter_all_changes()
        .map(|c| {
            let sign = match c.tag() {
                similar::ChangeTag::Equal => ' ',
                similar::ChangeTag::Delete => '-',
                similar::ChangeTag::Insert => '+',
            };
            format!("{sign}{}", c.value().trim_end_matches(['\n', '\r']))
        })
        .collect();
    assert_eq!(rows, serde_json::json!(expected));
    assert!(expected.iter().any(|l| l.starts_with('+')));
    let title = b.eval("document.querySelector('#code .detail').textContent");
    assert_eq!(
        title,
        Value::String(format!(
            "roman_to_int · iteration {} → {}",
            old.iteration, new.iteration
        ))
    );
}
