//! The Python generated code runs with (`--python`, `[run] interpreter`, a
//! profile's `interpreter`): checked before the sandbox is probed, and
//! described by `doctor`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use codeloop_sandbox::{ImportPolicy, PythonEnvironment};

/// Third-party packages `doctor` names at most.
const DOCTOR_PACKAGES: usize = 60;

/// A chosen interpreter must be a file that can be run; the error says
/// what to give instead.
pub fn check_interpreter(path: &Path) -> Result<(), String> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => Ok(()),
        Ok(m) if m.is_dir() => Err(format!(
            "the interpreter {} is a directory: give its python, e.g. {}",
            path.display(),
            path.join("bin/python").display()
        )),
        Ok(_) => Err(format!(
            "the interpreter {} cannot be run (not an executable file): give a python, e.g. a venv's bin/python",
            path.display()
        )),
        Err(e) => Err(format!(
            "the interpreter {} cannot be used: {e}. Give the path of a python (--python, [run] interpreter, or a profile's interpreter), e.g. a venv's bin/python",
            path.display()
        )),
    }
}

/// What `doctor` says of the interpreter's environment: its prefix, its
/// site-packages and the packages there (bounded).
pub(crate) fn describe_environment(env: &PythonEnvironment) -> Vec<String> {
    let mut out = Vec::new();
    if env.prefix != env.base_prefix && !env.prefix.is_empty() {
        out.push(format!(
            "prefix       {} (a venv of {})",
            env.prefix, env.base_prefix
        ));
    } else {
        out.push(format!("prefix       {}", env.prefix));
    }
    for site in &env.site_packages {
        out.push(format!(
            "site         {site} (bound read-only into every run)"
        ));
    }
    let total = env.packages.len() + env.more;
    if total == 0 {
        out.push("packages     none beyond the standard library".into());
        return out;
    }
    let shown: Vec<String> = env
        .packages
        .iter()
        .take(DOCTOR_PACKAGES)
        .map(|p| p.describe())
        .collect();
    let left = total - shown.len();
    out.push(format!(
        "packages     {total} third-party: {}{}",
        shown.join(", "),
        if left > 0 {
            format!(", and {left} more")
        } else {
            String::new()
        }
    ));
    out
}

/// The import policy in one line.
pub(crate) fn describe_policy(policy: &ImportPolicy) -> String {
    let mut line = format!(
        "imports      {} blocks {}",
        if policy.enforce {
            "enforced:"
        } else {
            "advisory (enforce = false):"
        },
        if policy.block.is_empty() {
            "nothing".to_string()
        } else {
            policy.block.join(", ")
        }
    );
    if !policy.allow.is_empty() {
        line.push_str(&format!("; allows {}", policy.allow.join(", ")));
    }
    line.push_str(" (config [imports])");
    line
}
