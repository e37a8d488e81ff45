//! Pictures a program leaves: the image files (PNG, JPEG, GIF, SVG) in the
//! top level of its working directory are read back after the run, so a
//! session keeps a chart the program drew. Bounded: at most `MAX_IMAGES`
//! files, each at most `IMAGE_CAP` bytes (a bigger one is left out);
//! regular files only, never through a symlink. An input file copied in
//! (`RunSpec::inputs`) and left as it was is not the program's picture.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The most image files kept of one run.
pub(crate) const MAX_IMAGES: usize = 8;
/// The largest image file kept, in bytes.
pub(crate) const IMAGE_CAP: u64 = 8 << 20;

/// Whether a file name names an image codeloop keeps, by its extension.
pub(crate) fn is_image_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".png", ".jpg", ".jpeg", ".gif", ".svg"]
        .iter()
        .any(|ext| lower.ends_with(ext) && lower.len() > ext.len())
}

/// The image files at the top of `dir`: names, sorted, at most `MAX_IMAGES`.
pub(crate) fn image_names(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| is_image_name(n) && !n.starts_with('.'))
        .collect();
    names.sort();
    names.truncate(MAX_IMAGES);
    names
}

/// Read the image files at the top of `dir` (never through a symlink), but
/// those of `inputs` the run left as they came in.
pub(crate) fn read_images(dir: &Path, inputs: &[PathBuf]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for name in image_names(dir) {
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(dir.join(&name))
        else {
            continue;
        };
        let Ok(meta) = file.metadata() else { continue };
        if !meta.is_file() || meta.len() > IMAGE_CAP {
            continue;
        }
        let mut data = Vec::new();
        if file.take(IMAGE_CAP).read_to_end(&mut data).is_ok() && !brought_in(&name, &data, inputs)
        {
            out.push((name, data));
        }
    }
    out
}

/// Whether `name` holding `data` is one of `inputs` as it came in.
fn brought_in(name: &str, data: &[u8], inputs: &[PathBuf]) -> bool {
    inputs.iter().any(|input| {
        input.file_name().is_some_and(|n| n == name)
            && std::fs::metadata(input).is_ok_and(|m| m.len() == data.len() as u64)
            && std::fs::read(input).is_ok_and(|original| original == data)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_named_by_their_extension() {
        for n in ["chart.png", "a.JPG", "b.jpeg", "c.gif", "d.svg"] {
            assert!(is_image_name(n), "{n}");
        }
        for n in ["png", "x.py", "data.csv", ".png"] {
            assert!(!is_image_name(n), "{n}");
        }
    }

    #[test]
    fn only_regular_image_files_at_the_top_are_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.png"), b"png").unwrap();
        std::fs::write(dir.path().join("a.svg"), b"<svg/>").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/c.png"), b"png").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link.png")).unwrap();
        let got = read_images(dir.path(), &[]);
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a.svg", "b.png"]);
    }
}
