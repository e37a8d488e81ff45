//! The interpreter a person chose (`--python`, the config's `interpreter`)
//! and what it has: its prefix, its `site-packages` and the third-party
//! packages there, probed on the host (the interpreter is the person's own;
//! no generated code runs here). The sandbox binds the prefix and the
//! `site-packages` read-only into every run (`resolve_interpreter`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use codeloop_protocol::python::PythonEnvironment;

use super::Sandbox;

/// Packages listed at most by the probe.
const MAX_PACKAGES: usize = 200;

/// What the probe asks the interpreter: its prefixes, its site-packages,
/// and the distributions there with their top-level modules; modules no
/// distribution owns (a package copied in) are listed under their own name.
const PROBE: &str = r#"
import sys, os, json, site
try:
    import importlib.metadata as md
except ImportError:
    md = None
sites = []
for p in list(getattr(site, "getsitepackages", lambda: [])()) + sys.path:
    if p and os.path.isdir(p) and os.path.basename(p) in ("site-packages", "dist-packages") and p not in sites:
        sites.append(p)
SKIP = {"pip", "setuptools", "wheel", "_distutils_hack", "pkg_resources", "distutils-precedence", "__pycache__"}
def module_of(entry, full):
    if entry.startswith(("_", ".")) or entry in SKIP or entry.endswith((".dist-info", ".egg-info", ".pth", ".data")):
        return None
    if os.path.isdir(full):
        return entry if entry.isidentifier() else None
    for ext in (".py", ".so", ".pyd"):
        if entry.endswith(ext):
            name = entry.split(".")[0]
            return name if name.isidentifier() else None
    return None
packages, owned = {}, set()
if md is not None:
    for d in md.distributions(path=sites):
        try:
            name = d.metadata["Name"]
        except Exception:
            continue
        if not name or name.lower() in SKIP:
            continue
        mods = []
        top = d.read_text("top_level.txt")
        if top:
            mods = [m.strip() for m in top.split() if m.strip()]
        else:
            for f in d.files or []:
                first = f.parts[0] if f.parts else ""
                m = module_of(first, "") if len(f.parts) == 1 else (first if first.isidentifier() and not first.startswith("_") else None)
                if m and m not in mods:
                    mods.append(m)
        mods = [m for m in mods if m.isidentifier() and not m.startswith("_") and "__" not in m]
        owned.update(mods)
        owned.update(m for m in (top or "").split())
        packages.setdefault(name.lower(), {"name": name, "version": d.version or "", "modules": sorted(mods)})
for s in sites:
    try:
        entries = sorted(os.listdir(s))
    except OSError:
        continue
    for e in entries:
        m = module_of(e, os.path.join(s, e))
        if m and m not in owned and m.lower() not in packages:
            packages[m.lower()] = {"name": m, "version": "", "modules": [m]}
ordered = [packages[k] for k in sorted(packages)]
print(json.dumps({
    "interpreter": sys.executable, "version": "%d.%d.%d" % sys.version_info[:3],
    "prefix": sys.prefix, "base_prefix": sys.base_prefix, "site_packages": sites,
    "packages": ordered[:LIMIT], "more": max(0, len(ordered) - LIMIT),
}))
"#;

impl Sandbox {
    /// The interpreter runs use and its third-party packages, asked of it
    /// once a process (a tenth of a second to a few, with many packages)
    /// and remembered: every session of a bench shares the one probe. An
    /// error says what went wrong.
    pub fn python_environment(&self) -> Result<PythonEnvironment, String> {
        if self.interpreter.as_os_str().is_empty() {
            return Err(self
                .interpreter_problem()
                .unwrap_or("no Python interpreter found")
                .to_string());
        }
        static PROBED: Mutex<Vec<(PathBuf, PythonEnvironment)>> = Mutex::new(Vec::new());
        if let Ok(probed) = PROBED.lock()
            && let Some((_, env)) = probed.iter().find(|(p, _)| *p == self.interpreter)
        {
            return Ok(PythonEnvironment {
                chosen: self.interpreter_chosen,
                ..env.clone()
            });
        }
        let env = PythonEnvironment {
            chosen: self.interpreter_chosen,
            ..probe_environment(&self.interpreter)?
        };
        if let Ok(mut probed) = PROBED.lock() {
            probed.push((self.interpreter.clone(), env.clone()));
        }
        Ok(env)
    }
}

/// Ask `interpreter` what it is and has (as runs start it: `-E -s`).
pub(crate) fn probe_environment(interpreter: &Path) -> Result<PythonEnvironment, String> {
    let script = PROBE.replace("LIMIT", &MAX_PACKAGES.to_string());
    let output = Command::new(interpreter)
        .args(["-E", "-s", "-c", &script])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start {}: {e}", interpreter.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} could not list its packages: {}",
            interpreter.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    serde_json::from_slice::<PythonEnvironment>(&output.stdout)
        .map_err(|e| format!("{} did not list its packages: {e}", interpreter.display()))
}
