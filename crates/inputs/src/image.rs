//! Images: the format and width × height from the header (PNG, JPEG, GIF,
//! BMP, WebP).

use std::io;

use crate::Image;
use crate::read::Source;

/// How far into a JPEG its frame header is looked for (EXIF and ICC
/// segments come first and may be large).
const JPEG_SCAN: u64 = 4 << 20;

fn be16(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_be_bytes([
        *b.get(at)?,
        *b.get(at + 1)?,
    ])))
}
fn le16(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_le_bytes([
        *b.get(at)?,
        *b.get(at + 1)?,
    ])))
}
fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn le32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn le24(b: &[u8], at: usize) -> Option<u32> {
    Some(
        u32::from(*b.get(at)?) | u32::from(*b.get(at + 1)?) << 8 | u32::from(*b.get(at + 2)?) << 16,
    )
}

fn image(format: &str, size: Option<(u32, u32)>) -> Image {
    Image {
        format: format.into(),
        width: size.map(|s| s.0),
        height: size.map(|s| s.1),
    }
}

pub(crate) fn describe(src: &Source, head: &[u8]) -> io::Result<Option<Image>> {
    let h = head;
    if h.starts_with(b"\x89PNG\r\n\x1a\n") {
        let size = (h.get(12..16) == Some(b"IHDR"))
            .then(|| Some((be32(h, 16)?, be32(h, 20)?)))
            .flatten();
        return Ok(Some(image("PNG", size)));
    }
    if h.starts_with(b"GIF87a") || h.starts_with(b"GIF89a") {
        let size = le16(h, 6).zip(le16(h, 8));
        return Ok(Some(image("GIF", size)));
    }
    if h.starts_with(b"BM") && h.len() >= 26 {
        let dib = le32(h, 14).unwrap_or(0);
        let size = if dib == 12 {
            le16(h, 18).zip(le16(h, 20))
        } else if dib >= 40 {
            le32(h, 18)
                .zip(le32(h, 22))
                .map(|(w, ht)| ((w as i32).unsigned_abs(), (ht as i32).unsigned_abs()))
        } else {
            None
        };
        if size.is_some() {
            return Ok(Some(image("BMP", size)));
        }
    }
    if h.starts_with(b"RIFF") && h.get(8..12) == Some(b"WEBP") {
        let size = match h.get(12..16) {
            Some(b"VP8 ") => le16(h, 26)
                .zip(le16(h, 28))
                .map(|(w, ht)| (w & 0x3fff, ht & 0x3fff)),
            Some(b"VP8L") => le32(h, 21).map(|b| (1 + (b & 0x3fff), 1 + ((b >> 14) & 0x3fff))),
            Some(b"VP8X") => le24(h, 24).zip(le24(h, 27)).map(|(w, ht)| (w + 1, ht + 1)),
            _ => None,
        };
        return Ok(Some(image("WebP", size)));
    }
    if h.starts_with(&[0xFF, 0xD8, 0xFF]) {
        return Ok(Some(image("JPEG", jpeg_size(src, h)?)));
    }
    Ok(None)
}

/// The size in the first frame header (SOFn), walking the segments.
fn jpeg_size(src: &Source, head: &[u8]) -> io::Result<Option<(u32, u32)>> {
    let mut at: u64 = 2;
    let mut window = head.to_vec();
    let mut window_at: u64 = 0;
    while at < JPEG_SCAN.min(src.size) {
        // Keep the next few bytes in the window.
        if at + 16 > window_at + window.len() as u64 {
            window_at = at;
            window = src.window(at, 64 << 10)?;
            if window.len() < 4 {
                return Ok(None);
            }
        }
        let i = (at - window_at) as usize;
        if window[i] != 0xFF {
            return Ok(None);
        }
        let marker = window[i + 1];
        match marker {
            0xFF => {
                at += 1;
                continue;
            }
            0xD8 | 0x01 | 0xD0..=0xD7 => {
                at += 2;
                continue;
            }
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                let h = be16(&window, i + 5);
                let w = be16(&window, i + 7);
                return Ok(w.zip(h));
            }
            0xD9 | 0xDA => return Ok(None),
            _ => {
                let Some(len) = be16(&window, i + 2) else {
                    return Ok(None);
                };
                at += 2 + u64::from(len);
            }
        }
    }
    Ok(None)
}
