//! Pictures drawn with the terminal's own graphics. In the app: `I` with
//! kitty, sixel or iTerm2 chosen puts the protocol's escape, carrying the
//! picture, into the frame; the picture is erased when the view closes,
//! and encoded again when the picture or the terminal's size changes. With
//! the real binary under a pseudo-terminal that has kitty's or iTerm2's
//! environment: `codeloop open` of the `sales` demo's session, `I`, and
//! the bytes written to the terminal carry the chart, pixel for pixel.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::path::{Path, PathBuf};
use std::process::Command;

use codeloop::protocol::picture::Picture;
use codeloop::session::{Event, PictureEvent, Record};
use codeloop::tui::graphics::{Graphics, Protocol};
use codeloop::tui::{App, Msg};
use codeloop_testkit::tui_support;
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use tui_support::*;

fn key(code: KeyCode) -> Msg {
    Msg::Term(TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn base64(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => panic!("not base64: {:?}", c as char),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

/// The first kitty transmission (`a=T`) in `text`: its keys, width,
/// height and pixels (the payload of all its chunks, base64-decoded).
fn kitty_transmission(text: &str) -> Option<(String, u32, u32, Vec<u8>)> {
    let start = text.find("\x1b_Gq=2,i=")?;
    let mut keys = String::new();
    let mut payload = String::new();
    for (i, cmd) in text[start..].split("\x1b_G").skip(1).enumerate() {
        let cmd = &cmd[..cmd.find("\x1b\\")?];
        let (k, p) = cmd.split_once(';')?;
        if i == 0 {
            keys = k.to_string();
        }
        payload.push_str(p);
        if k.contains("m=0") {
            break;
        }
    }
    let num = |name: &str| -> u32 {
        keys.split(',')
            .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
            .unwrap()
            .parse()
            .unwrap()
    };
    let (w, h) = (num("s"), num("v"));
    Some((keys, w, h, base64(&payload)))
}

/// The first iTerm2 inline file in `text`: its arguments and its bytes.
fn iterm2_file(text: &str) -> Option<(String, Vec<u8>)> {
    let start = text.find("\x1b]1337;File=")?;
    let rest = &text[start + "\x1b]1337;File=".len()..];
    let (args, data) = rest[..rest.find('\x07')?].split_once(':')?;
    Some((args.to_string(), base64(data)))
}

fn with_pictures(pictures: &[Picture]) -> Vec<Record> {
    let mut recs = records();
    let end = recs.len() - 1;
    for (i, p) in pictures.iter().enumerate() {
        recs.insert(
            end + i,
            Record {
                seq: 0,
                t_ms: 0,
                event: Event::Picture(PictureEvent {
                    run_id: Some(i as u64 + 1),
                    picture: p.clone(),
                }),
            },
        );
    }
    for (i, r) in recs.iter_mut().enumerate() {
        r.seq = i as u64;
    }
    recs
}

/// A review of a session with two PNGs (a red one, then a blue one),
/// drawn with `protocol` at cells of 8 × 16 pixels.
fn app_with_pictures(dir: &Path, protocol: Protocol) -> App {
    std::fs::create_dir_all(dir.join("pictures")).unwrap();
    let picture = |name: &str, colour: [u8; 3]| {
        image::RgbImage::from_pixel(32, 16, image::Rgb(colour))
            .save(dir.join("pictures").join(name))
            .unwrap();
        Picture {
            name: name.into(),
            path: format!("pictures/{name}"),
            format: "png".into(),
            size_bytes: 100,
            width: Some(32),
            height: Some(16),
        }
    };
    let recs = with_pictures(&[
        picture("red.png", [255, 0, 0]),
        picture("blue.png", [0, 0, 255]),
    ]);
    let tape = codeloop::session::TapeContents {
        records: recs,
        truncated_tail: None,
        skipped: Vec::new(),
    };
    let mut app = App::review(tape, info(), theme());
    app.set_session_dir(dir.to_path_buf());
    app.set_graphics(Graphics {
        protocol,
        cell: Some((8, 16)),
        tmux: false,
        why: "test".into(),
    });
    app
}

/// Do what the event loop does with a picture to read.
fn read_pictures(app: &mut App, actions: Vec<codeloop::tui::Action>) {
    for action in actions {
        if let codeloop::tui::Action::ReadPicture(path) = action {
            let result = codeloop::tui::picture::decode(&path).map(std::sync::Arc::new);
            app.update(Msg::PictureRead { path, result });
        }
    }
}

/// One frame as the event loop draws it; the frame's buffer.
fn frame(t: &mut Terminal<TestBackend>, app: &mut App) -> Buffer {
    let size = t.size().unwrap();
    app.set_screen(ratatui::layout::Rect::new(0, 0, size.width, size.height));
    app.prepare();
    t.draw(|f| codeloop::tui::app::view::render(app, f))
        .unwrap()
        .buffer
        .clone()
}

/// Every symbol of the frame, in one string (the escapes ride in cells).
fn symbols(buf: &Buffer) -> String {
    buf.content.iter().map(|c| c.symbol()).collect()
}

#[test]
fn each_protocol_puts_the_picture_into_the_frame_and_the_frame_after_closing_erases_it() {
    for protocol in [Protocol::Kitty, Protocol::Sixel, Protocol::Iterm2] {
        let dir = tempfile::tempdir().unwrap();
        let mut app = app_with_pictures(dir.path(), protocol);
        let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
        let before = frame(&mut t, &mut app);
        let actions = app.update(key(KeyCode::Char('I')));
        read_pictures(&mut app, actions);
        let open = frame(&mut t, &mut app);
        let text = symbols(&open);
        let shown = app
            .pictures()
            .unwrap()
            .shown()
            .expect("drawn with a protocol");
        assert_eq!(shown.protocol, protocol);
        // 32 × 16 pixels grown 17 times (each pixel 17 × 17) into the 70
        // × 17 cells of 8 × 16 pixels of the view: 68 × 17 cells, centred.
        assert_eq!((shown.at.width, shown.at.height), (68, 17));
        match protocol {
            Protocol::Kitty => {
                let (keys, w, h, px) = kitty_transmission(&text).expect("kitty APC");
                assert!(keys.contains("a=T"), "{keys}");
                assert_eq!((w, h), (32 * 17, 16 * 17));
                assert!(px.chunks(4).all(|p| p == [0, 0, 255, 255]), "the blue one");
            }
            Protocol::Iterm2 => {
                let (args, png) = iterm2_file(&text).expect("OSC 1337");
                assert!(args.contains("inline=1"), "{args}");
                let img = image::load_from_memory(&png).unwrap().into_rgb8();
                assert_eq!(img.dimensions(), (32 * 17, 16 * 17));
                assert!(img.pixels().all(|p| p.0 == [0, 0, 255]));
            }
            Protocol::Sixel => {
                assert!(
                    text.contains("\x1bP") && text.contains("\"1;1;544;272"),
                    "sixel DCS"
                );
                // Blue is a colour register: 0% red, 0% green, 100% blue.
                assert!(text.contains(";2;0;0;100"), "blue defined");
            }
            Protocol::Halfblocks => unreachable!(),
        }
        assert!(says_drawn_with(&open, protocol), "the footer names it");
        // Another picture: encoded anew, the red one.
        let actions = app.update(key(KeyCode::Left));
        read_pictures(&mut app, actions);
        let other = symbols(&frame(&mut t, &mut app));
        match protocol {
            Protocol::Kitty => {
                let (_, _, _, px) = kitty_transmission(&other).unwrap();
                assert!(px.chunks(4).all(|p| p == [255, 0, 0, 255]), "the red one");
            }
            Protocol::Iterm2 => {
                let (_, png) = iterm2_file(&other).unwrap();
                let img = image::load_from_memory(&png).unwrap().into_rgb8();
                assert!(img.pixels().all(|p| p.0 == [255, 0, 0]));
            }
            _ => assert!(other.contains(";2;100;0;0"), "red defined"),
        }
        // Closed: every cell the picture took is written again (the diff
        // of the two frames covers them), and the frame is the one before.
        let at = app.pictures().unwrap().shown().unwrap().at;
        let showing = frame(&mut t, &mut app);
        app.update(key(KeyCode::Esc));
        assert!(app.pictures().is_none());
        let closed = frame(&mut t, &mut app);
        let rewritten: Vec<(u16, u16)> = showing
            .diff(&closed)
            .iter()
            .map(|(x, y, _)| (*x, *y))
            .collect();
        for y in at.y..at.bottom() {
            for x in at.x..at.right() {
                assert!(rewritten.contains(&(x, y)), "{protocol:?}: ({x},{y}) left");
            }
        }
        assert_eq!(closed, before, "{protocol:?}: nothing of the picture stays");
        assert!(!symbols(&closed).contains('\u{10EEEE}'));
    }
}

#[test]
fn a_resize_encodes_the_picture_again_for_the_new_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_with_pictures(dir.path(), Protocol::Kitty);
    let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let actions = app.update(key(KeyCode::Char('I')));
    read_pictures(&mut app, actions);
    frame(&mut t, &mut app);
    let first = app.pictures().unwrap().shown().unwrap().at;
    // Wider: the picture stays 4 cells, centred anew, and is sent again.
    let mut wide = Terminal::new(TestBackend::new(120, 30)).unwrap();
    let text = symbols(&frame(&mut wide, &mut app));
    let moved = app.pictures().unwrap().shown().unwrap().at;
    assert_ne!(first, moved);
    assert!(kitty_transmission(&text).is_some(), "sent again");
    // A screen too small for the workbench: no picture, no escape.
    let mut small = Terminal::new(TestBackend::new(30, 7)).unwrap();
    let buf = frame(&mut small, &mut app);
    assert!(app.pictures().unwrap().shown().is_none());
    assert!(!symbols(&buf).contains("\x1b_G"));
    assert!(symbols(&buf).contains("terminal too small"));
    // And back: sent again.
    let text = symbols(&frame(&mut t, &mut app));
    assert!(kitty_transmission(&text).is_some());
}

/// The frame's text without the escapes: the footer names the protocol.
fn says_drawn_with(buf: &Buffer, protocol: Protocol) -> bool {
    let mut rows = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            let s = buf[(x, y)].symbol();
            if !s.starts_with('\x1b') && !s.starts_with('\u{10EEEE}') {
                rows.push_str(s);
            }
        }
        rows.push('\n');
    }
    rows.contains(&format!("drawn with {}", protocol.words()))
}

// ---- The real binary under a pseudo-terminal ----

/// A session of the `sales` demo, with its chart, in `dir`'s data folder.
fn sales_session(dir: &Path) -> PathBuf {
    let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["--config", "/dev/null", "run", "--demo", "sales"])
        .args(["--pace", "0", "--no-cache", "--out"])
        .arg(dir.join("out"))
        .env("CODELOOP_DATA_DIR", dir.join("data"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_dir(dir.join("data/sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("pictures").is_dir())
        .expect("a session with pictures")
}

/// Run `codeloop --config /dev/null ARGS` in a pseudo-terminal of 100 × 30
/// cells of 10 × 20 pixels with `env`; with `press_i`, press `I` once the
/// screen is drawn (and Esc after `until` came). Returns every byte it
/// wrote (Python's `pty`: the child gets a real terminal, the parent reads
/// what a terminal would show).
fn under_pty(args: &[&str], env: &[(&str, &str)], press_i: bool, until: &str) -> Vec<u8> {
    const DRIVER: &str = r#"
import json, os, pty, select, signal, struct, sys, time, fcntl, termios
out_path, press, until, env, argv = sys.argv[1], sys.argv[2] == "1", sys.argv[3], json.loads(sys.argv[4]), sys.argv[5:]
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 1000, 600))
    os.execve(argv[0], argv, env)
out = bytearray()
def pump(seconds, stop=None):
    end = time.time() + seconds
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            out.extend(chunk)
            if stop is not None and stop in out:
                return
if press:
    pump(20, b"History")
    pump(1.0)
    os.write(fd, b"I")
pump(20, until.encode())
pump(1.0)
if press:
    os.write(fd, b"\x1b")
    pump(1.5)
try:
    os.kill(pid, signal.SIGKILL)
except ProcessLookupError:
    pass
os.waitpid(pid, 0)
open(out_path, "wb").write(out)
"#;
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("out.bin");
    let mut vars: std::collections::BTreeMap<String, String> = [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("HOME", dir.path().display().to_string()),
        (
            "CODELOOP_DATA_DIR",
            dir.path().join("data").display().to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    vars.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let status = Command::new("python3")
        .arg("-c")
        .arg(DRIVER)
        .arg(&out_path)
        .arg(if press_i { "1" } else { "0" })
        .arg(until)
        .arg(serde_json::to_string(&vars).unwrap())
        .arg(env!("CARGO_BIN_EXE_codeloop"))
        .args(["--config", "/dev/null"])
        .args(args)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read(&out_path).unwrap()
}

/// `codeloop open SESSION` under a pseudo-terminal, `I` pressed.
fn open_under_pty(session: &Path, extra: &[&str], env: &[(&str, &str)], until: &str) -> Vec<u8> {
    let session = session.display().to_string();
    let mut args: Vec<&str> = extra.to_vec();
    args.extend(["open", session.as_str()]);
    under_pty(&args, env, true, until)
}

/// Whether a line of the 100 × 30 screen `out` draws held `wanted` at
/// some moment: the bytes played into a grid of cells the way a terminal
/// takes them (cursor moves placed, colours and other escapes skipped,
/// an image protocol's payload with them).
fn shown_at_some_point(out: &[u8], wanted: &str) -> bool {
    const ROWS: usize = 30;
    const COLS: usize = 100;
    let text = String::from_utf8_lossy(out);
    let mut grid = vec![vec![' '; COLS]; ROWS];
    let (mut row, mut col) = (0usize, 0usize);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                Some('[') => {
                    let mut params = String::new();
                    let mut last = None;
                    for p in chars.by_ref() {
                        if ('@'..='~').contains(&p) {
                            last = Some(p);
                            break;
                        }
                        params.push(p);
                    }
                    match last {
                        Some('H') => {
                            let mut n = params.split(';').map(|v| v.parse::<usize>().unwrap_or(1));
                            row = n.next().unwrap_or(1).clamp(1, ROWS) - 1;
                            col = n.next().unwrap_or(1).clamp(1, COLS) - 1;
                        }
                        Some('J') if params == "2" => grid = vec![vec![' '; COLS]; ROWS],
                        _ => {}
                    }
                }
                // APC (kitty), OSC, DCS (sixel): up to BEL or ST.
                Some('_' | ']' | 'P') => {
                    while let Some(p) = chars.next() {
                        if p == '\x07' || (p == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' => col = 0,
            '\n' => row = (row + 1).min(ROWS - 1),
            c if c.is_control() => {}
            c => {
                if col < COLS {
                    grid[row][col] = c;
                    col += 1;
                    if grid[row].iter().collect::<String>().contains(wanted) {
                        return true;
                    }
                }
            }
        }
    }
    false
}

/// The chart as the session keeps it, each pixel a `k` × `k` square.
fn chart_pixels(session: &Path, k: u32) -> (u32, u32, Vec<[u8; 3]>) {
    let file = session.join("pictures/run-5-chart.png");
    let img = image::open(&file).unwrap().into_rgb8();
    let grown = image::RgbImage::from_fn(img.width() * k, img.height() * k, |x, y| {
        *img.get_pixel(x / k, y / k)
    });
    (
        grown.width(),
        grown.height(),
        grown.pixels().map(|p| p.0).collect(),
    )
}

#[test]
fn under_a_kitty_terminal_i_writes_the_chart_in_kitty_graphics() {
    let dir = tempfile::tempdir().unwrap();
    let session = sales_session(dir.path());
    let out = open_under_pty(
        &session,
        &[],
        &[("TERM", "xterm-kitty"), ("KITTY_WINDOW_ID", "1")],
        "m=0;",
    );
    let text = String::from_utf8_lossy(&out);
    let (keys, w, h, px) = kitty_transmission(&text).unwrap_or_else(|| {
        panic!(
            "no kitty transmission in {} bytes: {:?}",
            out.len(),
            text.chars().take(400).collect::<String>()
        )
    });
    assert!(keys.contains("a=T") && keys.contains("U=1"), "{keys}");
    // 240 × 120 in the view's 88 × 23 cells of 10 × 20 pixels: grown 3
    // times (each pixel 3 × 3), 72 × 18 cells.
    let (cw, ch, chart) = chart_pixels(&session, 3);
    assert_eq!((w, h), (cw, ch));
    let sent: Vec<[u8; 3]> = px.chunks(4).map(|p| [p[0], p[1], p[2]]).collect();
    assert_eq!(sent, chart, "the chart, pixel for pixel");
    assert!(text.contains('\u{10EEEE}'), "placed with placeholders");
}

#[test]
fn under_an_iterm2_terminal_i_writes_the_chart_as_an_inline_png() {
    let dir = tempfile::tempdir().unwrap();
    let session = sales_session(dir.path());
    let out = open_under_pty(
        &session,
        &[],
        &[("TERM", "xterm-256color"), ("TERM_PROGRAM", "iTerm.app")],
        "\x07",
    );
    let text = String::from_utf8_lossy(&out);
    let (args, png) =
        iterm2_file(&text).unwrap_or_else(|| panic!("no OSC 1337 in {} bytes", out.len()));
    assert!(args.contains("inline=1"), "{args}");
    let img = image::load_from_memory(&png).unwrap().into_rgb8();
    let (cw, ch, chart) = chart_pixels(&session, 3);
    assert_eq!(img.dimensions(), (cw, ch));
    let sent: Vec<[u8; 3]> = img.pixels().map(|p| p.0).collect();
    assert_eq!(sent, chart, "the chart, pixel for pixel");
}

#[test]
fn under_a_plain_terminal_i_draws_half_blocks_and_writes_no_image_escape() {
    let dir = tempfile::tempdir().unwrap();
    let session = sales_session(dir.path());
    // xterm-256color answers nothing here: asked, and half-blocks.
    let out = open_under_pty(
        &session,
        &[],
        &[("TERM", "xterm-256color")],
        "two pixels a cell",
    );
    let text = String::from_utf8_lossy(&out);
    // On the screen, not in the bytes: a redraw skips the cells a frame
    // before already held (a space where a space was), so the words of a
    // line may come apart in the stream.
    assert!(
        shown_at_some_point(&out, "two pixels a cell"),
        "{} bytes",
        out.len()
    );
    assert!(text.contains('▀'));
    assert!(!text.contains("\x1b_Gq=2,i="), "no kitty image");
    assert!(!text.contains("\x1b]1337;File="), "no iTerm2 image");
}

#[test]
fn the_flag_and_the_environment_variable_win_over_the_terminals_environment() {
    let dir = tempfile::tempdir().unwrap();
    let session = sales_session(dir.path());
    let kitty = [("TERM", "xterm-kitty"), ("KITTY_WINDOW_ID", "1")];
    // --graphics halfblocks in kitty: half-blocks, no image.
    let out = open_under_pty(
        &session,
        &["--graphics", "halfblocks"],
        &kitty,
        "two pixels a cell",
    );
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains('▀'));
    assert!(!text.contains("\x1b_Gq=2,i="), "no kitty image");
    // CODELOOP_GRAPHICS=iterm2 in kitty: an inline PNG, the chart.
    let mut env = kitty.to_vec();
    env.push(("CODELOOP_GRAPHICS", "iterm2"));
    let out = open_under_pty(&session, &[], &env, "\x07");
    let text = String::from_utf8_lossy(&out);
    let (_, png) = iterm2_file(&text).expect("OSC 1337");
    let img = image::load_from_memory(&png).unwrap().into_rgb8();
    assert_eq!(img.dimensions(), (720, 360));
    assert!(!text.contains("\x1b_Gq=2,i="), "no kitty image");
}

#[test]
fn doctor_says_which_protocol_and_why() {
    let doctor = |env: &[(&str, &str)]| -> String {
        let out = under_pty(&["doctor", "--layers-only"], env, false, "\nmode  ");
        let text = String::from_utf8_lossy(&out).into_owned();
        // (The query is written just before the line; a real terminal
        // takes it, this one shows it.)
        text.lines()
            .find_map(|l| l.find("pictures     ").map(|at| &l[at..]))
            .unwrap_or_else(|| panic!("no pictures line: {text}"))
            .trim_end()
            .to_string()
    };
    let line = doctor(&[("TERM", "xterm-kitty"), ("KITTY_WINDOW_ID", "1")]);
    assert!(line.contains("kitty graphics: kitty"), "{line}");
    assert!(line.contains("cells of 10×20 pixels"), "{line}");
    let line = doctor(&[("TERM", "xterm-256color"), ("TERM_PROGRAM", "WezTerm")]);
    assert!(line.contains("iTerm2 inline images: WezTerm"), "{line}");
    let line = doctor(&[("TERM", "tmux-256color"), ("TMUX", "/nonexistent,1,0")]);
    assert!(
        line.contains("half-blocks") && line.contains("inside tmux"),
        "{line}"
    );
    // Nothing answers the query in this pseudo-terminal: no, within the time.
    let line = doctor(&[("TERM", "xterm-256color")]);
    assert!(
        line.contains("did not answer the graphics query within 300 ms"),
        "{line}"
    );
}
