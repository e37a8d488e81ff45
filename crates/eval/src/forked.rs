//! The fork-server path of `evaluate`: one warm server per worker, each
//! taking the next sample until none are left, with the next sample queued
//! on the server while one runs (the server then never waits for this side
//! between samples). A server that dies is replaced; the sample it was
//! running is tried once more on the new one, and those queued behind it
//! (which never started) go back to the queue.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{
    EvalError, EvalOptions, Problem, RUNNER_PRELUDE, Runner, Sample, SampleResult, sample_job,
    server_learns, verdict,
};
use codeloop_sandbox::{ForkServer, Limits, Sandbox};

/// Samples queued on one server at a time: the one running and the next.
const QUEUE_DEPTH: usize = 2;

/// A sample handed to a server, waiting for its outcome.
struct Pending {
    index: usize,
    token: String,
    /// Servers that died running it before this one.
    retried: bool,
}

pub(super) async fn evaluate_forked(
    sandbox: &Sandbox,
    by_id: &HashMap<&str, &Problem>,
    samples: &[Sample],
    options: &EvalOptions,
    progress: Option<mpsc::Sender<usize>>,
    cancel: CancellationToken,
) -> Result<Vec<SampleResult>, EvalError> {
    // Problems with more than one sample: a server learns each of them
    // (its prompt and test compiled once) after its first sample there.
    let mut seen = HashSet::new();
    let repeated = samples
        .iter()
        .filter(|s| !seen.insert(s.task_id.as_str()))
        .map(|s| s.task_id.as_str())
        .collect();
    let shared = Shared {
        sandbox,
        by_id,
        samples,
        repeated,
        options,
        progress,
        cancel,
        server_limits: Limits {
            memory_bytes: options.memory_bytes,
            ..Limits::default()
        },
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        results: Mutex::new(vec![None; samples.len()]),
    };
    let outcomes = futures_util::future::join_all(
        (0..options.workers.max(1)).map(|_| Worker::default().work(&shared)),
    )
    .await;
    for o in outcomes {
        o?;
    }
    let all = shared.results.into_inner().map_err(|_| EvalError::Run {
        index: 0,
        task_id: String::new(),
        message: "a worker panicked".into(),
    })?;
    Ok(all.into_iter().flatten().collect())
}

/// What the workers share: the samples, the next one to take, the results.
struct Shared<'a> {
    sandbox: &'a Sandbox,
    by_id: &'a HashMap<&'a str, &'a Problem>,
    samples: &'a [Sample],
    repeated: HashSet<&'a str>,
    options: &'a EvalOptions,
    progress: Option<mpsc::Sender<usize>>,
    cancel: CancellationToken,
    server_limits: Limits,
    next: AtomicUsize,
    done: AtomicUsize,
    results: Mutex<Vec<Option<SampleResult>>>,
}

impl Shared<'_> {
    fn record(&self, index: usize, result: SampleResult) {
        if let Ok(mut all) = self.results.lock() {
            all[index] = Some(result);
        }
        let n = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(tx) = &self.progress {
            let _ = tx.try_send(n);
        }
    }

    fn run_error(&self, index: usize, message: String) -> EvalError {
        EvalError::Run {
            index,
            task_id: self.samples[index].task_id.clone(),
            message,
        }
    }
}

/// One worker: its server, the samples queued on it, and those to run again.
#[derive(Default)]
struct Worker {
    server: Option<ForkServer>,
    pending: VecDeque<Pending>,
    /// Samples to run again (whether a server already died running them).
    again: VecDeque<(usize, bool)>,
}

impl Worker {
    async fn work(mut self, shared: &Shared<'_>) -> Result<(), EvalError> {
        loop {
            self.fill(shared).await?;
            let Some(head) = self.pending.pop_front() else {
                return Ok(());
            };
            self.settle(shared, head).await;
        }
    }

    /// Queue samples on the server (started or replaced as needed) until
    /// `QUEUE_DEPTH` are on it or none are left.
    async fn fill(&mut self, shared: &Shared<'_>) -> Result<(), EvalError> {
        while self.pending.len() < QUEUE_DEPTH {
            let (index, retried) = match self.again.pop_front() {
                Some(a) => a,
                None => {
                    let i = shared.next.fetch_add(1, Ordering::Relaxed);
                    if i >= shared.samples.len() {
                        break;
                    }
                    (i, false)
                }
            };
            if shared.cancel.is_cancelled() {
                return Err(shared.run_error(index, "cancelled".into()));
            }
            let sample = &shared.samples[index];
            let Some(problem) = shared.by_id.get(sample.task_id.as_str()) else {
                continue;
            };
            let s = match &mut self.server {
                Some(s) if s.is_alive() => s,
                _ => self.server.insert(
                    shared
                        .sandbox
                        .fork_server_with(shared.server_limits.clone(), Some(RUNNER_PRELUDE))
                        .await
                        .map_err(|e| shared.run_error(index, e.to_string()))?,
                ),
            };
            let mut job = sample_job(problem, &sample.completion, shared.options, Runner::Prelude);
            if shared.repeated.contains(sample.task_id.as_str()) {
                server_learns(&mut job.spec);
            }
            match s.submit_judged(&job.spec, &job.judge) {
                Ok(()) => self.pending.push_back(Pending {
                    index,
                    token: job.token,
                    retried,
                }),
                // The server is gone: what is queued on it reports so
                // below; with nothing queued, this sample is the one.
                Err(e) if self.pending.is_empty() => {
                    self.server = None;
                    if retried {
                        shared.record(index, failed(&sample.task_id, &e.to_string()));
                    } else {
                        self.again.push_back((index, true));
                    }
                }
                Err(_) => {
                    self.again.push_front((index, retried));
                    break;
                }
            }
        }
        Ok(())
    }

    /// The outcome of the sample at the head of the queue: its verdict, or
    /// (the server died) once more on a new server, with those queued
    /// behind it, which never started.
    async fn settle(&mut self, shared: &Shared<'_>, head: Pending) {
        let task_id = &shared.samples[head.index].task_id;
        let outcome = match self.server.as_mut() {
            Some(s) => s.next_outcome().await,
            None => Err(codeloop_sandbox::ExecError::Sandbox(
                "the fork server has stopped".into(),
            )),
        };
        match outcome {
            Ok(outcome) => shared.record(head.index, verdict(task_id, &outcome, &head.token)),
            Err(e) => {
                self.server = None;
                if head.retried {
                    shared.record(head.index, failed(task_id, &e.to_string()));
                } else {
                    self.again.push_back((head.index, true));
                }
                self.again
                    .extend(self.pending.drain(..).map(|p| (p.index, p.retried)));
            }
        }
    }
}

fn failed(task_id: &str, why: &str) -> SampleResult {
    SampleResult {
        task_id: task_id.to_string(),
        passed: false,
        result: format!("failed: {why}"),
        duration: Duration::ZERO,
    }
}
