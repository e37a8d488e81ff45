//! Full or reduced: whether every layer is active, what is missing, and
//! whether runs may go ahead in the reduced sandbox (only when chosen).

use super::{ExecError, Sandbox};

/// How much of the sandbox this machine gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxMode {
    /// Every layer: namespaces, an unprivileged uid, rlimits, Landlock, seccomp.
    Full,
    /// Some layer is missing (most often the namespaces); the rest are
    /// hardened to make up for it, but the host's files are in view.
    Reduced,
}

impl SandboxMode {
    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::Full => "full",
            SandboxMode::Reduced => "reduced",
        }
    }
}

impl Sandbox {
    /// Full when every layer is active.
    pub fn mode(&self) -> SandboxMode {
        if self.layers.iter().all(|l| l.active) {
            SandboxMode::Full
        } else {
            SandboxMode::Reduced
        }
    }

    /// Names of the layers that are not active here.
    pub fn missing_layers(&self) -> Vec<String> {
        self.layers
            .iter()
            .filter(|l| !l.active)
            .map(|l| l.name.clone())
            .collect()
    }

    /// One line for every run's output (and the status bar) when the
    /// sandbox is not full; `None` when it is.
    pub fn warning(&self) -> Option<String> {
        match self.mode() {
            SandboxMode::Full => None,
            SandboxMode::Reduced => Some(format!(
                "REDUCED SANDBOX: {} not active; generated code sees this machine's files (read-only) with fewer protections. `codeloop doctor` says what to do.",
                self.missing_layers().join(", ")
            )),
        }
    }

    /// The warning in red for a terminal.
    pub fn warning_red(&self) -> Option<String> {
        self.warning().map(|w| format!("\x1b[1;31m{w}\x1b[0m"))
    }

    /// Whether runs go ahead in this mode: always in the full sandbox, in
    /// the reduced one only when it was chosen.
    pub fn runs_allowed(&self) -> bool {
        self.mode() == SandboxMode::Full || self.reduced_allowed
    }

    pub fn refuse_unless_allowed(&self) -> Result<(), ExecError> {
        if self.is_root && !self.drop_uid() {
            return Err(ExecError::Refused(
                "codeloop runs as root without namespaces and the interpreter is not readable by other users, so runs would stay root: refused. Set CODELOOP_PYTHON to a system interpreter such as /usr/bin/python3, or give codeloop the namespaces `codeloop doctor` asks for.".into(),
            ));
        }
        if self.runs_allowed() {
            return Ok(());
        }
        Err(ExecError::Refused(format!(
            "only the reduced sandbox is available here ({} not active), so generated code is not run. Fix what `codeloop doctor` names, or accept the weaker sandbox with --sandbox reduced (config: sandbox = \"reduced\"; or CODELOOP_SANDBOX=reduced).",
            self.missing_layers().join(", ")
        )))
    }
}
