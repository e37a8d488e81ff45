//! The resampling baseline, at the loop's cost: instead of repairing, ask
//! for the function again, independently, at a temperature, and keep the
//! first answer that passes its own tests. Its first sample is the loop's
//! own first try (the same prompt at the same temperature: drawing it again
//! would only spend tokens); further samples are sessions of one version
//! each, given the tests the loop started from (so their prompt is the
//! first try's), drawn while the tokens spent are below the loop's on the
//! problem. Every sample is judged by the hidden tests afterwards, as the
//! loop's versions are.

use std::collections::BTreeMap;
use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::judge::Feedback;
use super::results::BenchResult;
use super::verdicts::{Resampled, SampleVerdict};
use super::{Ended, Sessions, prelude_of, run_session, spec_of, task_of};
use crate::engine::{EngineOptions, EngineSetup, GivenPlan, RepairPolicy};
use crate::eval::Problem;
use crate::session::{Event, Record, State};

/// Samples drawn at most beyond the first, whatever the budget: a server
/// that reports no usage (the engine then estimates) cannot run it away.
const MOST_SAMPLES: usize = 16;

/// The tests a node had when its first version ran: the first its tape
/// recorded (in own-test feedback, the model's held to the examples).
fn first_tests(records: &[Record], node: &str) -> Option<String> {
    records.iter().find_map(|r| match &r.event {
        Event::Tests(t) if t.node == node => Some(t.code.clone()),
        _ => None,
    })
}

/// The tokens the session had used by its node's first version: the
/// loop's first try, the tests call included.
fn tokens_by_first_version(records: &[Record], node: &str) -> u64 {
    let end = records
        .iter()
        .position(|r| matches!(&r.event, Event::Code(c) if c.node == node))
        .map_or(records.len(), |i| i + 1);
    let usage = State::from_records(&records[..end]).usage;
    usage.prompt_tokens + usage.completion_tokens
}

/// One further sample's session: one version, at `temperature`, from the
/// tests the loop started with.
fn sample_setup(
    problem: &Problem,
    sessions: &Sessions,
    tests: Option<&str>,
    temperature: f32,
    dir: &Path,
) -> EngineSetup {
    let name = problem.entry_point.clone();
    let options = EngineOptions {
        max_iterations: 1,
        first_temperature: Some(temperature),
        candidates: 1,
        policy: RepairPolicy {
            review: false,
            review_repairs: false,
            ..sessions.options.policy.clone()
        },
        ..sessions.options.clone()
    };
    EngineSetup {
        task: task_of(problem),
        inputs: Vec::new(),
        model: sessions.model.clone(),
        sandbox: sessions.sandbox.clone(),
        options,
        session_dir: dir.to_path_buf(),
        prompt_overrides: None,
        given: Some(GivenPlan {
            specs: vec![spec_of(problem)],
            tests: tests
                .map(|t| BTreeMap::from([(name.clone(), t.to_string())]))
                .unwrap_or_default(),
            preludes: BTreeMap::from([(name, prelude_of(problem))]),
            hidden_tests: sessions.feedback == Feedback::Hidden,
        }),
    }
}

/// The baseline on one problem whose loop ended as `measured` (its
/// records `records`).
pub(super) async fn draw(
    problem: &Problem,
    sessions: &Sessions,
    records: &[Record],
    measured: &BenchResult,
    temperature: f32,
    dir: &Path,
    cancel: CancellationToken,
) -> anyhow::Result<Resampled> {
    let node = problem.entry_point.as_str();
    let (own_first, hidden_first) = match &measured.verdicts {
        Some(v) => (v.own_first, v.hidden_first()),
        // Oracle feedback: its own tests are the hidden ones.
        None => (measured.passed_first, measured.passed_first),
    };
    let mut drawn = Resampled {
        temperature,
        samples: vec![SampleVerdict {
            own: own_first,
            hidden: hidden_first,
            tokens: tokens_by_first_version(records, node),
        }],
        budget: measured.prompt_tokens + measured.completion_tokens,
    };
    let tests = first_tests(records, node);
    while !drawn.samples.iter().any(|s| s.own)
        && drawn.tokens() < drawn.budget
        && drawn.samples.len() <= MOST_SAMPLES
        && !cancel.is_cancelled()
    {
        let sample_dir = dir.join(format!("resample-{}", drawn.samples.len() + 1));
        let setup = sample_setup(
            problem,
            sessions,
            tests.as_deref(),
            temperature,
            &sample_dir,
        );
        let Ended { state, result, .. } = run_session(setup, cancel.clone()).await?;
        let code = state
            .nodes
            .get(node)
            .and_then(|n| n.code())
            .map(str::to_string);
        let hidden = match code {
            Some(code) => sessions
                .judge
                .judge(problem, &[code], cancel.clone())
                .await?
                .first()
                .copied()
                .unwrap_or(false),
            None => false,
        };
        let tokens = state.usage.prompt_tokens + state.usage.completion_tokens;
        drawn.samples.push(SampleVerdict {
            own: result.passed,
            hidden,
            tokens,
        });
        if tokens == 0 {
            break;
        }
    }
    Ok(drawn)
}
