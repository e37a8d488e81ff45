//! Probing the machine once: the real interpreter, the helper binary, and
//! which isolation layers this kernel and these packages give.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::Deserialize;

use super::helper::HELPER_ARG;
use super::layers::namespaces::NamespaceSource;
use super::{Layer, LayerReport};

/// What a sandbox is probed with: every choice a person or a program makes
/// about it, passed in (the sandbox keeps no choice of its own).
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxOptions {
    /// Layers left out even where the machine gives them (`--without`,
    /// CODELOOP_SANDBOX_WITHOUT): to measure what each costs, or to see what
    /// the others contain alone. Reported inactive like a missing layer.
    pub without: Vec<Layer>,
    /// The interpreter the person chose (`--python`, the config's
    /// `interpreter`, $CODELOOP_PYTHON); `None`: the `python3` on PATH
    /// resolved to its real executable. A venv's `bin/python` is kept as it
    /// is (it finds its `pyvenv.cfg` beside it); its prefix, its base's and
    /// its `site-packages` are bound read-only.
    pub interpreter: Option<PathBuf>,
    /// The binary that serves as the sandbox helper
    /// ($CODELOOP_SANDBOX_HELPER); `None`: this executable, or a `codeloop`
    /// binary beside it (tests, benchmarks).
    pub helper: Option<PathBuf>,
    /// Use the helper's own namespaces (no package needed); when false,
    /// only a system bubblewrap can give the namespace layer.
    pub native_namespaces: bool,
    /// Run generated code even when only the reduced sandbox is available
    /// (`--sandbox reduced`, CODELOOP_SANDBOX=reduced); otherwise runs are
    /// refused then.
    pub allow_reduced: bool,
    /// The import policy every run holds to (the config's `[imports]`).
    pub import_policy: super::ImportPolicy,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            without: Vec::new(),
            interpreter: None,
            helper: None,
            native_namespaces: true,
            allow_reduced: false,
            import_policy: super::ImportPolicy::default(),
        }
    }
}

impl SandboxOptions {
    /// The defaults with what the environment asks for: the only place the
    /// sandbox's variables are read. `CODELOOP_SANDBOX_WITHOUT`
    /// (comma-separated: namespaces, landlock, seccomp, and `native` for
    /// bubblewrap's namespaces rather than the helper's; other names are
    /// ignored), `CODELOOP_SANDBOX=reduced`, `CODELOOP_PYTHON` and
    /// `CODELOOP_SANDBOX_HELPER`.
    pub fn from_env() -> SandboxOptions {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let mut options = SandboxOptions {
            interpreter: var("CODELOOP_PYTHON").map(PathBuf::from),
            helper: var("CODELOOP_SANDBOX_HELPER").map(PathBuf::from),
            allow_reduced: std::env::var("CODELOOP_SANDBOX").is_ok_and(|v| v.trim() == "reduced"),
            ..SandboxOptions::default()
        };
        if let Ok(without) = std::env::var("CODELOOP_SANDBOX_WITHOUT") {
            for name in without.split(',').map(str::trim) {
                if name == "native" {
                    options.native_namespaces = false;
                } else if let Ok(layer) = name.parse::<Layer>() {
                    options.leave_out(layer);
                }
            }
        }
        options
    }

    /// Leave `layer` out (once).
    pub fn leave_out(&mut self, layer: Layer) {
        if !self.without.contains(&layer) {
            self.without.push(layer);
        }
    }

    /// Whether `layer` is to be used where the machine gives it.
    pub fn wants(&self, layer: Layer) -> bool {
        !self.without.contains(&layer)
    }
}

/// What probing found about the interpreter.
#[derive(Debug, Clone, Default)]
pub(crate) struct InterpreterInfo {
    /// Directories (and files) the interpreter reads: prefixes and sys.path.
    pub paths: Vec<PathBuf>,
    pub version: String,
}

/// The sandbox, probed once: the real interpreter and the layers this
/// machine gives. Cloning is cheap enough for callers that want their own
/// copy, and `Arc<Sandbox>` works as well.
#[derive(Debug, Clone)]
pub struct Sandbox {
    /// The real interpreter (empty when none was found; `run` then fails with
    /// `ExecError::NoInterpreter`).
    pub interpreter: PathBuf,
    pub(crate) interpreter_problem: Option<String>,
    /// The person chose the interpreter (options, `--python`, the config,
    /// `CODELOOP_PYTHON`), rather than the `python3` on PATH.
    pub(crate) interpreter_chosen: bool,
    pub(crate) interp: InterpreterInfo,
    pub(crate) helper: Option<PathBuf>,
    /// Why no helper could be used, when none could.
    pub(crate) helper_problem: Option<String>,
    pub(crate) reduced_allowed: bool,
    pub(crate) is_root: bool,
    /// The kernel's Landlock ABI (0: none): the helper's ruleset and the
    /// fork server's jobs' are made for it.
    pub(crate) landlock_abi: i32,
    /// Who gives the namespace layer (its probe decides).
    pub(crate) namespaces: NamespaceSource,
    /// What each layer's probe found, in the registry's order.
    pub(crate) probed: Vec<(Layer, Result<(), String>)>,
    pub(crate) layers: Vec<LayerReport>,
    /// The import policy every run of this sandbox holds to.
    pub(crate) import_policy: super::ImportPolicy,
    /// The memory limit runs are given (`[run] memory_mb`), which the
    /// probes try; None: `probe_limits`'s.
    pub(crate) run_memory: Option<u64>,
}

pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// System directories the interpreter and its libraries need, read-only.
pub(crate) const SYSTEM_READ_DIRS: &[&str] =
    &["/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc"];

/// What `os.cpu_count()` reads.
pub(crate) const CPU_INFO_DIR: &str = "/sys/devices/system/cpu";

impl Sandbox {
    /// Find out what this machine gives with these options: the
    /// interpreter, the helper and each layer (`layers/`). It tries the
    /// helper's namespaces and bubblewrap with real (harmless) runs, and
    /// changes nothing else: probe once and keep the result.
    pub fn probe(options: &SandboxOptions) -> Sandbox {
        let (interpreter, interp, interpreter_problem) = match resolve_interpreter(options) {
            Ok((path, info)) => (path, info, None),
            Err(problem) => (PathBuf::new(), InterpreterInfo::default(), Some(problem)),
        };
        let helper = find_helper(options.helper.as_deref());
        let mut sandbox = Sandbox {
            interpreter,
            interpreter_problem,
            interpreter_chosen: options.interpreter.is_some(),
            interp,
            helper: helper.as_ref().ok().cloned(),
            helper_problem: helper.err(),
            reduced_allowed: options.allow_reduced,
            is_root: super::sys::is_root(),
            landlock_abi: super::sys::landlock_abi(),
            namespaces: NamespaceSource::Missing {
                bwrap_failed: false,
            },
            probed: Vec::new(),
            layers: Vec::new(),
            import_policy: options.import_policy.clone(),
            run_memory: None,
        };
        sandbox.probe_layers(options);
        sandbox
    }

    /// Names of the layers active for every run, e.g. ["hygiene", "rlimits", "landlock"].
    pub fn active_layers(&self) -> Vec<String> {
        self.layers
            .iter()
            .filter(|l| l.active)
            .map(|l| l.name.clone())
            .collect()
    }

    /// The import policy runs hold to.
    pub fn import_policy(&self) -> &super::ImportPolicy {
        &self.import_policy
    }

    /// This sandbox's probes (`codeloop doctor`) with the memory limit its
    /// runs are given, in bytes: the limit they show holds is that one.
    pub fn with_run_memory(mut self, bytes: u64) -> Sandbox {
        self.run_memory = Some(bytes);
        self
    }

    /// This sandbox with another import policy.
    pub fn with_import_policy(mut self, policy: super::ImportPolicy) -> Sandbox {
        self.import_policy = policy;
        self
    }

    /// Every layer, active or not, with why and what to do.
    pub fn layer_reports(&self) -> &[LayerReport] {
        &self.layers
    }

    /// The interpreter's version (e.g. "3.11.7"), or empty.
    pub fn interpreter_version(&self) -> &str {
        &self.interp.version
    }

    /// Why no interpreter could be used, if none could.
    pub fn interpreter_problem(&self) -> Option<&str> {
        self.interpreter_problem.as_deref()
    }
}

/// The interpreter: the one chosen, or the `python3` on PATH asked for its
/// real `sys.executable` (the one on PATH may be a slow shim).
fn resolve_interpreter(options: &SandboxOptions) -> Result<(PathBuf, InterpreterInfo), String> {
    let candidate = match options.interpreter.clone() {
        Some(p) => p,
        None => find_on_path("python3").ok_or_else(|| {
            "no python3 on PATH: install python3 or set CODELOOP_PYTHON".to_string()
        })?,
    };
    const SCRIPT: &str = "import sys, json\nprint(json.dumps({'executable': sys.executable, 'version': '%d.%d.%d' % sys.version_info[:3], 'paths': [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix] + sys.path}))";
    let mut cmd = Command::new(&candidate);
    cmd.args(["-E", "-s", "-c", SCRIPT]).stdin(Stdio::null());
    let output = cmd
        .output()
        .map_err(|e| format!("cannot start {}: {e}", candidate.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} failed: {}",
            candidate.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    #[derive(Deserialize)]
    struct Answer {
        executable: PathBuf,
        version: String,
        paths: Vec<PathBuf>,
    }
    let answer: Answer = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("{} did not describe itself: {e}", candidate.display()))?;
    let executable = if answer.executable.as_os_str().is_empty() {
        candidate
    } else {
        answer.executable
    };
    let mut paths: Vec<PathBuf> = Vec::new();
    let exe_real = std::fs::canonicalize(&executable).unwrap_or_else(|_| executable.clone());
    let mut all = answer.paths;
    all.push(executable.clone());
    all.push(exe_real);
    for p in all {
        let Ok(real) = std::fs::canonicalize(&p) else {
            continue;
        };
        for q in [p, real] {
            if q.is_absolute() && q.exists() && !paths.contains(&q) {
                paths.push(q);
            }
        }
    }
    // Keep the outermost of nested paths.
    paths.sort();
    let mut kept: Vec<PathBuf> = Vec::new();
    for p in paths {
        if !kept.iter().any(|k| p.starts_with(k)) {
            kept.push(p);
        }
    }
    Ok((
        executable,
        InterpreterInfo {
            paths: kept,
            version: answer.version,
        },
    ))
}

pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// The binary that understands `HELPER_ARG`: checked by asking it.
pub(crate) fn find_helper(explicit: Option<&Path>) -> Result<PathBuf, String> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = explicit {
        candidates.push(p.to_path_buf());
    }
    if let Ok(exe) = std::env::current_exe() {
        let name = format!("codeloop{}", std::env::consts::EXE_SUFFIX);
        if super::helper::is_this_binary_the_helper()
            || exe.file_name().is_some_and(|n| n == name.as_str())
        {
            candidates.push(exe.clone());
        }
        // Test and bench binaries live in target/<profile>/deps/.
        for dir in exe.ancestors().skip(1).take(2) {
            candidates.push(dir.join(&name));
        }
    }
    let mut last_problem = "no codeloop binary found".to_string();
    for c in candidates {
        let Ok(real) = std::fs::canonicalize(&c) else {
            continue;
        };
        let mut cmd = Command::new(&real);
        cmd.args([HELPER_ARG, "--probe"])
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        match cmd.output() {
            Ok(out)
                if out.status.success() && out.stdout.starts_with(b"codeloop sandbox helper") =>
            {
                return Ok(real);
            }
            Ok(_) => last_problem = format!("{} does not act as the helper", real.display()),
            Err(e) => last_problem = format!("cannot start {}: {e}", real.display()),
        }
    }
    Err(last_problem)
}

pub(crate) fn run_with_timeout(
    mut cmd: Command,
    timeout: Duration,
) -> Result<(bool, String), String> {
    let mut child = cmd
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut err = String::new();
                if let Some(mut s) = child.stderr.take() {
                    use std::io::Read;
                    let _ = s.read_to_string(&mut err);
                }
                return Ok((status.success(), err));
            }
            Ok(None) if started.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {} s", timeout.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(e.to_string()),
        }
    }
}
