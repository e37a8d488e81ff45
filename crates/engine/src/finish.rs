//! The end of a session (or of a pass of the workbench's): the program
//! assembled and run against every node's tests when every node passed,
//! exported with its tests and a markdown report, a solved task cached, and
//! the result recorded.

use codeloop_protocol::present::{count, plural};
use std::path::PathBuf;

use super::cache::{self, Solved};
use super::context::{Core, EngineError, Stop};
use super::decide;
use super::runs;
use super::steering::GateAnswer;
use codeloop_protocol::Location;
use codeloop_session::session_fs::{Folder, PRIVATE_FILE};
use codeloop_session::{
    Event, FinalResult, FinishedEvent, LocalizedEvent, Next, NodeStatus, NoticeLevel, ProgramEvent,
    ProgramOutput, ProgramOutputEvent, RunKind, State, Step, TapeError,
};

/// The assembled program and how its check went.
struct Checked {
    /// None when the plan cannot be assembled.
    program: Option<String>,
    /// Each node's tests, by file.
    tests: Vec<(String, String)>,
    nodes_total: u32,
    nodes_passed: u32,
    /// It ran against every node's tests and passed.
    passed: bool,
    /// What the summary says of it ("; the assembled program passed ...").
    note: String,
}

impl Core {
    /// Assemble the program, run it against every node's tests when every node
    /// passed, export it, and record the result.
    pub(crate) async fn finish(&self, cache_key: Option<&str>) -> Result<FinalResult, EngineError> {
        let Checked {
            program,
            tests,
            nodes_total,
            nodes_passed,
            passed: program_passed,
            mut note,
        } = self.check_program().await?;
        let all_nodes_passed = nodes_total > 0 && nodes_passed == nodes_total;
        let mut passed = all_nodes_passed && program_passed;
        if passed && let Some(code) = &program {
            passed = self.run_as_program(code, &mut note).await?;
        }
        let (output_dir, mut unwritten) = match self.export(program.as_deref(), &tests).await {
            Ok(dir) => (dir, None),
            Err(why) => (None, Some(why)),
        };
        let state = self.read(State::clone);
        if passed && let (Some(dir), Some(key)) = (&self.opts.cache_dir, cache_key) {
            self.cache(&state, dir, key).await?;
        }
        let summary = if self.cancel.is_cancelled() {
            format!("cancelled: {nodes_passed} of {nodes_total} functions passed before it stopped")
        } else {
            summary(&state, passed, (nodes_passed, nodes_total), &note)
        };
        let result = FinalResult {
            passed,
            nodes_passed,
            nodes_total,
            iterations: state.repair_iterations(),
            usage: state.usage,
            summary,
            output_dir: output_dir
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned()),
        };
        self.record(Event::Finished(FinishedEvent {
            result: result.clone(),
        }))
        .await?;
        if let Some(dir) = &output_dir
            && let Err(why) = self.write_report(dir).await
        {
            // Written from the state with its result folded in: the report
            // says what the workbench and `codeloop export` say.
            unwritten = Some(why);
        }
        self.tape.flush().await?;
        // Writing the results is part of the result.
        match unwritten {
            Some(why) => Err(EngineError::Output(why)),
            None => Ok(result),
        }
    }

    /// The program assembled and, when every node passed, run against
    /// every node's tests; a failure there repaired in the node it belongs
    /// to, and the program assembled and run again (the policy's
    /// `program_repairs`
    /// rounds at most in a pass: the failures the state says the program
    /// found, `State::program_repairs`, so a resume counts on).
    async fn check_program(&self) -> Result<Checked, EngineError> {
        loop {
            let (checked, failure) = self.assemble_and_run().await?;
            if let (Some(code), Some(location)) = (&checked.program, failure)
                && self.read(State::program_repairs) < self.opts.policy.program_repairs
                && !self.cancel.is_cancelled()
                && self.repair_in_program(code, location).await?
            {
                continue; // every node passes again: assemble and run once more
            }
            return Ok(checked);
        }
    }

    /// The program assembled from the state and on the tape, and run
    /// against every node's tests when every node passed; where it failed.
    async fn assemble_and_run(&self) -> Result<(Checked, Option<Location>), EngineError> {
        let (program, tests, nodes_total, nodes_passed) = self.read(|s| {
            (
                runs::assemble(s).ok(),
                runs::program_tests(s),
                s.nodes.len() as u32,
                s.nodes
                    .values()
                    .filter(|n| n.status == NodeStatus::Passed)
                    .count() as u32,
            )
        });
        let all_nodes_passed = nodes_total > 0 && nodes_passed == nodes_total;
        let mut passed = false;
        let mut note = String::new();
        let mut failure = None;
        if let Some(code) = &program {
            let joined = tests
                .iter()
                .map(|(file, t)| format!("# --- {file} ---\n{t}"))
                .collect::<Vec<_>>()
                .join("\n");
            self.record(Event::Program(ProgramEvent {
                code: code.clone(),
                tests: joined,
            }))
            .await?;
            if all_nodes_passed && !self.cancel.is_cancelled() && self.may_run_program().await? {
                let prepared = self.read(|s| runs::program_run(s, code, self.limits()));
                let (record, location) = self.execute(None, 0, RunKind::Program, prepared).await?;
                passed = record.passed;
                if let Some(l) = location {
                    note = format!("; the assembled program failed: {l}");
                    failure = Some(l);
                } else if let (Some(p), Some(f)) = (record.tests_passed, record.tests_failed) {
                    note = program_tests_note(p, f);
                }
            }
        }
        let checked = Checked {
            program,
            tests,
            nodes_total,
            nodes_passed,
            passed,
            note,
        };
        Ok((checked, failure))
    }

    /// In step mode, the program's run waits for the person's word (one
    /// pause for its run against every node's tests and, if it passes, its
    /// run from the entry point). False when it is skipped or cancelled.
    async fn may_run_program(&self) -> Result<bool, EngineError> {
        match self
            .gate(Step::Run {
                node: None,
                iteration: 0,
            })
            .await
        {
            GateAnswer::Go => Ok(true),
            GateAnswer::Skip => {
                self.notice(
                    NoticeLevel::Warning,
                    "the program's run was skipped: it is written out untested (not counted as passing)"
                        .to_string(),
                )
                .await?;
                Ok(false)
            }
            GateAnswer::Cancel => Ok(false),
        }
    }

    /// The passing program run as a program, when the plan has an entry
    /// point: what it printed, or how it failed, said in `note`; false when
    /// it failed.
    async fn run_as_program(&self, program: &str, note: &mut String) -> Result<bool, EngineError> {
        if !program.contains(super::entry::ENTRY_MARK) {
            return Ok(true);
        }
        let Some(output) = self.run_entry(program).await? else {
            return Ok(true);
        };
        if output.succeeded() {
            let printed = output.stdout.trim();
            if !printed.is_empty() {
                note.push_str(&format!("; it printed: {}", one_line(printed)));
            }
            return Ok(true);
        }
        note.push_str(&format!(
            "; but run as a program it failed: {}",
            output
                .limit_hit
                .clone()
                .unwrap_or_else(|| one_line(output.stderr.trim()))
        ));
        Ok(false)
    }

    /// The assembled program failed although every node passed: localize
    /// the failure to a node, repair it like any other failure, and run it
    /// and its dependents again. True when every node passes again.
    async fn repair_in_program(
        &self,
        program: &str,
        location: Location,
    ) -> Result<bool, EngineError> {
        if runs::codeloops_own(&location) {
            self.notice(
                NoticeLevel::Error,
                format!("the assembled program was not judged ({location}): codeloop's error, not the code's; not repaired"),
            )
            .await?;
            return Ok(false);
        }
        let Some(name) = self.read(|s| runs::node_of_failure(s, program, &location)) else {
            self.notice(
                NoticeLevel::Warning,
                format!("the assembled program failed ({location}), and no function's code is to blame: not repaired"),
            )
            .await?;
            return Ok(false);
        };
        let iteration = self.read(|s| s.nodes.get(&name).map(|n| n.iteration()).unwrap_or(0));
        if iteration >= self.opts.max_iterations {
            self.notice(
                NoticeLevel::Warning,
                format!("the assembled program failed in `{name}`, which has used its {iteration} iterations: not repaired"),
            )
            .await?;
            return Ok(false);
        }
        self.notice(
            NoticeLevel::Warning,
            format!("the assembled program failed in `{name}` although every function passed its own tests: repairing it"),
        )
        .await?;
        self.status(&name, NodeStatus::Failed).await?;
        // Its coverage is of the program's lines, not the node's file's.
        let location = Location {
            executed_lines: Vec::new(),
            missed_lines: Vec::new(),
            ..location
        };
        self.record(Event::Localized(LocalizedEvent {
            node: name.clone(),
            iteration,
            location,
        }))
        .await?;
        let stopped = |e: Stop| match e {
            Stop::Tape(e) => Err(EngineError::Tape(e)),
            Stop::Prompt(e) => Err(EngineError::Prompt(e)),
            Stop::Cancelled | Stop::Skipped | Stop::Budget | Stop::Failed | Stop::Model => {
                Ok(false)
            }
        };
        let (kind, why) = self.read(|s| decide::attempt_kind(s, &name, &self.opts.policy));
        let decision = decide::Decision::new(
            Next::Attempt { kind },
            format!("the assembled program failed in it; {why}"),
        );
        if let Err(e) = self.decided(&name, iteration, &decision).await {
            return stopped(e);
        }
        if let Err(e) = self.repair(&name, iteration, kind).await {
            self.status(&name, NodeStatus::GaveUp).await?;
            return stopped(e);
        }
        // The node, then everything that uses it, against their own tests.
        let impact = self.read(|s| {
            codeloop_session::Dag::new(s.specs.clone())
                .map(|d| d.impact(&name))
                .unwrap_or_default()
        });
        for node in std::iter::once(name.clone()).chain(impact) {
            if let Err(e) = self.node(&node).await {
                return stopped(e);
            }
            if self.read(|s| s.nodes.get(&node).map(|n| n.status)) != Some(NodeStatus::Passed) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Run the program through its entry point and record what it printed.
    async fn run_entry(&self, program: &str) -> Result<Option<ProgramOutput>, EngineError> {
        let mut spec = self.read(|s| runs::entry_run(s, program, self.limits()));
        spec.collect_images = true;
        let output = match self
            .sandbox
            .run(spec, None, self.cancel.child_token())
            .await
        {
            Ok(mut o) => {
                self.keep_pictures(None, std::mem::take(&mut o.images))
                    .await?;
                ProgramOutput {
                    stdout: format!("{}{}", o.stdout.head, o.stdout.tail),
                    stderr: format!("{}{}", o.stderr.head, o.stderr.tail),
                    exit_code: o.exit_code,
                    limit_hit: o
                        .limit_hit
                        .as_ref()
                        .map(codeloop_sandbox::LimitHit::describe),
                }
            }
            Err(codeloop_sandbox::ExecError::Cancelled) => return Ok(None),
            Err(e) => ProgramOutput {
                stdout: String::new(),
                stderr: format!("the program could not run: {e}"),
                exit_code: None,
                limit_hit: None,
            },
        };
        self.record(Event::ProgramOutput(ProgramOutputEvent {
            output: output.clone(),
        }))
        .await?;
        Ok(Some(output))
    }

    /// Store the solved task, so the same task with the same model and prompts replays at once.
    async fn cache(
        &self,
        state: &State,
        dir: &std::path::Path,
        key: &str,
    ) -> Result<(), TapeError> {
        let solved = Solved {
            specs: state.specs.clone(),
            tests: state
                .nodes
                .iter()
                .filter_map(|(k, n)| n.tests.clone().map(|t| (k.clone(), t)))
                .collect(),
            code: state
                .nodes
                .iter()
                .filter_map(|(k, n)| n.code().map(|c| (k.clone(), c.to_string())))
                .collect(),
        };
        if let Err(e) = cache::store(dir, key, &solved) {
            self.notice(
                NoticeLevel::Warning,
                format!("could not cache the solution in {}: {e}", dir.display()),
            )
            .await?;
        }
        Ok(())
    }

    /// The program and its tests (runnable with pytest too); the report
    /// follows once the result is on the tape (`write_report`).
    async fn export(
        &self,
        program: Option<&str>,
        tests: &[(String, String)],
    ) -> Result<Option<PathBuf>, String> {
        let Some(program) = program else {
            return Ok(None);
        };
        let dir = self
            .opts
            .output_dir
            .clone()
            .unwrap_or_else(|| self.dir.join("out"));
        let write = || -> std::io::Result<()> {
            let out = self.out_folder()?;
            out.write(
                &format!("{}.py", runs::PROGRAM),
                program.as_bytes(),
                PRIVATE_FILE,
            )?;
            for (file, text) in tests {
                out.write(file, text.as_bytes(), PRIVATE_FILE)?;
            }
            Ok(())
        };
        match write() {
            Ok(()) => Ok(Some(dir)),
            Err(e) => {
                let why = format!("could not write the program to {}: {e}", dir.display());
                let _ = self.notice(NoticeLevel::Error, why.clone()).await;
                Err(why)
            }
        }
    }

    /// The Markdown report of the session as the tape has it now (its
    /// result included), the same `codeloop export --format md` writes.
    async fn write_report(&self, dir: &std::path::Path) -> Result<(), String> {
        let report = self.read(codeloop_session::report::markdown);
        let path = dir.join("report.md");
        let written = self
            .out_folder()
            .and_then(|out| out.write("report.md", report.as_bytes(), PRIVATE_FILE));
        written.map_err(|e| {
            // After `Finished`: said here, not on the tape.
            format!("could not write the report to {}: {e}", path.display())
        })
    }
}

impl Core {
    /// Where the program, its tests and the report go: the folder the
    /// person named (`--out`), or `out/` in the session folder, which is
    /// refused when it is a link (a session folder handed over may hold
    /// one); no file there is written through a link either.
    fn out_folder(&self) -> std::io::Result<Folder> {
        match &self.opts.output_dir {
            Some(dir) => Folder::create(dir),
            None => Folder::open(&self.dir)?.sub("out", true),
        }
    }
}

/// Why a session that was not cancelled ended, in plain words.
/// `(passing, total)` counts the nodes as the end began.
fn summary(s: &State, passed: bool, (passing, total): (u32, u32), program_note: &str) -> String {
    if total == 0 {
        // In the person's words: the plan error is what the model was told.
        let asked = s
            .calls
            .values()
            .filter(|c| c.purpose == codeloop_session::Purpose::Plan)
            .count();
        return match &s.plan_error {
            Some(_) => format!(
                "no usable plan: the model was asked {asked} time{} and no reply held a plan codeloop can use",
                plural(asked)
            ),
            None if asked == 0 && s.steers.contains(&codeloop_session::Command::Skip) => {
                "no plan: you skipped the planning call".to_string()
            }
            None if asked == 0 => "no plan: the planning call was not made".to_string(),
            None => "no plan: the model call for the plan did not succeed".to_string(),
        };
    }
    if passed && total == 1 {
        return format!("the function passes its tests{program_note}");
    }
    if passed {
        return format!("all {total} functions pass their tests{program_note}");
    }
    let stuck: Vec<String> = s
        .nodes_in_order()
        .filter(|n| n.status != NodeStatus::Passed)
        .map(|n| {
            // Still at work as the session ends: the fold settles it as not run.
            let status = if n.status.in_flight() {
                NodeStatus::NotRun
            } else {
                n.status
            };
            format!("{} {}", n.spec.name, status.label())
        })
        .collect();
    if stuck.is_empty() {
        return format!(
            "every function passes its own tests, but the program does not{program_note}"
        );
    }
    format!(
        "{passing} of {total} functions pass ({}){program_note}",
        stuck.join(", ")
    )
}

/// Text on one line, cut short: for a summary.
fn one_line(text: &str) -> String {
    const MAX: usize = 200;
    let joined = text.lines().collect::<Vec<_>>().join(" | ");
    match joined.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}...", &joined[..i]),
        None => joined,
    }
}

/// What the assembled program's tests came to, as the summary says it.
fn program_tests_note(passed: u32, failed: u32) -> String {
    match (passed, failed) {
        (1, 0) => "; the assembled program passed its 1 test".into(),
        (p, 0) => format!("; the assembled program passed all {p} tests"),
        (p, f) => format!(
            "; the assembled program passed {}, {f} failed",
            count(p, "test")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::program_tests_note;

    #[test]
    fn the_programs_tests_are_counted_in_words() {
        assert_eq!(
            program_tests_note(1, 0),
            "; the assembled program passed its 1 test"
        );
        assert_eq!(
            program_tests_note(7, 0),
            "; the assembled program passed all 7 tests"
        );
        assert_eq!(
            program_tests_note(1, 2),
            "; the assembled program passed 1 test, 2 failed"
        );
        assert_eq!(
            program_tests_note(0, 3),
            "; the assembled program passed 0 tests, 3 failed"
        );
    }
}
