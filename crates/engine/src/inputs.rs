//! A session's input files at its start: each described by what it is
//! (`codeloop-inputs`, bounded reads), and refused, before any model is
//! asked, when no run could read it or hold it: every run gets a copy in
//! its working directory, whose disk quota the inputs must fit.

use std::io::Read;
use std::path::Path;

use codeloop_inputs::Refusal;
use codeloop_session::InputFile;

/// What a run's working directory holds (its disk quota): the inputs
/// together must fit in it, with room to spare for what the program writes.
pub(crate) fn room() -> u64 {
    codeloop_sandbox::Limits::default().disk_bytes
}

/// Refuse `path` (of `size` bytes) when it and the `others` bytes already
/// attached would not fit in a run's working directory.
pub fn check_room(path: &Path, size: u64, others: u64) -> Result<(), Refusal> {
    let quota = room();
    // A tenth of the quota is left for what the program writes.
    let fits = quota - quota / 10;
    if size + others <= fits {
        return Ok(());
    }
    let with = if others > 0 {
        format!(
            " ({} with the other inputs)",
            codeloop_inputs::bytes(size + others)
        )
    } else {
        String::new()
    };
    Err(Refusal {
        path: path.to_path_buf(),
        why: format!(
            "is {}{with}: more than a run's working directory holds (each run gets a copy, and its disk quota is {}, {} of it for inputs)",
            codeloop_inputs::bytes(size),
            codeloop_inputs::bytes(quota),
            codeloop_inputs::bytes(fits),
        ),
        todo: format!(
            "attach a sample of it instead (e.g. `head -n 100000 {} > sample`), or split it",
            path.display()
        ),
    })
}

/// The input files of a new session, described; the first that no run
/// could read or hold is refused.
pub fn describe_all(paths: &[std::path::PathBuf]) -> Result<Vec<InputFile>, Refusal> {
    let mut files: Vec<InputFile> = Vec::new();
    for path in paths {
        let file = describe(path)?;
        let others = files.iter().map(|f| f.size_bytes).sum();
        check_room(path, file.size_bytes, others)?;
        files.push(file);
    }
    Ok(files)
}

/// An input file described by what it is, reading only what the
/// description needs (never the whole file).
pub fn describe(path: &Path) -> Result<InputFile, Refusal> {
    let description = codeloop_inputs::describe(path)?;
    let abs = std::fs::canonicalize(path).map_err(|e| Refusal {
        path: path.to_path_buf(),
        why: format!("cannot be resolved to a full path ({e})"),
        todo: "check the path, or attach a copy of the file".into(),
    })?;
    // The first lines, as sessions before descriptions had them (a
    // template override may still show them): 2 KB read, no more.
    let mut head = Vec::with_capacity(2048);
    let read = std::fs::File::open(path).and_then(|f| f.take(2048).read_to_end(&mut head));
    let preview = match std::str::from_utf8(&head) {
        Ok(text) if read.is_ok() && !head.contains(&0) => {
            text.lines().take(8).collect::<Vec<_>>().join("\n")
        }
        _ => format!("(binary, {} bytes)", description.size_bytes),
    };
    Ok(InputFile {
        name: description.name.clone(),
        source_path: abs.to_string_lossy().into_owned(),
        size_bytes: description.size_bytes,
        preview,
        description: Some(description),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_larger_than_a_run_holds_are_refused_with_what_to_do() {
        let p = Path::new("/data/big.csv");
        assert!(check_room(p, 1 << 20, 0).is_ok());
        let r = check_room(p, 2 << 30, 0).unwrap_err();
        assert!(
            r.why
                .contains("is 2.0 GB: more than a run's working directory holds"),
            "{r}"
        );
        assert!(r.todo.contains("head -n 100000 /data/big.csv"), "{r}");
        let r = check_room(p, 200 << 20, 200 << 20).unwrap_err();
        assert!(r.why.contains("(400.0 MB with the other inputs)"), "{r}");
    }
}
