//! The fold of runs: started, their output, how they ended; the assembled program's.

use super::*;

impl State {
    /// A run started.
    pub(super) fn fold_run_started(&mut self, e: &RunStartedEvent) {
        let mut version = None;
        let mut tests_version = 0;
        if let Some(n) = e.node.as_ref().and_then(|n| self.nodes.get_mut(n)) {
            n.last_run = Some(e.run_id);
            n.unsettle();
            n.run_approved = false;
            version = n.versions.len().checked_sub(1);
            tests_version = n.tests_version;
        }
        self.runs.insert(
            e.run_id,
            RunState {
                node: e.node.clone(),
                iteration: e.iteration,
                kind: e.kind,
                version,
                tests_version,
                chunks: VecDeque::new(),
                kept_bytes: 0,
                dropped_bytes: 0,
                record: None,
                cancelled: false,
            },
        );
    }

    /// A chunk of a run's output.
    pub(super) fn fold_output(&mut self, e: &OutputEvent) {
        if let Some(run) = self.runs.get_mut(&e.run_id) {
            run.push_output(e.stream, &e.text);
        }
    }

    /// How a run ended.
    pub(super) fn fold_run_finished(&mut self, e: &RunFinishedEvent) {
        let (run_id, record) = (e.run_id, &e.record);
        let cancelled = self.cancelled;
        if let Some(run) = self.runs.get_mut(&run_id) {
            // A run the program ended (an exit, a signal, a limit) is a
            // verdict on the code; one cancelled, or that the sandbox
            // could not start, is not: a resume runs it again.
            let verdict =
                record.exit_code.is_some() || record.signal.is_some() || record.limit_hit.is_some();
            if let Some(n) = run.node.as_ref().and_then(|n| self.nodes.get_mut(n))
                && n.iteration() == run.iteration
                && verdict
            {
                n.settled_run = Some(run_id);
            }
            run.record = Some(record.clone());
            run.cancelled = cancelled;
            self.history.push(HistoryEntry::RunResult {
                node: run.node.clone(),
                iteration: run.iteration,
                run_id,
                passed: record.passed,
            });
        }
    }

    /// The assembled program.
    pub(super) fn fold_program(&mut self, e: &ProgramEvent) {
        self.program = Some(Program {
            code: e.code.clone(),
            tests: e.tests.clone(),
        })
    }
}
