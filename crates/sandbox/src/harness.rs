//! The Python test harness: runs a node's tests against its code (and its
//! dependencies' code) and reports per test, with enough detail to localize
//! a failure: frames, expected and actual values, the line the code under
//! test returned from, and the values of its variables along the failing
//! path (`values.py`, beside the harness).
//!
//! Each module is compiled under its own file name, so a traceback's line
//! numbers are the lines of the code as the model wrote it: no offsets to
//! correct, nothing prepended.

use serde::{Deserialize, Serialize};

use super::{Limits, RunSpec};
use codeloop_protocol::Snapshot;

/// The harness script, written into every test run's working directory.
pub const HARNESS_FILE: &str = "_codeloop_harness.py";
/// The runtime-values recorder the harness loads from beside itself.
pub const VALUES_FILE: &str = "_codeloop_values.py";
/// What the harness reads: the modules to load and the tests to run.
pub const MANIFEST_FILE: &str = "_codeloop_manifest.json";
/// What the harness writes; read back through `RunSpec::collect`.
pub const REPORT_FILE: &str = "_codeloop_report.json";

const HARNESS_PY: &str = include_str!("harness.py");
const VALUES_PY: &str = include_str!("values.py");

/// One module of code: a function's name and its source, with the modules
/// whose exports it uses (bound into its namespace after it is loaded).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModuleSource {
    pub name: String,
    pub code: String,
    pub deps: Vec<String>,
    /// The names it must define and gives to its dependents and the tests;
    /// empty means just `name`.
    pub exports: Vec<String>,
}

impl ModuleSource {
    /// The file this module is written to and compiled as.
    pub fn file_name(&self) -> String {
        format!("{}.py", self.name)
    }
}

/// The file a node's tests are written to.
pub fn tests_file_name(node: &str) -> String {
    format!("test_{node}.py")
}

#[derive(Serialize)]
struct Manifest<'a> {
    modules: Vec<ManifestModule<'a>>,
    target: &'a str,
    tests: Vec<&'a str>,
    report: &'static str,
    /// Seconds after which the harness stops the code where it is and
    /// reports that line, a little before the sandbox's wall-clock limit.
    time_limit: f64,
}

#[derive(Serialize)]
struct ManifestModule<'a> {
    name: &'a str,
    file: String,
    deps: &'a [String],
    exports: &'a [String],
}

/// A run of `target`'s tests. `modules` must list dependencies before the
/// modules that use them and include `target`; `tests` are (file name, code).
/// With no tests the modules are only loaded (a smoke run).
pub fn test_run(
    modules: &[ModuleSource],
    target: &str,
    tests: &[(String, String)],
    limits: Limits,
) -> RunSpec {
    let manifest = Manifest {
        modules: modules
            .iter()
            .map(|m| ManifestModule {
                name: &m.name,
                file: m.file_name(),
                deps: &m.deps,
                exports: &m.exports,
            })
            .collect(),
        target,
        tests: tests.iter().map(|(name, _)| name.as_str()).collect(),
        report: REPORT_FILE,
        time_limit: (limits.wall.as_secs_f64() * 0.9 - 0.2).max(0.3),
    };
    let mut files: Vec<(String, String)> = modules
        .iter()
        .map(|m| (m.file_name(), m.code.clone()))
        .collect();
    files.extend(tests.iter().cloned());
    // Serializing plain strings and slices cannot fail; an empty manifest
    // would make the harness report a load error rather than pass.
    files.push((
        MANIFEST_FILE.to_string(),
        serde_json::to_string(&manifest).unwrap_or_default(),
    ));
    files.push((HARNESS_FILE.to_string(), HARNESS_PY.to_string()));
    files.push((VALUES_FILE.to_string(), VALUES_PY.to_string()));
    RunSpec {
        files,
        script: HARNESS_FILE.to_string(),
        limits,
        collect: vec![REPORT_FILE.to_string()],
        guards_itself: true,
        ..RunSpec::default()
    }
}

/// What the harness reported.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TestReport {
    /// A module or the tests failed to load (syntax error, import error, an
    /// exception at import time): no test ran.
    pub load_error: Option<CaseError>,
    pub tests: Vec<CaseResult>,
    pub passed: u32,
    pub failed: u32,
    /// The harness itself failed (its traceback): codeloop's error, not
    /// the code's, which was not judged.
    #[serde(default)]
    pub harness_error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseResult {
    pub name: String,
    pub passed: bool,
    pub error: Option<CaseError>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseError {
    pub error_type: String,
    pub message: String,
    /// Outermost first, harness frames removed.
    pub frames: Vec<Frame>,
    pub expected: Option<String>,
    pub actual: Option<String>,
    /// For a wrong value: the line of the code under test that returned it.
    pub returned_from: Option<u32>,
    /// The target node's local variables along the failing path.
    #[serde(default)]
    pub values: Vec<Snapshot>,
    /// What the values leave out, and why.
    #[serde(default)]
    pub values_note: Option<String>,
    /// Lines of the node's file that ran in the failing test's re-run.
    #[serde(default)]
    pub executed_lines: Vec<u32>,
    /// Lines of the functions it went through that could have run and did not.
    #[serde(default)]
    pub missed_lines: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    pub file: String,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub function: Option<String>,
    pub code: String,
}

impl TestReport {
    /// Parse the report file's bytes.
    pub fn parse(bytes: &[u8]) -> Result<TestReport, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("the test report is not valid: {e}"))
    }

    /// The report from a finished run, if the harness got to write one.
    pub fn from_outcome(outcome: &super::Outcome) -> Option<TestReport> {
        outcome
            .collected
            .iter()
            .find(|(name, _)| name == REPORT_FILE)
            .and_then(|(_, bytes)| TestReport::parse(bytes).ok())
    }

    pub fn all_passed(&self) -> bool {
        self.load_error.is_none()
            && self.harness_error.is_none()
            && self.failed == 0
            && self.passed > 0
    }

    /// The first failure: a load error, else the first failed test.
    pub fn first_failure(&self) -> Option<(Option<&str>, &CaseError)> {
        if let Some(e) = &self.load_error {
            return Some((None, e));
        }
        self.tests
            .iter()
            .find(|t| !t.passed)
            .and_then(|t| t.error.as_ref().map(|e| (Some(t.name.as_str()), e)))
    }
}
