//! The import policy (config `[imports]`): modules a program may not import.
//!
//! The static check names a blocked import (a note while the policy is
//! advisory, a failure sent to repair while it is enforced). Where it is
//! enforced, `guard.py` refuses the import inside the sandbox, at import
//! time, in every mode: a plain run gets it from a bootstrap (`python -c`)
//! before its script, a fork server's child before its job. What the guard
//! does and does not stop is said in `guard.py`: the sandbox's namespaces,
//! seccomp and Landlock remain the wall.

use serde::{Deserialize, Serialize};

/// The modules blocked unless the config says otherwise (today's advisory
/// list), with why each is risky.
pub(crate) const DEFAULT_BLOCKED: &[(&str, &str)] = &[
    ("subprocess", "starts processes"),
    (
        "socket",
        "opens network sockets (there is no network in the sandbox)",
    ),
    ("ctypes", "calls native code"),
    ("shutil", "can delete whole directory trees"),
];

const GUARD_PY: &str = include_str!("guard.py");

/// Where a fork server finds the guard it installs in each child.
pub(crate) const GUARD_FILE: &str = "_codeloop_guard.py";

/// Which modules generated code may import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportPolicy {
    /// Modules allowed even where a blocked package above them is named
    /// (`allow = ["os.path"]` beside `block = ["os"]`), or taken off the
    /// default block list.
    pub allow: Vec<String>,
    /// Modules (and everything below them) a program may not import.
    pub block: Vec<String>,
    /// Refuse a blocked import inside the sandbox and fail the static
    /// check; when false the check only notes it.
    pub enforce: bool,
}

impl Default for ImportPolicy {
    fn default() -> Self {
        ImportPolicy {
            allow: Vec::new(),
            block: DEFAULT_BLOCKED.iter().map(|(m, _)| m.to_string()).collect(),
            enforce: false,
        }
    }
}

impl ImportPolicy {
    /// Whether importing `module` (dotted) is blocked: the longest entry
    /// naming it or a package above it decides; at equal length allow wins.
    /// A module's C half goes with it (blocking `socket` blocks `_socket`).
    /// The same rule as `guard.py`'s and `check.py`'s.
    pub fn blocks(&self, module: &str) -> bool {
        let top = module.split('.').next().unwrap_or(module);
        if let Some(rest) = top.strip_prefix('_')
            && !rest.is_empty()
            && self.decide(module).is_none()
        {
            let whole = match top {
                "_posixsubprocess" => "subprocess",
                "_ctypes" => "ctypes",
                _ => rest,
            };
            if self.decide(whole) == Some(true) {
                return true;
            }
        }
        self.decide(module) == Some(true)
    }

    /// The verdict of the longest entry naming `module` or a package above
    /// it (allow wins a tie); None when no entry names it.
    fn decide(&self, module: &str) -> Option<bool> {
        let mut best: Option<(usize, bool)> = None;
        for (entries, verdict) in [(&self.block, true), (&self.allow, false)] {
            for entry in entries {
                let names_it = module == entry
                    || (module.starts_with(entry.as_str())
                        && module[entry.len()..].starts_with('.'));
                if names_it {
                    let better = match best {
                        None => true,
                        Some((len, _)) => entry.len() > len || (entry.len() == len && !verdict),
                    };
                    if better {
                        best = Some((entry.len(), verdict));
                    }
                }
            }
        }
        best.map(|(_, v)| v)
    }

    /// Why `module` is risky, where the default list says.
    pub fn why(module: &str) -> Option<&'static str> {
        let top = module.split('.').next().unwrap_or(module);
        DEFAULT_BLOCKED
            .iter()
            .find(|(m, _)| *m == top)
            .map(|(_, why)| *why)
    }

    /// A module name is dotted identifiers.
    pub fn valid_module_name(name: &str) -> bool {
        !name.is_empty()
            && name.split('.').all(|part| {
                let mut chars = part.chars();
                chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
                    && chars.all(|c| c.is_alphanumeric() || c == '_')
            })
    }

    /// The guard's Python source with this policy in it: defines and calls
    /// `_codeloop_import_guard`, then deletes the name.
    pub fn guard_source(&self) -> String {
        let json = serde_json::json!({ "allow": self.allow, "block": self.block });
        // A JSON object is a Python dict literal here: strings and lists only.
        format!("{GUARD_PY}\n_codeloop_import_guard({json})\ndel _codeloop_import_guard\n")
    }

    /// The `-c` program that runs the script named by its first argument
    /// as `python script.py args` would (as `__main__`, its directory
    /// first on sys.path), the guard installed once the bootstrap's own
    /// imports are done and just before the script's first line: the
    /// policy is the script's, never the bootstrap's (`block = ["os"]`
    /// must not refuse the bootstrap its `os`).
    pub fn bootstrap(&self) -> String {
        let json = serde_json::json!({ "allow": self.allow, "block": self.block });
        format!(
            "{GUARD_PY}\ndef _codeloop_run():\n    import sys, os\n    del sys.argv[0]\n    path = sys.argv[0]\n    sys.path[0] = os.path.dirname(os.path.abspath(path))\n    with open(path, 'rb') as f:\n        code = compile(f.read(), path, 'exec')\n    g = sys.modules['__main__'].__dict__\n    g['__file__'] = path\n    guard = g.pop('_codeloop_import_guard')\n    del g['_codeloop_run']\n    guard({json})\n    del sys, os, guard\n    exec(code, g)\n_codeloop_run()\n"
        )
    }

    /// Where the policy is enforced and the run's script installs the
    /// guard itself (`RunSpec::guards_itself`), the guard written beside it.
    pub(crate) fn write_guard_for(
        &self,
        root: &std::path::Path,
        spec: &crate::RunSpec,
    ) -> Result<(), crate::ExecError> {
        if self.enforce && spec.guards_itself && !spec.unguarded {
            std::fs::write(root.join(GUARD_FILE), self.guard_source())
                .map_err(crate::ExecError::Workdir)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_entry_decides_and_allow_wins_a_tie() {
        let p = ImportPolicy {
            allow: vec!["os.path".into(), "shutil".into()],
            block: vec!["os".into(), "shutil".into(), "socket".into()],
            enforce: true,
        };
        assert!(p.blocks("os"));
        assert!(p.blocks("os.fake"));
        assert!(!p.blocks("os.path"));
        assert!(!p.blocks("shutil"));
        assert!(p.blocks("socket"));
        assert!(!p.blocks("socketserver"));
        assert!(!p.blocks("json"));
        // A module's C half goes with it, unless allowed itself.
        assert!(p.blocks("_socket"));
        assert!(!p.blocks("_json"));
        let q = ImportPolicy {
            allow: vec!["_socket".into()],
            ..p.clone()
        };
        assert!(!q.blocks("_socket"));
        assert!(ImportPolicy::default().blocks("_posixsubprocess"));
        assert!(ImportPolicy::default().blocks("_ctypes"));
    }

    #[test]
    fn the_default_blocks_todays_advisory_list_without_enforcing_it() {
        let p = ImportPolicy::default();
        assert!(!p.enforce);
        for m in ["subprocess", "socket", "ctypes", "shutil", "ctypes.util"] {
            assert!(p.blocks(m), "{m}");
        }
        assert!(!p.blocks("math"));
    }

    #[test]
    fn module_names_are_dotted_identifiers() {
        assert!(ImportPolicy::valid_module_name("os.path"));
        assert!(ImportPolicy::valid_module_name("_socket"));
        assert!(!ImportPolicy::valid_module_name("os..path"));
        assert!(!ImportPolicy::valid_module_name("1x"));
        assert!(!ImportPolicy::valid_module_name(""));
    }
}
