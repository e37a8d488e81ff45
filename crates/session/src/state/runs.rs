//! The fold of runs: started, their output, how they ended; the assembled program's.

use super::*;

impl State {
    /// A run: started, its output, how it ended.
    pub(super) fn fold_runs(&mut self, event: &Event) {
        match event {
            Event::RunStarted {
                run_id,
                node,
                iteration,
                kind,
            } => {
                if let Some(n) = node.as_ref().and_then(|n| self.nodes.get_mut(n)) {
                    n.last_run = Some(*run_id);
                    n.unsettle();
                    n.run_approved = false;
                }
                self.runs.insert(
                    *run_id,
                    RunState {
                        node: node.clone(),
                        iteration: *iteration,
                        kind: *kind,
                        chunks: VecDeque::new(),
                        kept_bytes: 0,
                        dropped_bytes: 0,
                        record: None,
                    },
                );
            }
            Event::Output {
                run_id,
                stream,
                text,
            } => {
                if let Some(run) = self.runs.get_mut(run_id) {
                    run.push_output(*stream, text);
                }
            }
            Event::RunFinished { run_id, record } => {
                if let Some(run) = self.runs.get_mut(run_id) {
                    // A run the program ended (an exit, a signal, a limit) is a
                    // verdict on the code; one cancelled, or that the sandbox
                    // could not start, is not: a resume runs it again.
                    let verdict = record.exit_code.is_some()
                        || record.signal.is_some()
                        || record.limit_hit.is_some();
                    if let Some(n) = run.node.as_ref().and_then(|n| self.nodes.get_mut(n))
                        && n.iteration() == run.iteration
                        && verdict
                    {
                        n.settled_run = Some(*run_id);
                    }
                    run.record = Some(record.clone());
                    self.history.push(HistoryEntry::RunResult {
                        node: run.node.clone(),
                        iteration: run.iteration,
                        run_id: *run_id,
                        passed: record.passed,
                    });
                }
            }
            _ => {}
        }
    }

    /// The assembled program, what it printed through its entry point,
    /// and the pictures runs left.
    pub(super) fn fold_program(&mut self, event: &Event) {
        match event {
            Event::Program { code, tests } => {
                self.program = Some(Program {
                    code: code.clone(),
                    tests: tests.clone(),
                })
            }
            Event::ProgramOutput { output } => self.program_output = Some(output.clone()),
            Event::Picture { run_id, picture } => self.pictures.push(RunPicture {
                run_id: *run_id,
                picture: picture.clone(),
            }),
            _ => {}
        }
    }
}
