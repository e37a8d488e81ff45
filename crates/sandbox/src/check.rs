//! Static checks of Python code before it runs: syntax, imports that are not
//! installed, a missing or empty definition, and risky modules. A syntax
//! error, a missing or empty definition or a redefinition means the code
//! cannot run as it is (`is_blocking_kind`): the engine repairs it without
//! running it. Code that asks for it is mended first (`mend.py`: tabs,
//! indentation, top-level statements that do not parse, a function under
//! another name), and the mended code is what is checked (`Checked::mended`). The check
//! is no security boundary: the sandbox is. The check runs as a short Python program through
//! the sandbox like any other run, so it sees the same interpreter and modules.

use serde::{Deserialize, Serialize};

use super::{Limits, Outcome, RunSpec};

const CHECK_PY: &str = include_str!("check.py");
const MEND_PY: &str = include_str!("mend.py");
const MEND_MODULE: &str = "_codeloop_mend.py";
const CHECK_SCRIPT: &str = "_codeloop_check.py";
const CHECK_MANIFEST: &str = "_codeloop_check.json";
const CHECK_POLICY: &str = "_codeloop_policy.json";

/// One file to check, and the names it must define at top level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckInput {
    pub file: String,
    pub code: String,
    pub defines: Vec<String>,
    /// Top-level names other nodes define, with the node that defines each
    /// (a node's own function under its own name): this file must not define them too.
    pub foreign: std::collections::BTreeMap<String, String>,
    /// Mend the code first when it cannot run as it is (see `mend.py`).
    pub mend: bool,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckFinding {
    pub file: String,
    /// "syntax", "import", "definition", "empty" (a wanted function with
    /// only its docstring), "redefinition", "risky", "blocked" (an import
    /// the enforced import policy refuses)
    pub kind: String,
    pub line: Option<u32>,
    pub message: String,
}

impl CheckFinding {
    /// A finding that means the code cannot run as it is (the others are notes).
    pub fn is_blocking(&self) -> bool {
        is_blocking_kind(&self.kind)
    }
}

/// Whether a finding of `kind` means the code cannot run as it is: the
/// engine repairs such code without running it.
pub fn is_blocking_kind(kind: &str) -> bool {
    matches!(
        kind,
        "syntax" | "definition" | "empty" | "redefinition" | "blocked"
    )
}

#[derive(Serialize)]
struct ManifestEntry<'a> {
    file: &'a str,
    defines: &'a [String],
    foreign: &'a std::collections::BTreeMap<String, String>,
    mend: bool,
}

/// A file's code as the check mended it, and what was done, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mended {
    pub file: String,
    pub code: String,
    pub mends: Vec<String>,
}

/// What a check run found: the findings (of the mended code, where a file
/// was mended) and the files it mended.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct Checked {
    pub findings: Vec<CheckFinding>,
    #[serde(default)]
    pub mended: Vec<Mended>,
}

/// The run that checks `inputs` under the default import policy.
pub fn check_run(inputs: &[CheckInput]) -> RunSpec {
    check_run_with(inputs, &super::ImportPolicy::default())
}

/// The run that checks `inputs`, naming the imports `policy` blocks (a
/// failure where it is enforced, a note where not). Short limits: a check
/// parses, it does not execute.
pub fn check_run_with(inputs: &[CheckInput], policy: &super::ImportPolicy) -> RunSpec {
    let manifest: Vec<ManifestEntry> = inputs
        .iter()
        .map(|i| ManifestEntry {
            file: &i.file,
            defines: &i.defines,
            foreign: &i.foreign,
            mend: i.mend,
        })
        .collect();
    let mut files: Vec<(String, String)> = inputs
        .iter()
        .map(|i| (i.file.clone(), i.code.clone()))
        .collect();
    files.push((
        CHECK_MANIFEST.to_string(),
        serde_json::to_string(&manifest).unwrap_or_default(),
    ));
    files.push((
        CHECK_POLICY.to_string(),
        serde_json::to_string(policy).unwrap_or_default(),
    ));
    files.push((CHECK_SCRIPT.to_string(), CHECK_PY.to_string()));
    files.push((MEND_MODULE.to_string(), MEND_PY.to_string()));
    let limits = Limits {
        wall: std::time::Duration::from_secs(10),
        ..Limits::default()
    };
    RunSpec {
        files,
        script: CHECK_SCRIPT.to_string(),
        limits,
        unguarded: true,
        ..RunSpec::default()
    }
}

/// The findings a check run printed.
pub fn parse_findings(outcome: &Outcome) -> Result<Vec<CheckFinding>, String> {
    parse_check(outcome).map(|c| c.findings)
}

/// What a check run printed: its findings and the files it mended.
pub fn parse_check(outcome: &Outcome) -> Result<Checked, String> {
    let text = format!("{}{}", outcome.stdout.head, outcome.stdout.tail);
    if outcome.exit_code != Some(0) {
        let err = format!("{}{}", outcome.stderr.head, outcome.stderr.tail);
        return Err(format!(
            "the static check did not finish (exit {:?}): {}",
            outcome.exit_code,
            err.trim()
        ));
    }
    serde_json::from_str::<Checked>(text.trim())
        .map_err(|e| format!("the static check printed something unexpected: {e}"))
}
