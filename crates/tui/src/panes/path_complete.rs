//! Tab completion of a file path (the attach prompt): the longest common
//! prefix of the names that fit, and the names when several do.

use std::path::{Path, PathBuf};

/// At most this many candidates are listed.
pub(crate) const MAX_CANDIDATES: usize = 60;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Completion {
    /// The text with the completion applied (unchanged when nothing fits).
    pub(crate) text: String,
    /// The names that fit when more than one does (directories end in `/`).
    pub(crate) candidates: Vec<String>,
    /// Why nothing was completed, when nothing was.
    pub(crate) note: Option<String>,
}

/// Complete `input`, a path typed so far (relative to the working directory,
/// `~/` for the home folder).
pub(crate) fn complete(input: &str) -> Completion {
    let (dir_part, prefix) = match input.rfind('/') {
        Some(i) => (&input[..=i], &input[i + 1..]),
        None => ("", input),
    };
    let dir = expand(dir_part);
    let unchanged = |note: String| Completion {
        text: input.to_string(),
        candidates: Vec::new(),
        note: Some(note),
    };
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) => return unchanged(format!("cannot list {}: {e}", dir.display())),
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let shown =
                name.starts_with(prefix) && (prefix.starts_with('.') || !name.starts_with('.'));
            // A symlink to a folder completes as a folder.
            let is_dir = e.path().is_dir();
            shown.then(|| if is_dir { format!("{name}/") } else { name })
        })
        .collect();
    names.sort();
    match names.len() {
        0 => unchanged(format!(
            "no file in {} starts with `{prefix}`",
            dir.display()
        )),
        1 => Completion {
            text: format!("{dir_part}{}", names[0]),
            candidates: Vec::new(),
            note: None,
        },
        _ => {
            let common = common_prefix(&names);
            names.truncate(MAX_CANDIDATES);
            Completion {
                text: format!("{dir_part}{common}"),
                candidates: names,
                note: None,
            }
        }
    }
}

/// The folder a typed folder part names ("" is the working directory).
fn expand(dir_part: &str) -> PathBuf {
    if dir_part.is_empty() {
        return PathBuf::from(".");
    }
    if let Some(rest) = dir_part.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return Path::new(&home).join(rest);
    }
    PathBuf::from(dir_part)
}

fn common_prefix(names: &[String]) -> String {
    let Some(first) = names.first() else {
        return String::new();
    };
    let mut end = first.len();
    for n in &names[1..] {
        end = first
            .char_indices()
            .zip(n.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, a), _)| i + a.len_utf8())
            .min(end);
    }
    first[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_fit_completes_several_give_the_common_prefix_and_the_names() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display().to_string();
        for f in ["weather.csv", "weather-2025.csv", "notes.txt"] {
            std::fs::write(dir.path().join(f), "x").unwrap();
        }
        std::fs::create_dir(dir.path().join("data")).unwrap();
        let c = complete(&format!("{d}/no"));
        assert_eq!(c.text, format!("{d}/notes.txt"));
        let c = complete(&format!("{d}/we"));
        assert_eq!(c.text, format!("{d}/weather"));
        assert_eq!(c.candidates, ["weather-2025.csv", "weather.csv"]);
        let c = complete(&format!("{d}/da"));
        assert_eq!(c.text, format!("{d}/data/"), "a folder ends in /");
        let c = complete(&format!("{d}/zz"));
        assert_eq!(c.text, format!("{d}/zz"));
        assert!(c.note.unwrap().contains("starts with `zz`"));
    }
}
