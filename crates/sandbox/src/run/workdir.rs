//! A run's working directory: made with the job's files, read back for
//! the files the caller collects, made removable, chowned to a run's own
//! uid; and what a run of its own uid left in the host's /dev/shm.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use crate::{ExecError, RunSpec};

/// Each collected file is read up to this size.
const COLLECT_CAP: u64 = 1 << 20;

fn bad_path(path: &str, why: &str) -> ExecError {
    ExecError::Workdir(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{path:?} {why}"),
    ))
}

/// A path relative to the working directory that stays inside it.
fn checked_relative(path: &str) -> Result<PathBuf, ExecError> {
    let p = Path::new(path);
    if path.is_empty() {
        return Err(bad_path(path, "is an empty file name"));
    }
    for c in p.components() {
        match c {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(bad_path(
                    path,
                    "must be a relative path inside the working directory",
                ));
            }
        }
    }
    Ok(p.to_path_buf())
}

pub(crate) fn prepare_workdir(root: &Path, spec: &RunSpec) -> Result<(), ExecError> {
    std::fs::create_dir(root.join(".tmp")).map_err(ExecError::Workdir)?;
    for (name, contents) in &spec.files {
        let rel = checked_relative(name)?;
        let dest = root.join(rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(ExecError::Workdir)?;
        }
        std::fs::write(&dest, contents).map_err(ExecError::Workdir)?;
    }
    for input in &spec.inputs {
        let Some(name) = input.file_name() else {
            return Err(bad_path(&input.display().to_string(), "has no file name"));
        };
        std::fs::copy(input, root.join(name)).map_err(|e| {
            ExecError::Workdir(std::io::Error::new(
                e.kind(),
                format!("cannot copy the input {}: {e}", input.display()),
            ))
        })?;
    }
    checked_relative(&spec.script)?;
    Ok(())
}

/// Remove what a run's own uid left in the host's /dev/shm (POSIX
/// semaphores and shared memory of multiprocessing), where there is no
/// private one.
pub(crate) fn sweep_shm(uid: u32) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    for entry in entries.flatten() {
        if entry.metadata().is_ok_and(|m| m.uid() == uid) {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                make_removable(&path);
                let _ = std::fs::remove_dir_all(&path);
            } else {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

/// Give every directory under `dir` back its owner's rights (a run may
/// have left one at mode 000), so the whole run folder can be removed.
pub(crate) fn make_removable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            make_removable(&entry.path());
        }
    }
}

pub(crate) fn chown_tree(dir: &Path, uid: u32) -> std::io::Result<()> {
    std::os::unix::fs::lchown(dir, Some(uid), Some(uid))?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let ft = entry.file_type()?;
        if ft.is_dir() {
            chown_tree(&entry.path(), uid)?;
        } else {
            std::os::unix::fs::lchown(entry.path(), Some(uid), Some(uid))?;
        }
    }
    Ok(())
}

pub(super) fn open_log(path: &Path) -> Result<std::fs::File, ExecError> {
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent).map_err(ExecError::Workdir)?;
    }
    // Never through a link, never waiting on a FIFO, private (the caller
    // may be writing into a session folder someone else handed over).
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .and_then(|f| match f.metadata() {
            Ok(m) if m.is_file() => Ok(f),
            Ok(_) => Err(std::io::Error::other("it is not a regular file")),
            Err(e) => Err(e),
        });
    opened.map_err(|e| {
        ExecError::Workdir(std::io::Error::new(
            e.kind(),
            format!("cannot create the output log {}: {e}", path.display()),
        ))
    })
}

/// Read back the files a run left for the caller: regular files only, never
/// through a symlink, each up to `COLLECT_CAP` bytes.
pub(super) fn collect(root: &Path, names: &[String]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for name in names {
        let Ok(rel) = checked_relative(name) else {
            continue;
        };
        let mut path = root.to_path_buf();
        let mut through_symlink = false;
        for c in rel.components() {
            path.push(c);
            if std::fs::symlink_metadata(&path)
                .map(|m| m.file_type().is_symlink())
                .unwrap_or(false)
            {
                through_symlink = true;
                break;
            }
        }
        if through_symlink {
            continue;
        }
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
        else {
            continue;
        };
        let Ok(meta) = file.metadata() else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let mut data = Vec::new();
        use std::io::Read;
        if file.take(COLLECT_CAP).read_to_end(&mut data).is_ok() {
            out.push((name.clone(), data));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_leave_the_working_directory_are_refused() {
        assert!(checked_relative("a/b.py").is_ok());
        assert!(checked_relative("../x").is_err());
        assert!(checked_relative("/etc/passwd").is_err());
        assert!(checked_relative("").is_err());
    }
}
