//! What a session's runs used, from its tape: each run's CPU time and peak
//! memory (`RunRecord::resources`), summed per node (and for the assembled
//! program) and for the whole session. `run`'s summary, the Markdown
//! report, the HTML export and `bench` print these.

use codeloop_protocol::present::plural;
use codeloop_protocol::resources::Resources;

use super::event::RunKind;
use super::state::State;

/// The runs of one node (or of the program) and what they used together:
/// CPU time summed, the largest peak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFigures {
    /// The node's name, or `None` for the assembled program.
    pub(crate) node: Option<String>,
    /// Runs measured.
    pub runs: u32,
    pub total: Resources,
}

impl RunFigures {
    /// `sign: 2 runs, CPU 60 ms, peak 9.8 MiB`.
    pub fn line(&self) -> String {
        format!(
            "{}: {} run{}, {}",
            self.node.as_deref().unwrap_or("program"),
            self.runs,
            plural(self.runs),
            self.total.short()
        )
    }
}

/// Per node in the plan's order (nodes without a measured run left out),
/// then the program's runs.
pub fn per_node(state: &State) -> Vec<RunFigures> {
    let mut out: Vec<RunFigures> = Vec::new();
    for run in state.runs.values() {
        let Some(res) = run.record.as_ref().and_then(|r| r.resources) else {
            continue;
        };
        let node = match run.kind {
            RunKind::Program => None,
            RunKind::NodeTests => run.node.clone(),
        };
        match out.iter_mut().find(|f| f.node == node) {
            Some(f) => {
                f.runs += 1;
                f.total = Resources::total(&[f.total, res]).unwrap_or(res);
            }
            None => out.push(RunFigures {
                node,
                runs: 1,
                total: res,
            }),
        }
    }
    let order = |f: &RunFigures| match &f.node {
        Some(n) => state
            .specs
            .iter()
            .position(|s| &s.name == n)
            .unwrap_or(usize::MAX - 1),
        None => usize::MAX,
    };
    out.sort_by_key(order);
    out
}

/// Every measured run of the session together.
pub fn total(state: &State) -> Option<RunFigures> {
    let all = per_node(state);
    let total = Resources::total(all.iter().map(|f| &f.total))?;
    Some(RunFigures {
        node: None,
        runs: all.iter().map(|f| f.runs).sum(),
        total,
    })
}

/// `4 runs, CPU 1.20 s, peak 98 MiB`: the session's runs in one line.
pub fn total_line(state: &State) -> Option<String> {
    total(state).map(|t| format!("{} run{}, {}", t.runs, plural(t.runs), t.total.short()))
}
