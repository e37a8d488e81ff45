//! Functional consensus (`EngineOptions::candidates` > 1): a node's first
//! code is asked for that many times (the first as always, `code/NAME/1`,
//! the others `code/NAME/1/cK` at a higher temperature), each candidate is
//! run in the sandbox on the calls of the node's function its tests make
//! (`consensus.py`: their inputs, never their expected values), and the
//! candidate whose outputs agree with the most others is kept
//! (`session::consensus`). Its `Event::Candidates` goes on the tape before
//! the chosen code. A vote that cannot be held (no inputs, the run failed)
//! keeps the first candidate, and says why.

use serde::{Deserialize, Serialize};

use super::context::{Core, Stop};
use codeloop_protocol::ChatMessage;
use codeloop_sandbox::{ExecError, RunSpec};
use codeloop_session::consensus::{choose, scores};
use codeloop_session::{Candidate, Dag, Event, NoticeLevel, Purpose};

const SCRIPT: &str = include_str!("consensus.py");
const REPORT: &str = "consensus.json";
/// Calls of the function taken from the tests, at most.
const MOST_INPUTS: usize = 32;
/// The temperature of the candidates after the first.
const VARIETY: f32 = 0.8;

#[derive(Serialize)]
struct Manifest<'a> {
    name: &'a str,
    tests: &'a str,
    deps: Option<&'a str>,
    candidates: Vec<String>,
    most_inputs: usize,
    load_secs: f64,
    call_secs: f64,
}

#[derive(Deserialize)]
struct Report {
    inputs: Vec<String>,
    outputs: Vec<Option<Vec<String>>>,
}

/// The vote's outcome.
struct Vote {
    candidates: Vec<Candidate>,
    inputs: u32,
    chosen: usize,
    note: Option<String>,
}

impl Core {
    /// `first` (the code of the call `code/NAME/1`) and the other
    /// candidates asked with `messages`, voted on; the code to keep.
    pub(super) async fn by_consensus(
        &self,
        name: &str,
        messages: Vec<ChatMessage>,
        first: String,
    ) -> Result<String, Stop> {
        let wanted = self.opts.candidates.max(1) as usize;
        let has_tests = self.read(|s| s.nodes.get(name).is_some_and(|n| n.tests.is_some()));
        if wanted < 2 || !has_tests {
            return Ok(first);
        }
        let first_call = self.call_of(&format!("code/{name}/1"));
        let mut codes = vec![(self.with_prelude(name, first), first_call)];
        for k in 2..=wanted {
            let purpose = Purpose::Code {
                node: name.to_string(),
            };
            match self.may_ask(&purpose).await {
                Ok(()) => {}
                // No more candidates: the vote is among those there are.
                Err(Stop::Skipped | Stop::Budget) => break,
                Err(e) => return Err(e),
            }
            let tag = format!("code/{name}/1/c{k}");
            match self
                .call_for_code(
                    purpose,
                    tag.clone(),
                    messages.clone(),
                    Some(name),
                    Some(VARIETY),
                )
                .await
            {
                Ok((_, code)) => codes.push((self.with_prelude(name, code), self.call_of(&tag))),
                Err(Stop::Failed | Stop::Skipped | Stop::Budget) => {}
                Err(e) => return Err(e),
            }
        }
        let vote = self.vote(name, &codes).await?;
        let chosen_code = codes
            .get(vote.chosen)
            .map(|(c, _)| c.clone())
            .unwrap_or_default();
        let iteration = 1;
        self.record(Event::Candidates {
            node: name.to_string(),
            iteration,
            candidates: vote.candidates,
            inputs: vote.inputs,
            chosen: vote.chosen,
            note: vote.note.clone(),
        })
        .await?;
        if let Some(note) = vote.note {
            self.notice(
                NoticeLevel::Warning,
                format!("the candidates of `{name}` were not voted on ({note}): the first is kept"),
            )
            .await?;
        }
        Ok(chosen_code)
    }

    /// The id of the latest call tagged `tag`.
    fn call_of(&self, tag: &str) -> Option<u64> {
        self.read(|s| {
            s.calls
                .iter()
                .rev()
                .find(|(_, c)| c.tag == tag)
                .map(|(id, _)| *id)
        })
    }

    /// Run every candidate on the tests' inputs and score their agreement.
    async fn vote(&self, name: &str, codes: &[(String, Option<u64>)]) -> Result<Vote, Stop> {
        let unvoted = |note: &str| Vote {
            candidates: codes
                .iter()
                .map(|(code, call_id)| Candidate {
                    code: code.clone(),
                    loaded: false,
                    score: 0,
                    call_id: *call_id,
                })
                .collect(),
            inputs: 0,
            chosen: 0,
            note: Some(note.to_string()),
        };
        if codes.len() < 2 {
            return Ok(unvoted("only one candidate was written"));
        }
        let Some((tests, deps)) = self.read(|s| {
            let tests = s.nodes.get(name)?.tests.clone()?;
            let dag = Dag::new(s.specs.clone()).ok()?;
            let deps: String = dag
                .dependencies(name)
                .iter()
                .filter_map(|d| s.nodes.get(d).and_then(|n| n.code()))
                .collect::<Vec<_>>()
                .join("\n\n");
            Some((tests, deps))
        }) else {
            return Ok(unvoted("the node has no tests to take inputs from"));
        };
        let limits = self.limits();
        let per_call =
            (limits.wall.as_secs_f64() / (2.0 * codes.len() as f64 * 4.0)).clamp(0.2, 2.0);
        let mut files: Vec<(String, String)> = codes
            .iter()
            .enumerate()
            .map(|(i, (code, _))| (format!("candidate_{}.py", i + 1), code.clone()))
            .collect();
        let manifest = Manifest {
            name,
            tests: "consensus_tests.py",
            deps: (!deps.is_empty()).then_some("consensus_deps.py"),
            candidates: files.iter().map(|(f, _)| f.clone()).collect(),
            most_inputs: MOST_INPUTS,
            load_secs: per_call * 2.0,
            call_secs: per_call,
        };
        files.push(("consensus_tests.py".into(), tests));
        if !deps.is_empty() {
            files.push(("consensus_deps.py".into(), deps));
        }
        files.push((
            "consensus_manifest.json".into(),
            serde_json::to_string(&manifest).unwrap_or_default(),
        ));
        files.push(("consensus.py".into(), SCRIPT.into()));
        let spec = RunSpec {
            files,
            script: "consensus.py".into(),
            limits,
            collect: vec![REPORT.into()],
            inputs: self.read(super::runs::input_paths),
            ..RunSpec::default()
        };
        let outcome = match self
            .sandbox
            .run(spec, None, self.cancel.child_token())
            .await
        {
            Ok(o) => o,
            Err(ExecError::Cancelled) => return Err(Stop::Cancelled),
            Err(e) => return Ok(unvoted(&format!("the candidates could not run: {e}"))),
        };
        let report = outcome
            .collected
            .iter()
            .find(|(f, _)| f == REPORT)
            .and_then(|(_, bytes)| serde_json::from_slice::<Report>(bytes).ok());
        let Some(report) = report else {
            return Ok(unvoted("the candidates' run gave no report"));
        };
        // Inputs every loaded candidate raised NameError on were built from
        // the tests' own variables: they say nothing.
        let keep: Vec<usize> = (0..report.inputs.len())
            .filter(|k| {
                !report
                    .outputs
                    .iter()
                    .flatten()
                    .all(|o| o.get(*k).is_some_and(|v| v == "raise NameError"))
            })
            .collect();
        let outputs: Vec<Option<Vec<String>>> = report
            .outputs
            .iter()
            .map(|o| {
                o.as_ref()
                    .map(|o| keep.iter().filter_map(|k| o.get(*k).cloned()).collect())
            })
            .collect();
        if keep.is_empty() {
            return Ok(unvoted(
                "the tests make no call of the function to take inputs from",
            ));
        }
        let scored = scores(&outputs);
        let candidates: Vec<Candidate> = codes
            .iter()
            .enumerate()
            .map(|(i, (code, call_id))| Candidate {
                code: code.clone(),
                loaded: outputs.get(i).is_some_and(Option::is_some),
                score: scored.get(i).copied().unwrap_or(0),
                call_id: *call_id,
            })
            .collect();
        let chosen = choose(&candidates);
        Ok(Vote {
            candidates,
            inputs: keep.len() as u32,
            chosen,
            note: None,
        })
    }
}
