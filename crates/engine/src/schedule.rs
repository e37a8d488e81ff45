//! Scheduling: the session from start to end, and each pass over the plan's
//! DAG. A pass runs its nodes in parallel as far as their dependencies and
//! the worker limit allow; a node whose dependency did not pass is blocked.
//! After a pass, the nodes the state has queued (re-runs, edits) and their
//! dependents get another; a session kept alive for the workbench waits for
//! such work once it has finished.

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::context::{Core, EngineError, Opening, Stop};
use codeloop_session::state::NodeState;
use codeloop_session::{Dag, FinalResult, NodeStatus, NoticeLevel, State, TapeError};

impl Core {
    pub(crate) async fn session(
        self: &Arc<Self>,
        opening: Opening,
    ) -> Result<FinalResult, EngineError> {
        let (cache_key, mut todo) = match opening {
            Opening::Fresh { started, cache_key } => {
                self.record(started).await?;
                if self.model.provider() == "demo" {
                    self.notice(
                        NoticeLevel::Info,
                        "demo model: its replies are authored fixtures, played back offline; the runs, failures and repairs are real".into(),
                    )
                    .await?;
                }
                if !self.plan(cache_key.as_deref()).await? {
                    return self.finish(cache_key.as_deref()).await;
                }
                let todo = self.read(|s| order_of(s, None));
                (cache_key, todo)
            }
            Opening::Continued { resumed, commands } => {
                self.record(resumed).await?;
                for command in commands {
                    self.steer(command).await;
                }
                let planned = self.read(|s| !s.specs.is_empty());
                if !self.cancel.is_cancelled() && !planned && !self.plan(None).await? {
                    return self.finish(None).await;
                }
                // Every node not passed yet, whatever stopped it.
                let todo = self.read(|s| order_with(s, &[], |n| n.status != NodeStatus::Passed));
                (None, todo)
            }
        };
        let cache_key = cache_key.as_deref();
        loop {
            if self.read(|s| s.replan) && !self.cancel.is_cancelled() {
                self.replan().await?;
                // New nodes and changed ones start afresh (pending); unchanged
                // ones keep their tests and code, and run again only when a
                // dependency changed.
                todo = self.read(|s| order_with(s, &todo, |n| n.status == NodeStatus::Pending));
            }
            self.pass(&todo).await?;
            todo = self.read(queued_work);
            let more = !todo.is_empty() || self.read(|s| s.replan);
            if more && !self.cancel.is_cancelled() {
                continue;
            }
            let result = self.finish(cache_key).await?;
            if !self.opts.keep_alive || self.cancel.is_cancelled() {
                return Ok(result);
            }
            // Idle until a command queues work or edits the task (a wake-up
            // with nothing queued, left over from work a pass already took,
            // waits on).
            loop {
                tokio::select! {
                    _ = self.steering.work.notified() => {}
                    _ = self.cancel.cancelled() => return Ok(result),
                }
                todo = self.read(queued_work);
                if !todo.is_empty() || self.read(|s| s.replan) {
                    break;
                }
            }
        }
    }

    /// Run the nodes of `todo` (topological order): each waits for those of
    /// its dependencies that are in the pass, at most `workers` at a time.
    async fn pass(self: &Arc<Self>, todo: &[String]) -> Result<(), EngineError> {
        // Pending marks a node as taken by this pass (and clears its queued flag).
        for name in todo {
            self.status(name, NodeStatus::Pending).await?;
        }
        let workers = Arc::new(Semaphore::new(self.opts.workers.max(1)));
        let mut tasks = JoinSet::new();
        for name in todo {
            let core = self.clone();
            let name = name.clone();
            let workers = workers.clone();
            tasks.spawn(async move {
                let result = core.node_when_ready(&name, workers).await;
                core.node_done.notify_waiters();
                result
            });
        }
        let mut first_err = None;
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    self.cancel.cancel();
                    first_err.get_or_insert(e);
                }
                Err(join) => {
                    self.cancel.cancel();
                    first_err.get_or_insert(EngineError::Internal(format!(
                        "a node's task failed: {join}"
                    )));
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Wait until no dependency of `name` is at work (every node of a pass
    /// ends passed, blocked or given up unless the session is cancelled),
    /// then take a worker and work on the node, or block it.
    async fn node_when_ready(
        &self,
        name: &str,
        workers: Arc<Semaphore>,
    ) -> Result<(), EngineError> {
        let deps = self.read(|s| {
            Dag::new(s.specs.clone())
                .map(|d| d.dependencies(name))
                .unwrap_or_default()
        });
        loop {
            let done = self.node_done.notified();
            let waiting = self.read(|s| {
                deps.iter()
                    .any(|d| s.nodes.get(d).is_some_and(|n| !n.status.is_terminal()))
            });
            if !waiting {
                break;
            }
            tokio::select! {
                _ = done => {}
                _ = self.cancel.cancelled() => return Ok(()),
            }
        }
        let Ok(_permit) = workers.acquire().await else {
            return Ok(());
        };
        let outcome = match self.blocked_by(name, &deps).await {
            Ok(true) => Ok(()),
            Ok(false) => self.node(name).await,
            Err(e) => Err(Stop::Tape(e)),
        };
        match outcome {
            Err(Stop::Tape(e)) => Err(e.into()),
            Err(Stop::Prompt(e)) => Err(e.into()),
            // A node stops unfinished only when the session is cancelled; make
            // sure of it, since its dependents wait for it to finish.
            Err(Stop::Cancelled) => {
                self.cancel.cancel();
                Ok(())
            }
            Ok(()) | Err(Stop::Skipped | Stop::Budget | Stop::Failed | Stop::Model) => Ok(()),
        }
    }

    /// Block `name` if one of its dependencies did not pass; whether it did.
    async fn blocked_by(&self, name: &str, deps: &[String]) -> Result<bool, TapeError> {
        if self.cancel.is_cancelled() {
            return Ok(false);
        }
        let failed_dep = self.read(|s| {
            deps.iter()
                .find(|d| !s.nodes.get(*d).is_some_and(|n| n.status.usable()))
                .cloned()
        });
        let Some(dep) = failed_dep else {
            return Ok(false);
        };
        self.status(name, NodeStatus::Blocked).await?;
        self.notice(
            NoticeLevel::Warning,
            format!("`{name}` is blocked: it depends on `{dep}`, which did not pass"),
        )
        .await?;
        Ok(true)
    }
}

/// `base`, the nodes `pick` chooses and those queued to run again, with
/// every node that depends on them, in topological order.
fn order_with(state: &State, base: &[String], pick: impl Fn(&NodeState) -> bool) -> Vec<String> {
    let mut only: BTreeSet<String> = base.iter().cloned().collect();
    only.extend(
        state
            .nodes
            .values()
            .filter(|n| n.queued || pick(n))
            .map(|n| n.spec.name.clone()),
    );
    order_of(state, Some(&only))
}

/// What the state has queued to run again, with every node that depends on
/// it, in topological order.
fn queued_work(state: &State) -> Vec<String> {
    order_of(state, Some(&state.rerun_queue()))
}

/// Nodes to process, in topological order: all of them, or `only` and every
/// node that depends on them.
fn order_of(state: &State, only: Option<&BTreeSet<String>>) -> Vec<String> {
    let Ok(dag) = Dag::new(state.specs.clone()) else {
        return Vec::new();
    };
    let Some(only) = only else {
        return dag.topological_order();
    };
    let mut hit: BTreeSet<String> = only
        .iter()
        .filter(|n| state.nodes.contains_key(*n))
        .cloned()
        .collect();
    for n in only {
        if state.nodes.contains_key(n) {
            hit.extend(dag.impact(n));
        }
    }
    dag.topological_order()
        .into_iter()
        .filter(|n| hit.contains(n))
        .collect()
}
