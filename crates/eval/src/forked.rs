//! The fork-server path of `evaluate`: one warm server per worker, each
//! taking the next sample until none are left, with the next sample queued
//! on the server while one runs (the server then never waits for this side
//! between samples). A server that dies is replaced; the sample it was
//! running is tried once more on the new one, and those queued behind it
//! (which never started) go back to the queue.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{
    EvalError, EvalOptions, Problem, RUNNER_PRELUDE, Runner, Sample, SampleResult, sample_job,
    verdict,
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
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<SampleResult>>> = Mutex::new(vec![None; samples.len()]);
    let server_limits = Limits {
        memory_bytes: options.memory_bytes,
        ..Limits::default()
    };
    let record = |index: usize, result: SampleResult| {
        if let Ok(mut all) = results.lock() {
            all[index] = Some(result);
        }
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(tx) = &progress {
            let _ = tx.try_send(n);
        }
    };
    let run_error = |index: usize, message: String| EvalError::Run {
        index,
        task_id: samples[index].task_id.clone(),
        message,
    };
    let worker = || async {
        let mut server: Option<ForkServer> = None;
        let mut pending: VecDeque<Pending> = VecDeque::new();
        // Samples to run again (whether a server already died running them).
        let mut again: VecDeque<(usize, bool)> = VecDeque::new();
        loop {
            while pending.len() < QUEUE_DEPTH {
                let (index, retried) = match again.pop_front() {
                    Some(a) => a,
                    None => {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= samples.len() {
                            break;
                        }
                        (i, false)
                    }
                };
                if cancel.is_cancelled() {
                    return Err(run_error(index, "cancelled".into()));
                }
                let sample = &samples[index];
                let Some(problem) = by_id.get(sample.task_id.as_str()) else {
                    continue;
                };
                let s = match &mut server {
                    Some(s) if s.is_alive() => s,
                    _ => server.insert(
                        sandbox
                            .fork_server_with(server_limits.clone(), Some(RUNNER_PRELUDE))
                            .await
                            .map_err(|e| run_error(index, e.to_string()))?,
                    ),
                };
                let (spec, token) =
                    sample_job(problem, &sample.completion, options, Runner::Prelude);
                match s.submit(&spec) {
                    Ok(()) => pending.push_back(Pending {
                        index,
                        token,
                        retried,
                    }),
                    // The server is gone: what is queued on it reports so
                    // below; with nothing queued, this sample is the one.
                    Err(e) if pending.is_empty() => {
                        server = None;
                        if retried {
                            record(index, failed(&sample.task_id, &e.to_string()));
                        } else {
                            again.push_back((index, true));
                        }
                    }
                    Err(_) => {
                        again.push_front((index, retried));
                        break;
                    }
                }
            }
            let Some(head) = pending.pop_front() else {
                return Ok(());
            };
            let task_id = &samples[head.index].task_id;
            let outcome = match server.as_mut() {
                Some(s) => s.next_outcome().await,
                None => Err(codeloop_sandbox::ExecError::Sandbox(
                    "the fork server has stopped".into(),
                )),
            };
            match outcome {
                Ok(outcome) => record(head.index, verdict(task_id, &outcome, &head.token)),
                Err(e) => {
                    server = None;
                    if head.retried {
                        record(head.index, failed(task_id, &e.to_string()));
                    } else {
                        again.push_back((head.index, true));
                    }
                    // Queued behind it, they never started.
                    again.extend(pending.drain(..).map(|p| (p.index, p.retried)));
                }
            }
        }
    };
    let outcomes =
        futures_util::future::join_all((0..options.workers.max(1)).map(|_| worker())).await;
    for o in outcomes {
        o?;
    }
    let all = results.into_inner().map_err(|_| EvalError::Run {
        index: 0,
        task_id: String::new(),
        message: "a worker panicked".into(),
    })?;
    Ok(all.into_iter().flatten().collect())
}

fn failed(task_id: &str, why: &str) -> SampleResult {
    SampleResult {
        task_id: task_id.to_string(),
        passed: false,
        result: format!("failed: {why}"),
        duration: Duration::ZERO,
    }
}
