//! Check and run: the static check of a code version, and a prepared run
//! executed in the sandbox with its start, output and end on the tape, then
//! judged and localized (`runs::judge`).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use tokio::sync::mpsc;

use super::context::Core;
use super::runs::{self, PreparedRun};
use codeloop_protocol::Location;
use codeloop_protocol::failure::{BLOCKED_IMPORT, MISSING_DEFINITION, NO_BODY, REDEFINITION};
use codeloop_sandbox::check::{self, CheckInput};
use codeloop_sandbox::{ExecError, Limits, OutputChunk};
use codeloop_session::session_fs::Folder;
use codeloop_session::{
    CheckEvent, CodeEvent, CodeSource, Event, Finding, NoticeLevel, OutputEvent, RunFinishedEvent,
    RunKind, RunRecord, RunStartedEvent, State, TapeError,
};

/// Output of one run recorded on the tape at most; the rest is in the run's log file.
const OUTPUT_ON_TAPE: usize = 1 << 20;

/// Limits of one run from the session's settings.
pub(crate) fn limits_of(timeout_secs: u64, memory_mb: u64) -> Limits {
    Limits {
        wall: Duration::from_secs(timeout_secs.max(1)),
        cpu_secs: timeout_secs.max(1) + 1,
        memory_bytes: memory_mb.max(64) << 20,
        ..Limits::default()
    }
}

impl Core {
    pub(crate) fn limits(&self) -> Limits {
        limits_of(self.opts.run_timeout_secs, self.opts.memory_mb)
    }

    /// Check `name`'s latest code: syntax, imports, its definition. A
    /// finding that it cannot run (`blocking_failure`) is its failure; the
    /// others are notes. Code the model wrote that cannot run as it is is
    /// mended first where the fix is mechanical (`codeloop_sandbox::check`):
    /// the mended code is a version of its own, at the same iteration.
    pub(crate) async fn check(&self, name: &str, iteration: u32) -> Result<(), TapeError> {
        let Some((code, foreign, mend)) = self.read(|s| {
            let n = s.nodes.get(name)?;
            let version = n.versions.last()?;
            let mend = matches!(version.source, CodeSource::Model | CodeSource::PlanReply);
            Some((version.code.clone(), foreign_names(s, name), mend))
        }) else {
            return Ok(());
        };
        let file = format!("{name}.py");
        let spec = check::check_run_with(
            &[CheckInput {
                file: file.clone(),
                code: code.clone(),
                defines: vec![name.to_string()],
                foreign,
                mend,
            }],
            self.sandbox.import_policy(),
        );
        let (findings, mended) = match self
            .sandbox
            .run(spec, None, self.cancel.child_token())
            .await
        {
            Ok(outcome) => match check::parse_check(&outcome) {
                Ok(checked) => (
                    checked
                        .findings
                        .into_iter()
                        .map(|f| Finding {
                            kind: f.kind,
                            line: f.line,
                            message: f.message,
                        })
                        .collect(),
                    checked.mended.into_iter().find(|m| m.file == file),
                ),
                Err(message) => (
                    vec![Finding {
                        kind: "check".into(),
                        line: None,
                        message,
                    }],
                    None,
                ),
            },
            Err(ExecError::Cancelled) => return Ok(()),
            Err(e) => (
                vec![Finding {
                    kind: "check".into(),
                    line: None,
                    message: format!("the static check could not run: {e}"),
                }],
                None,
            ),
        };
        let node = name.to_string();
        self.tape
            .append_with(move |s| {
                // An edit that came while the check ran wins: its own check follows.
                let current = s.nodes.get(&node).and_then(|n| n.versions.last());
                if current.is_none_or(|v| v.iteration != iteration || v.code != code) {
                    return (Vec::new(), ());
                }
                let mut events = Vec::new();
                if let Some(m) = mended {
                    events.push(Event::Code(CodeEvent {
                        node: node.clone(),
                        iteration,
                        code: m.code,
                        source: CodeSource::Mended,
                        notes: m.mends,
                    }));
                }
                events.push(Event::Check(CheckEvent {
                    node,
                    iteration,
                    findings,
                }));
                (events, ())
            })
            .await
            .map(|_| ())
    }

    /// Run a prepared run in the sandbox, recording its start, output and end.
    pub(crate) async fn execute(
        &self,
        node: Option<&str>,
        iteration: u32,
        kind: RunKind,
        prepared: PreparedRun,
    ) -> Result<(RunRecord, Option<Location>), TapeError> {
        let run_node = node.map(str::to_string);
        let (_, run_id) = self
            .tape
            .append_with(move |s| {
                let run_id = s.next_run_id();
                let event = Event::RunStarted(RunStartedEvent {
                    run_id,
                    node: run_node,
                    iteration,
                    kind,
                });
                (vec![event], run_id)
            })
            .await?;
        let mut spec = prepared.spec.clone();
        spec.collect_images = true;
        let log = self.dir.join("logs").join(format!("run-{run_id}.log"));
        // Made here, private, refused when `logs/` or the file is a link or
        // a FIFO planted in a session folder handed over (`session_fs`);
        // the sandbox opens what is there without following a link.
        match made_log(&self.dir, run_id) {
            Ok(()) => spec.log_path = Some(log.clone()),
            Err(e) => {
                self.notice(
                    NoticeLevel::Warning,
                    format!("run {run_id} keeps no full output log: {e}"),
                )
                .await?;
            }
        }
        let (tx, rx) = mpsc::channel::<OutputChunk>(256);
        let forward = self.forward_output(run_id, rx, &log);
        let run = self.sandbox.run(spec, Some(tx), self.cancel.child_token());
        let (outcome, forwarded) = tokio::join!(run, forward);
        forwarded?;
        let (record, location) = match outcome {
            Ok(mut outcome) => {
                self.keep_pictures(Some(run_id), std::mem::take(&mut outcome.images))
                    .await?;
                runs::judge(&outcome, &prepared)
            }
            Err(e) => unrun(&e),
        };
        self.record(Event::RunFinished(RunFinishedEvent {
            run_id,
            record: record.clone(),
        }))
        .await?;
        Ok((record, location))
    }

    /// The output of run `run_id` onto the tape as it comes, up to
    /// `OUTPUT_ON_TAPE` bytes; past that, a notice says how much more is
    /// in its `log` only.
    async fn forward_output(
        &self,
        run_id: u64,
        mut rx: mpsc::Receiver<OutputChunk>,
        log: &Path,
    ) -> Result<(), TapeError> {
        let mut on_tape = 0usize;
        let mut dropped = 0u64;
        while let Some(pieces) = super::output::gather(&mut rx).await {
            for chunk in pieces {
                if on_tape >= OUTPUT_ON_TAPE {
                    dropped += chunk.text.len() as u64;
                    continue;
                }
                on_tape += chunk.text.len();
                self.record(Event::Output(OutputEvent {
                    run_id,
                    stream: chunk.stream,
                    text: chunk.text,
                }))
                .await?;
            }
        }
        if dropped > 0 {
            self.notice(
                NoticeLevel::Info,
                format!(
                    "run {run_id} printed {dropped} more bytes than the tape keeps; the whole output is in {}",
                    log.display()
                ),
            )
            .await?;
        }
        Ok(())
    }
}

/// `logs/run-N.log` in the session folder `dir`, made empty and private.
fn made_log(dir: &Path, run_id: u64) -> std::io::Result<()> {
    Folder::open(dir)?
        .sub("logs", true)?
        .create_file(&format!("run-{run_id}.log"))
        .map(drop)
}

/// The record of a run the sandbox could not make (or that was cancelled),
/// and its failure.
fn unrun(e: &ExecError) -> (RunRecord, Option<Location>) {
    let (error_type, message) = match e {
        ExecError::Cancelled => ("Cancelled", "the run was cancelled".to_string()),
        other => (runs::SANDBOX_ERROR, other.to_string()),
    };
    (
        RunRecord {
            passed: false,
            exit_code: None,
            signal: None,
            limit_hit: None,
            duration_ms: 0,
            dropped_bytes: 0,
            layers: Vec::new(),
            tests_passed: None,
            tests_failed: None,
            failed_tests: Vec::new(),
            resources: None,
        },
        Some(codeloop_sandbox::locate::from_limit(error_type, message)),
    )
}

/// The top-level functions and classes of every node but `name`, with the
/// node that defines each: each node's own function, and its helpers.
fn foreign_names(s: &State, name: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (other, n) in s.nodes.iter().filter(|(k, _)| *k != name) {
        for line in n.code().unwrap_or("").lines() {
            let defined = ["def ", "async def ", "class "]
                .iter()
                .find_map(|k| line.strip_prefix(k))
                .map(|rest| {
                    rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .next()
                        .unwrap_or("")
                });
            if let Some(helper) = defined.filter(|h| !h.is_empty()) {
                out.entry(helper.to_string())
                    .or_insert_with(|| other.clone());
            }
        }
        out.insert(other.clone(), other.clone());
    }
    out
}

/// Whether a blocking failure says the model's reply was no function at
/// all (it does not parse, or the function has no body, or is not there):
/// such a reply is asked for again rather than sent back to be repaired
/// (SmolLM2-135M, shown its own syntax error, wrote it again).
pub(crate) fn unreadable(location: &Location) -> bool {
    location.kind().unreadable()
}

/// The check's finding that `name`'s code cannot run as it is, as a failure
/// to repair: a syntax error, the planned function missing, or another
/// node's function defined again (in the assembled program one definition
/// would silently replace the other). Such code is never run: a run could
/// only fail the same way, or, for a redefinition, pass by the wrong code.
pub(crate) fn blocking_failure(state: &State, name: &str) -> Option<Location> {
    let n = state.nodes.get(name)?;
    // One finding is enough; a syntax error says the most.
    let finding = n
        .findings
        .iter()
        .filter(|f| check::is_blocking_kind(&f.kind))
        .min_by_key(|f| match f.kind.as_str() {
            "syntax" => 0,
            "redefinition" => 1,
            "blocked" => 2,
            _ => 3,
        })?;
    let code = n.code().unwrap_or("");
    let context = finding
        .line
        .map(|line| {
            code.lines()
                .enumerate()
                .map(|(i, text)| (i as u32 + 1, text.to_string()))
                .filter(|(i, _)| i + 2 >= line && *i <= line + 2)
                .collect()
        })
        .unwrap_or_default();
    let (error_type, message) = match finding.kind.as_str() {
        // check.py says "SyntaxError: invalid syntax" (or IndentationError, ...).
        "syntax" => match finding.message.split_once(": ") {
            Some((kind, message)) => (kind.to_string(), message.to_string()),
            None => ("SyntaxError".to_string(), finding.message.clone()),
        },
        "definition" => (MISSING_DEFINITION.to_string(), finding.message.clone()),
        "blocked" => (BLOCKED_IMPORT.to_string(), finding.message.clone()),
        "empty" => (NO_BODY.to_string(), finding.message.clone()),
        _ => (REDEFINITION.to_string(), finding.message.clone()),
    };
    Some(Location {
        file: format!("{name}.py"),
        line: finding.line,
        function: Some(name.to_string()),
        error_type,
        message,
        context,
        in_node_code: true,
        ..Location::default()
    })
}
