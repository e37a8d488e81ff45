//! A copy of codeloop's binary, written by `cp` in a process of its own.
//! Written from the test's process, the copy's write descriptor is
//! inherited by any child another test's thread forks at that moment, and
//! running the copy then fails with "Text file busy" (ETXTBSY) until that
//! child has exec'd; `cp`'s descriptor is in no process the tests fork.
use std::path::Path;
use std::process::Command;

/// `from` (a test's `env!("CARGO_BIN_EXE_codeloop")`) copied to `to`.
pub fn copy_binary(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp runs");
    assert!(
        status.success(),
        "cp could not copy {} to {}",
        from.display(),
        to.display()
    );
}
