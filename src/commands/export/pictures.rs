//! The pictures of a session in its HTML page: each image a run left (kept
//! in the session's `pictures/` folder) embedded as a `data:` URI, so the
//! page stays one self-contained file; the latest of each name is drawn,
//! the earlier ones listed. Bounded: past `EMBED_CAP` bytes in all, a
//! picture is listed with its path instead of drawn.

use std::fmt::Write;
use std::path::Path;

use super::html::esc;
use crate::session::state::RunPicture;
use crate::session::{State, session_fs};

/// Bytes of pictures embedded in one page at most.
const EMBED_CAP: usize = 24 << 20;

/// The section, empty when the session has no pictures. `source` is the
/// tape's path; the pictures are beside it.
pub(crate) fn section(state: &State, source: &str) -> String {
    if state.pictures.is_empty() {
        return String::new();
    }
    let dir = Path::new(source).parent();
    let mut out = String::from("<section class=\"pictures\" id=\"pictures\">\n<h2>Pictures</h2>\n");
    let mut embedded = 0usize;
    // The latest picture of each name, in the order names first appeared.
    let mut names: Vec<&str> = Vec::new();
    for RunPicture { picture: p, .. } in &state.pictures {
        if !names.contains(&p.name.as_str()) {
            names.push(&p.name);
        }
    }
    for name in names {
        let versions: Vec<&RunPicture> = state
            .pictures
            .iter()
            .filter(|p| p.picture.name == name)
            .collect();
        let Some(RunPicture {
            run_id: run,
            picture: latest,
        }) = versions.last()
        else {
            continue;
        };
        // Read inside the session folder only, never through a link (a
        // page is sent to others: no file of the reader's may go in it).
        let bytes = match dir {
            Some(d) => {
                session_fs::read_inside(d, Path::new(&latest.path), Some(EMBED_CAP as u64 + 1))
                    .map_err(|e| match e.kind() {
                        std::io::ErrorKind::NotFound => {
                            "the file is not beside the tape any more".to_string()
                        }
                        _ => e.to_string(),
                    })
            }
            None => Err("the file is not beside the tape any more".to_string()),
        };
        let _ = write!(
            out,
            "<figure>\n<figcaption>{}</figcaption>\n",
            esc(&crate::session::story::picture(*run, latest).text),
        );
        // A browser would decode it whole: 16000 × 16000 pixels is 1 GiB.
        let too_large = latest.too_large();
        match bytes {
            Ok(_) if too_large.is_some() => {
                let why = too_large.unwrap_or_default();
                let _ = writeln!(out, "<p class=\"none\">Not drawn here: {}.</p>", esc(&why));
            }
            Ok(b) if embedded + b.len() <= EMBED_CAP => {
                embedded += b.len();
                let _ = writeln!(
                    out,
                    "<img alt=\"{}\" src=\"data:{};base64,{}\"{}>",
                    esc(&latest.name),
                    latest.mime(),
                    base64(&b),
                    match (latest.width, latest.height) {
                        (Some(w), Some(h)) => format!(" width=\"{w}\" height=\"{h}\""),
                        _ => String::new(),
                    }
                );
            }
            Ok(_) => out.push_str(
                "<p class=\"none\">Not drawn here: the page holds enough pictures already; open the file.</p>\n",
            ),
            Err(why) => {
                let _ = writeln!(out, "<p class=\"none\">Not drawn: {}.</p>", esc(&why));
            }
        }
        if versions.len() > 1 {
            let earlier: Vec<String> = versions[..versions.len() - 1]
                .iter()
                .map(|p| format!("{} ({})", esc(&p.picture.path), esc(&run_label(p.run_id))))
                .collect();
            let _ = writeln!(
                out,
                "<p class=\"none\">Earlier versions: {}</p>",
                earlier.join(", ")
            );
        }
        out.push_str("</figure>\n");
    }
    out.push_str("</section>\n");
    out
}

fn run_label(run: Option<u64>) -> String {
    match run {
        Some(id) => format!("run {id}"),
        None => "the program's run".to_string(),
    }
}

/// Standard base64 with padding.
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_the_standard_one() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(&[0xff, 0xfe, 0x00]), "//4A");
    }
}
