//! A person's own Python for the tests: a venv of the real interpreter with
//! a package of our own in it, in a folder every user can read.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A venv of the real interpreter, without pip, with a package of our own
/// written into its site-packages (no network).
pub fn venv_with_tinypkg(dir: &Path) -> PathBuf {
    let real =
        codeloop_sandbox::Sandbox::probe(&codeloop_sandbox::SandboxOptions::from_env()).interpreter;
    let venv = dir.join("venv");
    let ok = Command::new(&real)
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(ok.success());
    let python = venv.join("bin/python");
    let out = Command::new(&python)
        .args(["-c", "import site; print(site.getsitepackages()[0])"])
        .output()
        .unwrap();
    let site = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    std::fs::create_dir_all(site.join("tinypkg")).unwrap();
    std::fs::write(
        site.join("tinypkg/__init__.py"),
        "def hello():\n    return 'hello from tinypkg'\n",
    )
    .unwrap();
    // Readable by a run's own uid (root drops to one).
    Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(dir)
        .status()
        .unwrap();
    python
}

/// A temporary folder every user can enter (a run's own uid reads the
/// venv in it).
pub fn world_readable_tempdir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("codeloop-venv-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}
