//! Pictures drawn in the terminal with Unicode half-blocks (`▀`: the upper
//! half in the foreground colour, the lower in the background), which every
//! terminal with true colour shows, tmux included: the fallback where the
//! terminal's own graphics (kitty, sixel, iTerm2: `graphics/`) cannot be
//! used.
//!
//! A file is decoded off the UI thread (`decode`, PNG, JPEG and GIF by the
//! `image` crate; an SVG is not drawn, only named with its path), shrunk
//! once to at most `MAX_SIDE` pixels a side; each frame then only samples
//! those pixels into cells (`cells`), which does no I/O. A picture whose
//! header states more than `MAX_SHOWN_PIXELS` is not decoded (said with its
//! size, and to open the file), and the decoder is held to limits of side
//! and allocation whatever the file says after its header.

use std::path::Path;

/// The decoded picture is kept at most this many pixels a side.
pub(crate) const MAX_SIDE: u32 = 480;
/// Larger files are not decoded (the sandbox keeps none bigger).
const MAX_FILE: u64 = 8 << 20;

/// A picture's pixels, RGBA, row by row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pixels {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) rgba: Vec<[u8; 4]>,
}

impl Pixels {
    fn at(&self, x: u32, y: u32) -> [u8; 4] {
        self.rgba[(y * self.width + x) as usize]
    }
}

/// One cell: the colour of its upper half and of its lower half.
pub(crate) type Cell = ([u8; 3], [u8; 3]);

/// Read and decode an image file, shrunk to at most `MAX_SIDE` a side.
/// The error says why it cannot be drawn.
pub fn decode(path: &Path) -> Result<Pixels, String> {
    let is_svg = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"));
    if is_svg {
        return Err("an SVG is not drawn in the terminal: open the file".into());
    }
    // Never through a link planted in a session folder, never a FIFO.
    let file = codeloop_session::session_fs::open_no_link(path)
        .map_err(|e| format!("cannot read it: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?;
    if meta.len() > MAX_FILE {
        return Err("too large to draw here: open the file".into());
    }
    let mut reader = image::ImageReader::new(std::io::BufReader::new(file))
        .with_guessed_format()
        .map_err(|e| format!("cannot read it: {e}"))?;
    // The size its header states is checked before a pixel is decoded;
    // the decoder is held to the same bounds (and to what one decoded
    // picture may allocate), whatever the file says later.
    let side = MAX_SHOWN_SIDE;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(side);
    limits.max_image_height = Some(side);
    limits.max_alloc = Some(MAX_DECODED_BYTES);
    reader.limits(limits);
    let decoder = reader.into_decoder().map_err(|e| match e {
        image::ImageError::Limits(_) => too_large_words(path),
        e => format!("cannot decode it: {e}"),
    })?;
    let (w, h) = image::ImageDecoder::dimensions(&decoder);
    if let Some(why) = codeloop_protocol::picture::too_large_to_show(w, h) {
        return Err(why);
    }
    let img = image::DynamicImage::from_decoder(decoder).map_err(|e| match e {
        image::ImageError::Limits(_) => {
            format!("it is {w} × {h} pixels, more than is decoded here: open the file")
        }
        e => format!("cannot decode it: {e}"),
    })?;
    let img = img.into_rgba8();
    let (w, h) = img.dimensions();
    if w == 0 || h == 0 {
        return Err("it has no pixels".into());
    }
    let scale = (MAX_SIDE as f64 / w.max(h) as f64).min(1.0);
    let (tw, th) = (
        ((w as f64 * scale).round() as u32).max(1),
        ((h as f64 * scale).round() as u32).max(1),
    );
    // Shrunk straight from the decoded image: no second copy of it.
    Ok(resample_from(w, h, |x, y| img.get_pixel(x, y).0, tw, th))
}

/// A picture's side, at most, and what decoding one may allocate.
const MAX_SHOWN_SIDE: u32 = 16_384;
const MAX_DECODED_BYTES: u64 = 96 << 20;

/// Words for a picture the decoder's limits refused before its size was
/// known (a side longer than `MAX_SHOWN_SIDE`).
fn too_large_words(path: &Path) -> String {
    let mut bytes = Vec::new();
    match codeloop_session::session_fs::open_no_link(path)
        .and_then(|mut f| std::io::Read::read_to_end(&mut f, &mut bytes))
        .ok()
        .map(|_| bytes)
        .and_then(|b| codeloop_protocol::picture::sniff(&b))
        .and_then(|(_, size)| size)
    {
        Some((w, h)) => format!("it is {w} × {h} pixels, too large to show here: open the file"),
        None => "it is too large to show here: open the file".into(),
    }
}

/// `src` at `tw` × `th`: each target pixel the average of the source
/// pixels under it (or the one it falls in, when growing).
pub(crate) fn resample(src: &Pixels, tw: u32, th: u32) -> Pixels {
    resample_from(src.width, src.height, |x, y| src.at(x, y), tw, th)
}

/// A `width` × `height` picture whose pixel at (x, y) is `at(x, y)`,
/// resampled to `tw` × `th`.
fn resample_from(
    width: u32,
    height: u32,
    at: impl Fn(u32, u32) -> [u8; 4],
    tw: u32,
    th: u32,
) -> Pixels {
    let mut rgba = Vec::with_capacity((tw * th) as usize);
    for y in 0..th {
        let (y0, y1) = span(y, th, height);
        for x in 0..tw {
            let (x0, x1) = span(x, tw, width);
            let mut sum = [0u64; 4];
            for sy in y0..y1 {
                for sx in x0..x1 {
                    let p = at(sx, sy);
                    for c in 0..4 {
                        sum[c] += u64::from(p[c]);
                    }
                }
            }
            let n = u64::from((x1 - x0) * (y1 - y0)).max(1);
            rgba.push([
                (sum[0] / n) as u8,
                (sum[1] / n) as u8,
                (sum[2] / n) as u8,
                (sum[3] / n) as u8,
            ]);
        }
    }
    Pixels {
        width: tw,
        height: th,
        rgba,
    }
}

/// The source pixels [start, end) under target pixel `i` of `target`.
fn span(i: u32, target: u32, source: u32) -> (u32, u32) {
    let start = (u64::from(i) * u64::from(source) / u64::from(target)) as u32;
    let end = (u64::from(i + 1) * u64::from(source)).div_ceil(u64::from(target)) as u32;
    (start.min(source - 1), end.clamp(start + 1, source))
}

/// The picture as rows of half-block cells, fitted into `cols` × `rows`
/// cells (two pixels a cell, one above the other) with its proportions
/// kept; transparent pixels show `background`. Never larger than the
/// picture itself (a 4 × 2 image is 4 cells by 1).
pub(crate) fn cells(px: &Pixels, cols: u16, rows: u16, background: [u8; 3]) -> Vec<Vec<Cell>> {
    if cols == 0 || rows == 0 {
        return Vec::new();
    }
    let (max_w, max_h) = (f64::from(cols), f64::from(rows) * 2.0);
    let scale = (max_w / f64::from(px.width))
        .min(max_h / f64::from(px.height))
        .min(1.0);
    let tw = ((f64::from(px.width) * scale).round() as u32).clamp(1, u32::from(cols));
    let th = ((f64::from(px.height) * scale).round() as u32).clamp(1, u32::from(rows) * 2);
    let fitted = if (tw, th) == (px.width, px.height) {
        px.clone()
    } else {
        resample(px, tw, th)
    };
    let over = |p: [u8; 4]| -> [u8; 3] {
        let a = u32::from(p[3]);
        let mix = |c: u8, b: u8| ((u32::from(c) * a + u32::from(b) * (255 - a)) / 255) as u8;
        [
            mix(p[0], background[0]),
            mix(p[1], background[1]),
            mix(p[2], background[2]),
        ]
    };
    (0..th.div_ceil(2))
        .map(|row| {
            (0..tw)
                .map(|x| {
                    let top = over(fitted.at(x, row * 2));
                    let bottom = if row * 2 + 1 < th {
                        over(fitted.at(x, row * 2 + 1))
                    } else {
                        background
                    };
                    (top, bottom)
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn px(width: u32, height: u32, colours: &[[u8; 4]]) -> Pixels {
        Pixels {
            width,
            height,
            rgba: colours.to_vec(),
        }
    }

    const R: [u8; 4] = [255, 0, 0, 255];
    const G: [u8; 4] = [0, 255, 0, 255];
    const B: [u8; 4] = [0, 0, 255, 255];
    const W: [u8; 4] = [255, 255, 255, 255];
    const CLEAR: [u8; 4] = [0, 0, 0, 0];

    #[test]
    fn a_small_picture_is_drawn_exactly_two_pixels_a_cell() {
        // 2 × 3: the last row has no pixel below it, so the background.
        let p = px(2, 3, &[R, G, B, W, G, CLEAR]);
        let bg = [10, 20, 30];
        let cells = cells(&p, 80, 24, bg);
        assert_eq!(
            cells,
            vec![
                vec![([255, 0, 0], [0, 0, 255]), ([0, 255, 0], [255, 255, 255])],
                vec![([0, 255, 0], bg), (bg, bg)],
            ]
        );
    }

    #[test]
    fn a_large_picture_is_fitted_with_its_proportions() {
        // 8 × 4, left half red, right half blue, into 4 columns: 4 × 2 pixels, one row.
        let mut colours = Vec::new();
        for _ in 0..4 {
            colours.extend([R, R, R, R, B, B, B, B]);
        }
        let cells = cells(&px(8, 4, &colours), 4, 10, [0, 0, 0]);
        assert_eq!(cells.len(), 1);
        assert_eq!(
            cells[0],
            vec![
                ([255, 0, 0], [255, 0, 0]),
                ([255, 0, 0], [255, 0, 0]),
                ([0, 0, 255], [0, 0, 255]),
                ([0, 0, 255], [0, 0, 255]),
            ]
        );
    }

    #[test]
    fn shrinking_averages_the_pixels_under_each() {
        let p = px(2, 1, &[[0, 0, 0, 255], [200, 100, 50, 255]]);
        assert_eq!(resample(&p, 1, 1).rgba, vec![[100, 50, 25, 255]]);
    }

    #[test]
    fn a_png_file_is_decoded_and_an_svg_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.png");
        let mut img = image::RgbaImage::new(3, 2);
        img.put_pixel(0, 0, image::Rgba(R));
        img.put_pixel(2, 1, image::Rgba(B));
        img.save(&path).unwrap();
        let p = decode(&path).unwrap();
        assert_eq!((p.width, p.height), (3, 2));
        assert_eq!(p.rgba[0], R);
        assert_eq!(p.rgba[5], B);
        std::fs::write(dir.path().join("b.svg"), "<svg/>").unwrap();
        assert!(
            decode(&dir.path().join("b.svg"))
                .unwrap_err()
                .contains("SVG")
        );
        std::fs::write(dir.path().join("c.png"), "not a png").unwrap();
        assert!(decode(&dir.path().join("c.png")).is_err());
    }

    /// A valid PNG of `w` × `h` grey pixels, all black, written a row at a
    /// time (a 16000 × 16000 one is 244 KiB).
    fn black_png(w: u32, h: u32) -> Vec<u8> {
        use std::io::Write;
        let chunk = |out: &mut Vec<u8>, kind: &[u8], data: &[u8]| {
            out.extend_from_slice(&(data.len() as u32).to_be_bytes());
            let mut crc = flate2::Crc::new();
            crc.update(kind);
            crc.update(data);
            out.extend_from_slice(kind);
            out.extend_from_slice(data);
            out.extend_from_slice(&crc.sum().to_be_bytes());
        };
        let mut ihdr = w.to_be_bytes().to_vec();
        ihdr.extend_from_slice(&h.to_be_bytes());
        ihdr.extend_from_slice(&[8, 0, 0, 0, 0]);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        let row = vec![0u8; w as usize + 1];
        for _ in 0..h {
            z.write_all(&row).unwrap();
        }
        let data = z.finish().unwrap();
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        chunk(&mut png, b"IHDR", &ihdr);
        chunk(&mut png, b"IDAT", &data);
        chunk(&mut png, b"IEND", &[]);
        png
    }

    #[test]
    fn a_picture_too_large_to_show_is_said_so_and_not_decoded() {
        // A program's 16000 × 16000 PNG of 244 KiB: 1 GiB once decoded.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.png");
        let png = black_png(16_000, 16_000);
        assert!(png.len() < 300 << 10, "{}", png.len());
        std::fs::write(&path, &png).unwrap();
        let why = decode(&path).unwrap_err();
        assert!(why.contains("16000 × 16000 pixels"), "{why}");
        assert!(why.contains("open the file"), "{why}");
        // Past the decoder's side limit, the size is said all the same.
        let path = dir.path().join("wide.png");
        std::fs::write(&path, black_png(40_000, 1)).unwrap();
        let why = decode(&path).unwrap_err();
        assert!(why.contains("40000 × 1 pixels"), "{why}");
        // One that may be shown still is.
        let path = dir.path().join("fine.png");
        std::fs::write(&path, black_png(1000, 600)).unwrap();
        let p = decode(&path).unwrap();
        assert_eq!((p.width, p.height), (480, 288));
    }
}
