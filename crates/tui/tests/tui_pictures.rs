//! The pictures the programs drew, in the workbench: `I` opens them, the
//! file is decoded off the UI thread, and the picture is drawn with
//! half-blocks, each cell two pixels of the file, exactly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop_protocol::picture::Picture;
use codeloop_session::{Event, PictureEvent, Record};
use codeloop_tui::theme::Theme;
use codeloop_tui::{Action, App, Msg};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Color;
use tui_support::*;

fn key(code: KeyCode) -> Msg {
    Msg::Term(TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE)))
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
        r.t_ms = i as u64 * 150;
    }
    recs
}

fn picture(name: &str, path: &str, format: &str, size: Option<(u32, u32)>) -> Picture {
    Picture {
        name: name.into(),
        path: path.into(),
        format: format.into(),
        size_bytes: 100,
        width: size.map(|s| s.0),
        height: size.map(|s| s.1),
    }
}

#[test]
fn i_opens_the_pictures_and_draws_a_known_png_exactly_in_half_blocks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("pictures")).unwrap();
    // 2 × 2: red, green over blue, white.
    let mut img = image::RgbImage::new(2, 2);
    img.put_pixel(0, 0, image::Rgb([255, 0, 0]));
    img.put_pixel(1, 0, image::Rgb([0, 255, 0]));
    img.put_pixel(0, 1, image::Rgb([0, 0, 255]));
    img.put_pixel(1, 1, image::Rgb([255, 255, 255]));
    img.save(dir.path().join("pictures/run-1-dots.png"))
        .unwrap();
    std::fs::write(dir.path().join("pictures/run-2-plot.svg"), "<svg/>").unwrap();
    // The latest picture is shown first: the PNG, kept after the SVG.
    let recs = with_pictures(&[
        picture("plot.svg", "pictures/run-2-plot.svg", "svg", None),
        picture("dots.png", "pictures/run-1-dots.png", "png", Some((2, 2))),
    ]);
    let tape = codeloop_session::TapeContents {
        records: recs,
        truncated_tail: None,
        skipped: Vec::new(),
    };
    let theme = Theme::load("dark", dir.path()).unwrap();
    let mut app = App::review(tape, info(), theme);
    app.set_session_dir(dir.path().to_path_buf());
    let actions = app.update(key(KeyCode::Char('I')));
    let [Action::ReadPicture(path)] = &actions[..] else {
        panic!("{actions:?}");
    };
    assert_eq!(path, &dir.path().join("pictures/run-1-dots.png"));
    // What the event loop does off the UI thread.
    let decoded = codeloop_tui::picture::decode(path).map(std::sync::Arc::new);
    app.update(Msg::PictureRead {
        path: path.clone(),
        result: decoded,
    });
    let mut t = terminal(60, 20);
    codeloop_tui::event_loop::draw_once(&mut t, &mut app).unwrap();
    let buf = t.backend().buffer().clone();
    let text = t.backend().to_string();
    assert!(
        text.contains("Pictures 2/2 · dots.png (PNG, 2×2, 1 KiB)"),
        "{text}"
    );
    let blocks: Vec<(u16, u16)> = (0..20)
        .flat_map(|y| (0..60).map(move |x| (x, y)))
        .filter(|&(x, y)| buf[(x, y)].symbol() == "▀")
        .collect();
    assert_eq!(blocks.len(), 2, "{text}");
    let (x, y) = blocks[0];
    assert_eq!(blocks[1], (x + 1, y));
    assert_eq!(buf[(x, y)].fg, Color::Rgb(255, 0, 0));
    assert_eq!(buf[(x, y)].bg, Color::Rgb(0, 0, 255));
    assert_eq!(buf[(x + 1, y)].fg, Color::Rgb(0, 255, 0));
    assert_eq!(buf[(x + 1, y)].bg, Color::Rgb(255, 255, 255));

    // The one before, an SVG, is named with its path, not drawn.
    let actions = app.update(key(KeyCode::Left));
    let [Action::ReadPicture(svg)] = &actions[..] else {
        panic!("{actions:?}");
    };
    let decoded = codeloop_tui::picture::decode(svg).map(std::sync::Arc::new);
    app.update(Msg::PictureRead {
        path: svg.clone(),
        result: decoded,
    });
    let text = screen(&mut app, 100, 20);
    assert!(
        text.contains("Not drawn here: an SVG is not drawn in the terminal"),
        "{text}"
    );
    assert!(text.contains("run-2-plot.svg"), "{text}");
    app.update(key(KeyCode::Esc));
    assert!(app.pictures().is_none());
}

#[test]
fn without_pictures_i_says_how_a_program_gets_one() {
    let mut app = App::review(tape(), info(), theme());
    let actions = app.update(key(KeyCode::Char('I')));
    assert!(actions.is_empty());
    assert!(app.pictures().is_none());
    let text = screen(&mut app, 160, 30);
    assert!(text.contains("no pictures yet"), "{text}");
}
