//! What a run executes, derived from the session state: a node's tests
//! against its code and its dependencies' code, or the assembled program
//! against every node's tests. One function serves the engine's own runs and
//! the live replay's re-execution, so both run exactly the same files.

use codeloop_protocol::Location;
use codeloop_sandbox::harness::{self, ModuleSource};
use codeloop_sandbox::locate;
use codeloop_sandbox::{LimitHit, Limits, Outcome, RunSpec};
use codeloop_session::{Dag, RunRecord, State};

/// A run ready to go, with what localization needs to read its result.
pub(crate) struct PreparedRun {
    pub(crate) spec: RunSpec,
    /// Files that count as code under test (blamed before test files).
    code_files: Vec<String>,
    /// The file of the node under test.
    target_file: String,
}

/// The failure of a run whose code loaded but that had no test to run
/// (what its message starts with; older tapes have these words alone),
/// and the error types of a run that failed for codeloop's own reasons
/// (its test harness failed, or the sandbox could not run it): the words
/// the tape keeps; the decisions read their kinds (`Location::kind`).
pub(crate) use codeloop_protocol::failure::{HARNESS_ERROR, NO_TEST_RAN, RUN_ERROR, SANDBOX_ERROR};

/// Whether the failure is codeloop's own, not the code's: the code was
/// not judged, so it is never sent to a repair.
pub(crate) fn codeloops_own(location: &Location) -> bool {
    location.kind().codeloops_own()
}

/// The module name and file of the assembled program.
pub use codeloop_session::PROGRAM;

/// The node that is the program's entry point, when the plan has one: run
/// as a program, it prints what `main()` returns.
pub(crate) const ENTRY: &str = "main";

/// The run of `node`'s tests with its code at `iteration` (None = latest)
/// and its dependencies' latest code.
pub(crate) fn node_run(
    state: &State,
    node: &str,
    iteration: Option<u32>,
    limits: Limits,
) -> Result<PreparedRun, String> {
    let dag = Dag::new(state.specs.clone()).map_err(|e| e.to_string())?;
    let mut modules = Vec::new();
    for name in dag
        .dependencies(node)
        .iter()
        .chain(std::iter::once(&node.to_string()))
    {
        let n = state
            .nodes
            .get(name)
            .ok_or_else(|| format!("`{name}` is not in the plan"))?;
        let code = if name == node {
            match iteration {
                Some(it) => n
                    .versions
                    .iter()
                    .rev()
                    .find(|v| v.iteration == it)
                    .map(|v| v.code.clone()),
                None => n.code().map(str::to_string),
            }
        } else {
            n.code().map(str::to_string)
        };
        let code = code.ok_or_else(|| format!("`{name}` has no code yet"))?;
        modules.push(ModuleSource {
            name: name.clone(),
            code,
            deps: n.spec.depends_on.clone(),
            exports: Vec::new(),
        });
    }
    let tests: Vec<(String, String)> = state
        .nodes
        .get(node)
        .and_then(|n| n.tests.clone())
        .map(|t| vec![(harness::tests_file_name(node), t)])
        .unwrap_or_default();
    let code_files = modules.iter().map(ModuleSource::file_name).collect();
    let mut spec = harness::test_run(&modules, node, &tests, limits);
    spec.inputs = input_paths(state);
    Ok(PreparedRun {
        spec,
        code_files,
        target_file: format!("{node}.py"),
    })
}

/// The assembled program: every node's latest code, dependencies first.
pub fn assemble(state: &State) -> Result<String, String> {
    let dag = Dag::new(state.specs.clone()).map_err(|e| e.to_string())?;
    let mut program = String::from("# Assembled by codeloop: one function per planned node.\n");
    for name in dag.topological_order() {
        let code = state
            .nodes
            .get(&name)
            .and_then(|n| n.code())
            .ok_or_else(|| format!("`{name}` has no code"))?;
        program.push_str(&format!("\n# --- {name} ---\n"));
        program.push_str(code.trim_end());
        program.push('\n');
    }
    if let Some(entry) = super::entry::block(state, &dag) {
        program.push_str(&entry);
    }
    Ok(program)
}

/// The node a failure of the assembled program belongs to: the node whose
/// section of `program` holds the failing line, else the node whose tests
/// failed, else the node that defines the failing function.
pub(crate) fn node_of_failure(state: &State, program: &str, location: &Location) -> Option<String> {
    let known = |n: &str| state.nodes.contains_key(n).then(|| n.to_string());
    if location.file == format!("{PROGRAM}.py")
        && let Some(line) = location.line
    {
        let section = program
            .lines()
            .take(line as usize)
            .filter_map(|l| l.strip_prefix("# --- ")?.strip_suffix(" ---"))
            .last();
        if let Some(node) = section.and_then(known) {
            return Some(node);
        }
    }
    if let Some(node) = location
        .file
        .strip_prefix("test_")
        .and_then(|f| f.strip_suffix(".py"))
        .and_then(known)
    {
        return Some(node);
    }
    let function = location.function.as_deref()?;
    known(function).or_else(|| {
        state
            .nodes
            .iter()
            .find(|(_, n)| {
                n.code()
                    .is_some_and(|c| c.contains(&format!("def {function}(")))
            })
            .map(|(k, _)| k.clone())
    })
}

/// Every node's tests as files that run against the exported program
/// (`from program import *` first, so they also run under pytest).
pub fn program_tests(state: &State) -> Vec<(String, String)> {
    state
        .nodes_in_order()
        .filter_map(|n| {
            n.tests.as_ref().map(|t| {
                (
                    harness::tests_file_name(&n.spec.name),
                    format!("from {PROGRAM} import *\n\n{t}"),
                )
            })
        })
        .collect()
}

/// The run of the assembled program against every node's tests.
pub(crate) fn program_run(state: &State, program: &str, limits: Limits) -> PreparedRun {
    let module = ModuleSource {
        name: PROGRAM.to_string(),
        code: program.to_string(),
        deps: Vec::new(),
        exports: state.specs.iter().map(|s| s.name.clone()).collect(),
    };
    let tests = program_tests(state);
    let mut spec = harness::test_run(&[module], PROGRAM, &tests, limits);
    spec.inputs = input_paths(state);
    PreparedRun {
        spec,
        code_files: vec![format!("{PROGRAM}.py")],
        target_file: format!("{PROGRAM}.py"),
    }
}

/// The assembled program run as a program (its entry point), with the task's input files.
pub(crate) fn entry_run(state: &State, program: &str, limits: Limits) -> codeloop_sandbox::RunSpec {
    codeloop_sandbox::RunSpec {
        files: vec![(format!("{PROGRAM}.py"), program.to_string())],
        inputs: input_paths(state),
        script: format!("{PROGRAM}.py"),
        limits,
        ..codeloop_sandbox::RunSpec::default()
    }
}

/// The input files a run gets: those still as the tape describes them
/// (`tape_check::input_matches`: a resumed tape handed over may name one
/// of the reader's own files, which no run of its code may read).
pub(crate) fn input_paths(state: &State) -> Vec<std::path::PathBuf> {
    state
        .inputs
        .iter()
        .filter(|f| codeloop_session::tape_check::input_matches(f).is_ok())
        .map(|f| std::path::PathBuf::from(&f.source_path))
        .collect()
}

/// The error type a limit hit is localized as (its words come from `LimitHit::describe`).
fn limit_kind(hit: &LimitHit) -> &'static str {
    match hit {
        LimitHit::WallTimeout(_) => "Timeout",
        LimitHit::CpuTime(_) => "CpuLimit",
        LimitHit::Memory(_) => "MemoryLimit",
        LimitHit::FileSize(_) => "FileSizeLimit",
        LimitHit::Output(_) => "OutputLimit",
        LimitHit::Disk(_) => "DiskLimit",
        LimitHit::Processes(_) => "ProcessLimit",
        LimitHit::Files(_) => "FileCountLimit",
    }
}

/// How a run ended, as the tape keeps it, and the failure localized.
pub(crate) fn judge(outcome: &Outcome, prepared: &PreparedRun) -> (RunRecord, Option<Location>) {
    let report = harness::TestReport::from_outcome(outcome);
    let passed = outcome.exit_code == Some(0)
        && outcome.limit_hit.is_none()
        && report.as_ref().is_some_and(|r| r.all_passed());
    let record = RunRecord {
        passed,
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        limit_hit: outcome
            .limit_hit
            .as_ref()
            .map(|hit| hit.describe_with(outcome.usage.as_ref())),
        duration_ms: outcome.duration.as_millis() as u64,
        dropped_bytes: outcome.stdout.dropped_bytes + outcome.stderr.dropped_bytes,
        layers: outcome.layers.clone(),
        tests_passed: report.as_ref().map(|r| r.passed),
        tests_failed: report.as_ref().map(|r| r.failed),
        failed_tests: report
            .as_ref()
            .map(|r| {
                r.tests
                    .iter()
                    .filter(|t| !t.passed)
                    .map(|t| t.name.clone())
                    .collect()
            })
            .unwrap_or_default(),
        resources: outcome.usage,
    };
    if passed {
        return (record, None);
    }
    let sources = &prepared.spec.files;
    let stderr = format!("{}{}", outcome.stderr.head, outcome.stderr.tail);
    let harness_error = report.as_ref().and_then(|r| r.harness_error.as_deref());
    let loc = if let Some(text) = harness_error {
        // The traceback's last line says what went wrong.
        let what = text.trim_end().lines().last().unwrap_or("").trim();
        locate::from_limit(
            HARNESS_ERROR,
            format!(
                "codeloop's test harness failed ({what}): codeloop's error, not the code's, which was not judged"
            ),
        )
    } else if let Some(hit) = &outcome.limit_hit {
        // Where it was when the limit hit, if Python got to say.
        let mut l = locate::locate(&stderr, sources).unwrap_or_default();
        l.error_type = limit_kind(hit).to_string();
        l.message = format!(
            "stopped by the {}",
            hit.describe_with(outcome.usage.as_ref())
        );
        l
    } else if let Some(l) = report
        .as_ref()
        .and_then(|r| locate::from_report(r, sources, &prepared.code_files, &prepared.target_file))
    {
        l
    } else if let Some(l) = locate::locate(&stderr, sources) {
        l
    } else {
        let message = match (outcome.exit_code, outcome.signal) {
            (_, Some(sig)) => format!("the program was killed by signal {sig}"),
            (Some(0), None) if report.as_ref().is_some_and(|r| r.passed == 0) => format!(
                "{NO_TEST_RAN}: it has no tests, so it cannot pass; write them (in the workbench, its tests tab: t, then e) and run it again"
            ),
            (Some(code), None) => format!("the program exited with code {code} and no traceback"),
            (None, None) => "the program ended without an exit code".to_string(),
        };
        locate::from_limit(RUN_ERROR, message)
    };
    let in_node_code = prepared.code_files.contains(&loc.file);
    (
        record,
        Some(Location {
            in_node_code,
            ..loc
        }),
    )
}
