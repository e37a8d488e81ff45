//! The real binary as the root's tests run it, and what it prints read back.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `codeloop` (the test's `env!("CARGO_BIN_EXE_codeloop")`) with
/// `dir/data` as its data folder and a config file that does not exist, so
/// only the defaults apply.
pub fn codeloop_in(codeloop: impl AsRef<Path>, dir: &Path) -> Command {
    let mut cmd = Command::new(codeloop.as_ref());
    cmd.env("CODELOOP_DATA_DIR", dir.join("data"))
        .env("CODELOOP_CONFIG", dir.join("none.toml"));
    cmd
}

/// A file of the workspace's `tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    crate::workspace().join("tests/fixtures").join(name)
}

/// The row of a table `codeloop bench` printed whose first cell is `name`,
/// its cells apart (columns are two spaces or more apart).
pub fn row(stdout: &str, name: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .find(|r| r.first().map(String::as_str) == Some(name))
        .unwrap_or_else(|| panic!("no row {name}: {stdout}"))
}
