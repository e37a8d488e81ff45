//! A tape is data, never a path: every name a tape carries that some
//! consumer joins to a folder is checked when the tape is read, and a tape
//! that fails is refused whole ([`TapeError::Unsafe`]), with what is wrong
//! and what to do. A tape codeloop wrote always passes: the engine records
//! only plans whose names are Python identifiers (`Dag::new`), pictures it
//! kept as `pictures/NAME`, and input files by their file names.
//!
//! Checked: a node's name (a plan's functions and what they depend on, and
//! the node every event is about, `Facts::about`) is a Python identifier
//! (it becomes `code/NODE/N.py`, `test_NODE.py`, a module name); an input
//! file's name is one plain name (it is copied beside the exported
//! program); a picture's name is one plain name and its path is
//! `pictures/NAME` inside the session folder, and when the tape is read
//! from a folder, nothing on that path is a link, a FIFO or a device.
//! Not checked: names only shown (a command's node, which the fold and the
//! engine take only for a planned node; the output folder, said in
//! words), nor what is escaped where it is shown (tasks, model text).
//!
//! The writers check again (`session_fs`: `join_name`, `write_inside`):
//! defence in depth for a tape changed after it was read.

use std::path::Path;

use super::event::{Event, InputFile, Record};
use super::plan::is_python_identifier;
use super::session_fs::plain_name;

/// What is wrong with a record of a tape, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsafe {
    pub seq: u64,
    pub what: String,
}

/// The first record of `records` that names something no tape codeloop
/// writes names; `dir` is the folder the tape was read from (None: a tape
/// held in memory), whose pictures' paths are looked at too.
pub fn check(records: &[Record], dir: Option<&Path>) -> Result<(), Unsafe> {
    for r in records {
        check_record(r, dir).map_err(|what| Unsafe { seq: r.seq, what })?;
    }
    Ok(())
}

fn node_name(name: &str, role: &str) -> Result<(), String> {
    if is_python_identifier(name) {
        Ok(())
    } else {
        Err(format!(
            "names {role} `{}`, which is not a Python identifier",
            name.escape_debug()
        ))
    }
}

fn file_name(name: &str, role: &str) -> Result<(), String> {
    plain_name(name)
        .map(|_| ())
        .map_err(|why| format!("names {role} {why}"))
}

fn check_record(r: &Record, dir: Option<&Path>) -> Result<(), String> {
    if let Some(node) = r.event.facts().about.node {
        node_name(node, "a function")?;
    }
    match &r.event {
        Event::Plan(plan) => {
            for spec in &plan.specs {
                node_name(&spec.name, "a planned function")?;
                for d in &spec.depends_on {
                    node_name(d, "a function depended on")?;
                }
            }
        }
        Event::SessionStarted(start) => {
            for input in &start.inputs {
                file_name(&input.name, "an input file")?;
            }
        }
        Event::Picture(p) => {
            let picture = &p.picture;
            file_name(&picture.name, "a picture")?;
            let kept = picture
                .path
                .strip_prefix(PICTURES)
                .and_then(|rest| rest.strip_prefix('/'))
                .filter(|name| plain_name(name).is_ok());
            if kept.is_none() {
                return Err(format!(
                    "keeps a picture at `{}`, which is not a file in the session folder's {PICTURES}/",
                    picture.path.escape_debug()
                ));
            }
            if let Some(dir) = dir {
                no_link_on(dir, &picture.path)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Whether the file at `input.source_path` is still the one the tape
/// describes: its size and its first lines (the tape's `preview`, made as
/// the engine makes it: the first 8 lines of its first 2 KB, or a note
/// that it is binary). A tape names a path on the machine it was made on:
/// one handed over could name the reader's `~/.ssh/id_ed25519`, and a
/// resume or an export would copy it beside a program the tape wrote.
/// Only a file whose size and start the tape already holds is read.
pub fn input_matches(input: &InputFile) -> Result<(), String> {
    use std::io::Read;
    let path = Path::new(&input.source_path);
    let differs = |what: &str| {
        format!(
            "the input file {} is not the one the session recorded ({what}): attach it again, or copy the right one to {}",
            input.name, input.source_path
        )
    };
    let file = crate::session_fs::Folder::open(path.parent().unwrap_or(Path::new("/")))
        .and_then(|d| d.open_file(path.file_name().and_then(|n| n.to_str()).unwrap_or("")))
        .map_err(|e| format!("the input file {} cannot be read: {e}", input.name))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
    if size != input.size_bytes {
        return Err(differs(&format!("{size} bytes, not {}", input.size_bytes)));
    }
    let mut head = Vec::with_capacity(2048);
    let _ = file.take(2048).read_to_end(&mut head);
    let preview = match std::str::from_utf8(&head) {
        Ok(text) if !head.contains(&0) => text.lines().take(8).collect::<Vec<_>>().join("\n"),
        _ => format!("(binary, {} bytes)", input.size_bytes),
    };
    if preview != input.preview {
        return Err(differs("its first lines differ"));
    }
    Ok(())
}

/// The folder of a session where pictures are kept.
pub const PICTURES: &str = "pictures";

/// Nothing on `rel` below `dir` (each step, not following it) is a link,
/// a FIFO or a device; a missing step is fine (a picture deleted since).
fn no_link_on(dir: &Path, rel: &str) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    let mut here = dir.to_path_buf();
    for part in rel.split('/') {
        here.push(part);
        let Ok(meta) = std::fs::symlink_metadata(&here) else {
            return Ok(());
        };
        let t = meta.file_type();
        let what = if t.is_symlink() {
            "a symbolic link"
        } else if t.is_fifo() {
            "a named pipe (FIFO)"
        } else if t.is_socket() || t.is_block_device() || t.is_char_device() {
            "a device or socket"
        } else {
            continue;
        };
        return Err(format!(
            "keeps a picture at `{rel}`, and {} in the session folder is {what}: codeloop reads nothing of a session folder through a link",
            here.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{CodeEvent, CodeSource, FunctionSpec, PictureEvent, PlanEvent};
    use codeloop_protocol::picture::Picture;

    fn rec(seq: u64, event: Event) -> Record {
        Record {
            seq,
            t_ms: 0,
            event,
        }
    }

    fn spec(name: &str, deps: &[&str]) -> FunctionSpec {
        FunctionSpec {
            name: name.into(),
            purpose: String::new(),
            inputs: String::new(),
            output: String::new(),
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
            head: None,
        }
    }

    fn picture(name: &str, path: &str) -> Event {
        Event::Picture(PictureEvent {
            run_id: Some(1),
            picture: Picture {
                name: name.into(),
                path: path.into(),
                format: "png".into(),
                ..Picture::default()
            },
        })
    }

    #[test]
    fn names_a_tape_carries_that_are_paths_are_refused() {
        let plan = |name: &str, deps: &[&str]| {
            rec(
                3,
                Event::Plan(PlanEvent {
                    specs: vec![spec(name, deps)],
                }),
            )
        };
        assert!(check(&[plan("parse_line", &[])], None).is_ok());
        let e = check(&[plan("../../.local/lib/x", &[])], None).unwrap_err();
        assert_eq!(e.seq, 3);
        assert!(e.what.contains("not a Python identifier"), "{e:?}");
        assert!(check(&[plan("f", &["../g"])], None).is_err());
        assert!(check(&[plan("a/b", &[])], None).is_err());
        let code = rec(
            5,
            Event::Code(CodeEvent {
                node: "../evil".into(),
                iteration: 1,
                code: String::new(),
                source: CodeSource::Model,
                notes: Vec::new(),
            }),
        );
        assert_eq!(check(&[code], None).unwrap_err().seq, 5);
        for (name, path) in [
            ("x.png", "/etc/hostname"),
            ("x.png", "pictures/../../etc/hostname"),
            ("x.png", "../pictures/x.png"),
            ("x.png", "logs/x.png"),
            ("x.png", "pictures/a/x.png"),
            ("../x.png", "pictures/x.png"),
        ] {
            assert!(
                check(&[rec(1, picture(name, path))], None).is_err(),
                "{name} at {path}"
            );
        }
        assert!(
            check(
                &[rec(1, picture("chart.png", "pictures/run-7-chart.png"))],
                None
            )
            .is_ok()
        );
    }

    #[test]
    fn a_picture_path_through_a_link_in_the_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pictures")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("pictures/p.png")).unwrap();
        let r = [rec(9, picture("p.png", "pictures/p.png"))];
        let e = check(&r, Some(dir.path())).unwrap_err();
        assert!(e.what.contains("is a symbolic link"), "{e:?}");
        // Held in memory, there is no folder to look at: only the words.
        assert!(check(&r, None).is_ok());
        // The pictures folder itself a link.
        let other = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(dir.path().join("pictures"), other.path().join("pictures"))
            .unwrap();
        std::fs::remove_file(dir.path().join("pictures/p.png")).unwrap();
        std::fs::write(dir.path().join("pictures/p.png"), b"png").unwrap();
        assert!(check(&r, Some(other.path())).is_err());
        assert!(check(&r, Some(dir.path())).is_ok());
    }
}
