//! An ordinary user for the tests that run codeloop as one (created when
//! the tests run as root and `useradd` exists), a system python3 it can
//! run, and a directory it can read with a copy of codeloop in it (the
//! binary may live where the user cannot reach it, under /root).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::copy_binary::copy_binary;

pub const USER: &str = "codeloop-tester";
/// The tests that run as the user take turns: what one leaves running or
/// counts must not be another's.
static AS_USER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A directory every user can read (and enter).
pub fn scratch(tag: &str) -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix(&format!("codeloop-attack-{tag}-"))
        .tempdir()
        .unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// The user's turn, a system python3, a scratch directory and the copy of
/// `codeloop` (the binary at `codeloop`, the test's
/// `env!("CARGO_BIN_EXE_codeloop")`) in it; `None`, said why, where that
/// cannot be had.
pub fn ordinary_user(
    tag: &str,
    codeloop: &Path,
) -> Option<(
    std::sync::MutexGuard<'static, ()>,
    &'static str,
    tempfile::TempDir,
    PathBuf,
)> {
    let turn = AS_USER.lock().unwrap_or_else(|e| e.into_inner());
    made_user()?;
    let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    let Some(python) = python else {
        println!("skipped: no system python3 an ordinary user can run");
        return None;
    };
    let dir = scratch(tag);
    let bin = dir.path().join("codeloop");
    copy_binary(codeloop, &bin);
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    Some((turn, python, dir, bin))
}

/// The ordinary user, created if it does not exist: its uid; `None`, said
/// why, where it cannot be had (not root, no `useradd`).
pub fn made_user() -> Option<u32> {
    if !rustix::process::geteuid().is_root() {
        println!("skipped: creating a user needs root");
        return None;
    }
    let exists = Command::new("id")
        .arg(USER)
        .output()
        .is_ok_and(|o| o.status.success());
    if !exists {
        let made = Command::new("useradd").args(["-m", USER]).status();
        if !made.is_ok_and(|s| s.success()) {
            println!("skipped: useradd is not available to create {USER}");
            return None;
        }
    }
    Some(user_uid())
}

pub fn user_uid() -> u32 {
    let out = Command::new("id").args(["-u", USER]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}
