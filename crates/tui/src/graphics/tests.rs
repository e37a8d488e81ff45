//! The encoders' output read back: what a frame writes for a picture is
//! parsed as the terminal would (kitty's APC chunks, iTerm2's OSC 1337,
//! the sixel DCS), decoded, and compared with the picture's pixels.

use std::sync::Arc;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

use super::shown::{self, KITTY_ID};
use super::{Graphics, Protocol};
use crate::picture::Pixels;

/// A 16 × 32 picture of four colours in quarters, opaque but for one
/// transparent pixel: at 8 × 16 cells it is 2 × 2 cells, grown 5 times
/// (each pixel 5 × 5) into the 20 × 10 cells of `BODY`: 10 × 10 cells.
fn quarters() -> Pixels {
    let mut rgba = Vec::new();
    for y in 0..32u32 {
        for x in 0..16u32 {
            rgba.push(match (x < 8, y < 16) {
                (true, true) => [255, 0, 0, 255],
                (false, true) => [0, 255, 0, 255],
                (true, false) => [0, 0, 255, 255],
                (false, false) => [255, 255, 255, 255],
            });
        }
    }
    rgba[0] = [255, 0, 0, 0];
    Pixels {
        width: 16,
        height: 32,
        rgba,
    }
}

const BG: [u8; 3] = [0, 0, 0];
const BODY: Rect = Rect::new(1, 1, 20, 10);
const K: u32 = 5;

fn graphics(protocol: Protocol) -> Graphics {
    Graphics {
        protocol,
        cell: Some((8, 16)),
        tmux: false,
        why: "test".into(),
    }
}

/// What the frame holds for the picture: the first cell's symbol (the
/// escape), and the shown picture's place.
fn emitted(protocol: Protocol, px: &Pixels) -> (String, Rect, Buffer) {
    let s = shown::encode(px, BODY, &graphics(protocol), BG).expect("encoded");
    let mut terminal = Terminal::new(TestBackend::new(24, 14)).unwrap();
    // A frame of `x` first: what the picture's frame leaves is what the
    // terminal is not told to overwrite.
    terminal
        .draw(|f| {
            let area = f.area();
            f.render_widget(
                ratatui::widgets::Paragraph::new("x".repeat(24 * 14))
                    .wrap(ratatui::widgets::Wrap { trim: false }),
                area,
            )
        })
        .unwrap();
    terminal.draw(|f| s.render(f)).unwrap();
    let buf = terminal.backend().buffer().clone();
    let first = buf[(s.at.x, s.at.y)].symbol().to_string();
    (first, s.at, buf)
}

type Buffer = ratatui::buffer::Buffer;

/// The picture as every protocol should draw it: over the background,
/// each pixel a `k` × `k` square.
fn expected(px: &Pixels, k: u32) -> Vec<[u8; 3]> {
    shown::grow(&shown::opaque(px, BG), k)
        .pixels()
        .map(|p| [p.0[0], p.0[1], p.0[2]])
        .collect()
}

fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        })
    };
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes() {
        if c == b'=' {
            break;
        }
        let v = value(c).unwrap_or_else(|| panic!("not base64: {:?}", c as char));
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

/// Kitty's APC commands in `text`: each one's keys and payload.
pub(crate) fn kitty_commands(text: &str) -> Vec<(String, String)> {
    text.split("\x1b_G")
        .skip(1)
        .map(|cmd| {
            let cmd = &cmd[..cmd.find("\x1b\\").expect("ST")];
            let (keys, payload) = cmd.split_once(';').expect("payload");
            (keys.to_string(), payload.to_string())
        })
        .collect()
}

/// The image a kitty transmission carries: its keys, and its pixels.
pub(crate) fn kitty_image(text: &str) -> (String, u32, u32, Vec<u8>) {
    let commands = kitty_commands(text);
    let (first, _) = commands.first().expect("a kitty command");
    let key = |k: &str| -> u32 {
        first
            .split(',')
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .expect(k)
            .parse()
            .unwrap()
    };
    let payload: String = commands.iter().map(|(_, p)| p.as_str()).collect();
    for (i, (keys, _)) in commands.iter().enumerate() {
        let more = if i + 1 < commands.len() { "m=1" } else { "m=0" };
        assert!(keys.contains(more), "chunk {i}: {keys}");
    }
    (first.clone(), key("s"), key("v"), base64(&payload))
}

#[test]
fn kitty_transmits_the_pictures_pixels_in_base64_chunks_and_places_it_with_placeholders() {
    let px = quarters();
    let (first, at, buf) = emitted(Protocol::Kitty, &px);
    assert_eq!((at.width, at.height), (10, 10));
    let (keys, w, h, bytes) = kitty_image(&first);
    assert!(keys.contains("a=T") && keys.contains("U=1"), "{keys}");
    assert!(keys.contains(&format!("i={KITTY_ID}")), "{keys}");
    assert!(keys.contains("f=32"), "RGBA: {keys}");
    assert_eq!((w, h), (16 * K, 32 * K));
    let got: Vec<[u8; 3]> = bytes.chunks(4).map(|p| [p[0], p[1], p[2]]).collect();
    assert_eq!(got, expected(&px, K));
    // Every cell of the picture is a placeholder, in the id's colour.
    let [_, r, g, b] = KITTY_ID.to_be_bytes();
    for y in at.y..at.bottom() {
        for x in at.x..at.right() {
            let cell = &buf[(x, y)];
            assert!(cell.symbol().contains('\u{10EEEE}'), "({x},{y})");
            assert_eq!(cell.fg, ratatui::style::Color::Rgb(r, g, b));
        }
    }
}

#[test]
fn a_large_picture_is_sent_in_chunks_of_at_most_4096_characters() {
    let px = Pixels {
        width: 64,
        height: 64,
        rgba: vec![[10, 20, 30, 255]; 64 * 64],
    };
    let (first, ..) = emitted(Protocol::Kitty, &px);
    let commands = kitty_commands(&first);
    assert!(commands.len() > 1);
    assert!(commands.iter().all(|(_, p)| p.len() <= 4096));
    let (_, w, h, bytes) = kitty_image(&first);
    assert_eq!(bytes.len() as u32, w * h * 4);
    assert!(bytes.chunks(4).all(|p| p == [10, 20, 30, 255]));
}

/// iTerm2's OSC 1337 in `text`: its arguments and the file it carries.
pub(crate) fn iterm2_file(text: &str) -> (String, Vec<u8>) {
    let start = text.find("\x1b]1337;File=").expect("OSC 1337");
    let rest = &text[start + "\x1b]1337;File=".len()..];
    let end = rest.find('\x07').expect("BEL");
    let (args, data) = rest[..end].split_once(':').expect("args:data");
    (args.to_string(), base64(data))
}

#[test]
fn iterm2_sends_the_picture_as_an_inline_png() {
    let px = quarters();
    let (first, at, buf) = emitted(Protocol::Iterm2, &px);
    let (args, png) = iterm2_file(&first);
    assert!(args.contains("inline=1"), "{args}");
    assert!(args.contains(&format!("size={}", png.len())), "{args}");
    let img = image::load_from_memory_with_format(&png, image::ImageFormat::Png)
        .unwrap()
        .into_rgb8();
    assert_eq!(img.dimensions(), (16 * K, 32 * K));
    let got: Vec<[u8; 3]> = img.pixels().map(|p| p.0).collect();
    assert_eq!(got, expected(&px, K));
    // The other cells of its area are left to the terminal's image (the
    // frame writes nothing there), and the cells around it are cleared.
    for y in at.y..at.bottom() {
        for x in at.x..at.right() {
            if (x, y) != (at.x, at.y) {
                assert_eq!(buf[(x, y)].symbol(), "x", "({x},{y})");
            }
        }
    }
    assert_eq!(buf[(at.right(), at.y)].symbol(), " ");
}

/// A small sixel decoder: the pixels a DCS q ... ST paints, as RGB, with
/// the colour registers it defines (`#n;2;r;g;b`, in percent).
pub(crate) fn decode_sixel(text: &str) -> (u32, u32, Vec<Option<[u8; 3]>>) {
    let start = text.find("\x1bP").expect("DCS");
    let body = &text[start + 2..];
    let q = body.find('q').expect("q");
    let data = &body[q + 1..body.find("\x1b\\").expect("ST")];
    let bytes = data.as_bytes();
    let mut registers = std::collections::HashMap::new();
    let mut pixels: std::collections::HashMap<(u32, u32), [u8; 3]> = Default::default();
    let (mut x, mut band, mut colour) = (0u32, 0u32, 0u32);
    let (mut width, mut height) = (0u32, 0u32);
    let mut i = 0;
    let number = |i: &mut usize| -> u32 {
        let s = *i;
        while *i < bytes.len() && bytes[*i].is_ascii_digit() {
            *i += 1;
        }
        data[s..*i].parse().unwrap_or(0)
    };
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                let mut nums = Vec::new();
                loop {
                    nums.push(number(&mut i));
                    if i < bytes.len() && bytes[i] == b';' {
                        i += 1;
                    } else {
                        break;
                    }
                }
                if let [_, _, w, h] = nums[..] {
                    (width, height) = (w, h);
                }
            }
            b'#' => {
                i += 1;
                let n = number(&mut i);
                if i < bytes.len() && bytes[i] == b';' {
                    let mut nums = Vec::new();
                    while i < bytes.len() && bytes[i] == b';' {
                        i += 1;
                        nums.push(number(&mut i));
                    }
                    assert_eq!(nums[0], 2, "RGB colour space");
                    let pct = |v: u32| ((v * 255 + 50) / 100) as u8;
                    registers.insert(n, [pct(nums[1]), pct(nums[2]), pct(nums[3])]);
                }
                colour = n;
            }
            b'!' => {
                i += 1;
                let count = number(&mut i);
                let c = bytes[i];
                for _ in 0..count {
                    paint(&mut pixels, &registers, colour, x, band, c);
                    x += 1;
                }
                i += 1;
            }
            b'$' => {
                x = 0;
                i += 1;
            }
            b'-' => {
                x = 0;
                band += 1;
                i += 1;
            }
            c @ b'?'..=b'~' => {
                paint(&mut pixels, &registers, colour, x, band, c);
                x += 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    let grid = (0..height)
        .flat_map(|y| (0..width).map(move |x| (x, y)))
        .map(|p| pixels.get(&p).copied())
        .collect();
    (width, height, grid)
}

fn paint(
    pixels: &mut std::collections::HashMap<(u32, u32), [u8; 3]>,
    registers: &std::collections::HashMap<u32, [u8; 3]>,
    colour: u32,
    x: u32,
    band: u32,
    c: u8,
) {
    let bits = c - b'?';
    for bit in 0..6 {
        if bits & (1 << bit) != 0 {
            let rgb = *registers.get(&colour).expect("colour defined before use");
            pixels.insert((x, band * 6 + bit), rgb);
        }
    }
}

#[test]
fn sixel_paints_the_picture_with_its_colours() {
    let px = quarters();
    let (first, at, _) = emitted(Protocol::Sixel, &px);
    assert_eq!((at.width, at.height), (10, 10));
    let (w, h, grid) = decode_sixel(&first);
    assert_eq!((w, h), (16 * K, 32 * K));
    let want = expected(&px, K);
    for (i, (got, want)) in grid.iter().zip(&want).enumerate() {
        let got = got.unwrap_or_else(|| panic!("pixel {i} unpainted"));
        for c in 0..3 {
            assert!(
                got[c].abs_diff(want[c]) <= 3,
                "pixel {i}: {got:?} for {want:?}"
            );
        }
    }
}

#[test]
fn a_pane_too_small_or_half_blocks_chosen_is_not_encoded() {
    let px = quarters();
    let g = graphics(Protocol::Kitty);
    assert!(shown::encode(&px, Rect::new(0, 0, 4, 10), &g, BG).is_none());
    assert!(shown::encode(&px, Rect::new(0, 0, 20, 2), &g, BG).is_none());
    let half = Graphics::halfblocks("test");
    assert!(shown::encode(&px, Rect::new(0, 0, 20, 10), &half, BG).is_none());
    let no_cell = Graphics { cell: None, ..g };
    assert!(shown::encode(&px, Rect::new(0, 0, 20, 10), &no_cell, BG).is_none());
}

#[test]
fn a_small_picture_grows_by_a_whole_number_within_the_body_and_the_pixel_cap() {
    let cell = (8, 16);
    assert_eq!(shown::growth(16, 32, BODY, cell, shown::MAX_PIXELS), K);
    // 240 × 120 in 88 × 23 cells of 10 × 20: 3 times (880 / 240, 460 / 120).
    let body = Rect::new(0, 0, 88, 23);
    assert_eq!(
        shown::growth(240, 120, body, (10, 20), shown::MAX_PIXELS),
        3
    );
    // A picture as large as the body, or larger: not grown.
    assert_eq!(
        shown::growth(880, 460, body, (10, 20), shown::MAX_PIXELS),
        1
    );
    assert_eq!(
        shown::growth(4000, 100, body, (10, 20), shown::MAX_PIXELS),
        1
    );
    // The cap: 480 × 360 in a huge body grows twice (3 times is 1.5 M pixels).
    let huge = Rect::new(0, 0, 500, 200);
    assert_eq!(
        shown::growth(480, 360, huge, (10, 20), shown::MAX_PIXELS),
        2
    );
    assert_eq!(
        shown::growth(480, 360, huge, (10, 20), shown::MAX_PIXELS_SIXEL),
        1
    );
    let img = image::RgbaImage::from_fn(2, 1, |x, _| image::Rgba([x as u8, 0, 0, 255]));
    let grown = shown::grow(&img, 2);
    assert_eq!(grown.dimensions(), (4, 2));
    assert_eq!(grown.get_pixel(1, 1).0[0], 0);
    assert_eq!(grown.get_pixel(2, 0).0[0], 1);
}

#[test]
fn a_larger_picture_is_fitted_into_the_body_with_its_proportions() {
    let px = Pixels {
        width: 400,
        height: 100,
        rgba: vec![[200, 100, 0, 255]; 400 * 100],
    };
    let body = Rect::new(0, 0, 20, 10);
    let s = shown::encode(&px, body, &graphics(Protocol::Kitty), BG).unwrap();
    // 20 cells of 8 pixels: 160 × 40 pixels, 3 rows of 16.
    assert_eq!((s.at.width, s.at.height), (20, 3));
    assert!(s.at.y > body.y, "centred: {:?}", s.at);
    let _ = Arc::new(px);
}

#[test]
fn inside_tmux_each_escape_is_wrapped_for_its_passthrough() {
    let px = quarters();
    let g = Graphics {
        tmux: true,
        ..graphics(Protocol::Kitty)
    };
    let s = shown::encode(&px, Rect::new(0, 0, 20, 10), &g, BG).unwrap();
    let mut terminal = Terminal::new(TestBackend::new(24, 14)).unwrap();
    terminal.draw(|f| s.render(f)).unwrap();
    let first = terminal.backend().buffer()[(s.at.x, s.at.y)]
        .symbol()
        .to_string();
    assert!(
        first.starts_with("\x1bPtmux;\x1b\x1b_G"),
        "{:?}",
        &first[..20]
    );
}
