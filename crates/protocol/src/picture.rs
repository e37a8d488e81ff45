//! A picture a program left (a chart it drew): what the tape keeps of it
//! (the file is copied into the session's folder), and its format and size
//! read from its header alone (no decoding).

use serde::{Deserialize, Serialize};

/// One image file a run left in its working directory, kept with the session.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Picture {
    /// The file's name as the program wrote it ("chart.png").
    pub name: String,
    /// Where the session keeps it, relative to the session's folder
    /// ("pictures/run-7-chart.png").
    pub path: String,
    /// "png", "jpeg", "gif" or "svg".
    pub format: String,
    pub size_bytes: u64,
    /// Pixels, where the header says (an SVG may not).
    #[serde(default)]
    pub width: Option<u32>,
    #[serde(default)]
    pub height: Option<u32>,
}

impl Picture {
    /// "chart.png (PNG, 640×480, 23 KiB)".
    pub fn describe(&self) -> String {
        let size = match (self.width, self.height) {
            (Some(w), Some(h)) => format!(", {w}×{h}"),
            _ => String::new(),
        };
        let kib = self.size_bytes.div_ceil(1024);
        format!(
            "{} ({}{size}, {kib} KiB)",
            self.name,
            self.format.to_uppercase()
        )
    }

    /// The MIME type, for a data: URI.
    pub fn mime(&self) -> &'static str {
        match self.format.as_str() {
            "png" => "image/png",
            "jpeg" => "image/jpeg",
            "gif" => "image/gif",
            "svg" => "image/svg+xml",
            _ => "application/octet-stream",
        }
    }
}

/// The most pixels a picture is decoded for (the workbench) or embedded
/// for (the HTML page): 4096 × 4096. A program can write a 16000 × 16000
/// PNG in 244 KiB; decoded, it takes 1 GiB.
pub const MAX_SHOWN_PIXELS: u64 = 4096 * 4096;

/// Why a picture of `width` × `height` pixels is not shown, and what to do;
/// None when it may be.
pub fn too_large_to_show(width: u32, height: u32) -> Option<String> {
    let pixels = u64::from(width) * u64::from(height);
    (pixels > MAX_SHOWN_PIXELS).then(|| {
        format!(
            "it is {width} × {height} pixels, too large to show here (at most {:.1} million pixels): open the file",
            MAX_SHOWN_PIXELS as f64 / 1e6
        )
    })
}

impl Picture {
    /// Why this picture is not shown, from the size its header states.
    pub fn too_large(&self) -> Option<String> {
        match (self.width, self.height) {
            (Some(w), Some(h)) if self.format != "svg" => too_large_to_show(w, h),
            _ => None,
        }
    }
}

/// The format and, where the header gives it, the size in pixels of an
/// image file's bytes; None when they are none of PNG, JPEG, GIF, SVG.
pub fn sniff(bytes: &[u8]) -> Option<(&'static str, Option<(u32, u32)>)> {
    let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        let size = (bytes.len() >= 24 && &bytes[12..16] == b"IHDR")
            .then(|| (be32(&bytes[16..20]), be32(&bytes[20..24])));
        return Some(("png", size));
    }
    if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        let size = (bytes.len() >= 10).then(|| {
            (
                u16::from_le_bytes([bytes[6], bytes[7]]) as u32,
                u16::from_le_bytes([bytes[8], bytes[9]]) as u32,
            )
        });
        return Some(("gif", size));
    }
    if bytes.starts_with(&[0xFF, 0xD8]) {
        return Some(("jpeg", jpeg_size(bytes)));
    }
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]);
    if let Some(at) = head.find("<svg") {
        return Some(("svg", svg_size(&head[at..])));
    }
    None
}

/// A JPEG's size from its first start-of-frame marker.
fn jpeg_size(b: &[u8]) -> Option<(u32, u32)> {
    let mut i = 2;
    while i + 9 < b.len() {
        if b[i] != 0xFF {
            i += 1;
            continue;
        }
        let marker = b[i + 1];
        if marker == 0xFF {
            i += 1;
            continue;
        }
        let len = u16::from_be_bytes([b[i + 2], b[i + 3]]) as usize;
        let is_sof = (0xC0..=0xCF).contains(&marker) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
        if is_sof {
            let h = u16::from_be_bytes([b[i + 5], b[i + 6]]) as u32;
            let w = u16::from_be_bytes([b[i + 7], b[i + 8]]) as u32;
            return Some((w, h));
        }
        i += 2 + len;
    }
    None
}

/// An SVG's `width` and `height` attributes in pixels (or plain numbers),
/// else its `viewBox`.
fn svg_size(tag: &str) -> Option<(u32, u32)> {
    let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
    let attr = |name: &str| -> Option<String> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        let rest = &tag[at..];
        Some(rest[..rest.find('"')?].to_string())
    };
    let px = |v: String| -> Option<u32> {
        let n = v.trim().trim_end_matches("px");
        n.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x > 0.0)
            .map(|x| x.round() as u32)
    };
    if let (Some(w), Some(h)) = (attr("width").and_then(px), attr("height").and_then(px)) {
        return Some((w, h));
    }
    let view: Vec<f64> = attr("viewBox")?
        .split([' ', ','])
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect();
    (view.len() == 4 && view[2] > 0.0 && view[3] > 0.0)
        .then(|| (view[2].round() as u32, view[3].round() as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_sizes_come_from_the_header() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend_from_slice(&640u32.to_be_bytes());
        png.extend_from_slice(&480u32.to_be_bytes());
        assert_eq!(sniff(&png), Some(("png", Some((640, 480)))));
        assert_eq!(
            sniff(b"GIF89a\x03\x00\x02\x00rest"),
            Some(("gif", Some((3, 2))))
        );
        let jpeg = [
            0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00,
            0x20, 0x00, 0x40, 0x03, 0, 0, 0, 0,
        ];
        assert_eq!(sniff(&jpeg), Some(("jpeg", Some((64, 32)))));
        assert_eq!(
            sniff(b"<?xml?><svg xmlns=\"x\" width=\"100px\" height=\"50\">"),
            Some(("svg", Some((100, 50))))
        );
        assert_eq!(
            sniff(b"<svg viewBox=\"0 0 300 150\"></svg>"),
            Some(("svg", Some((300, 150))))
        );
        assert_eq!(sniff(b"hello"), None);
    }

    #[test]
    fn a_picture_describes_itself() {
        let p = Picture {
            name: "chart.png".into(),
            format: "png".into(),
            size_bytes: 2048,
            width: Some(640),
            height: Some(480),
            ..Picture::default()
        };
        assert_eq!(p.describe(), "chart.png (PNG, 640×480, 2 KiB)");
    }
}
