//! Functional consensus (`EngineOptions::candidates` > 1): a node's first
//! code is asked for that many times (the first as always, `code/NAME/1`,
//! the others `code/NAME/1/cK` at a higher temperature), the model is asked
//! once for calls that would tell them apart (`inputs/NAME`,
//! `prompts/inputs.md`), each candidate is run in the sandbox on the calls
//! of the node's function its tests make and on those proposed
//! (`consensus.py`: inputs only, never the tests' expected values), and the
//! candidate whose outputs agree with the most others is kept
//! (`session::consensus`). Its `Event::Candidates` goes on the tape before
//! the chosen code. A vote that cannot be held (no inputs, the run failed)
//! keeps the first candidate, and says why.

use serde::{Deserialize, Serialize};

use super::calls::Ask;
use super::context::{Core, Stop};
use super::tag::Tag;
use codeloop_protocol::ChatMessage;
use codeloop_sandbox::{ExecError, Limits, RunSpec};
use codeloop_session::consensus::{choose, scores};
use codeloop_session::{Candidate, CandidatesEvent, Dag, Event, NoticeLevel, Purpose};

const SCRIPT: &str = include_str!("consensus.py");
const REPORT: &str = "consensus.json";
/// Calls of the function taken from the tests, at most.
const MOST_INPUTS: usize = 32;

/// The notice, said once a session, that recorded replies (a demo's) have
/// no other candidates to give.
const NO_CANDIDATES: &str = "the recorded replies hold no other candidates";
/// The temperature of the candidates after the first.
const VARIETY: f32 = 0.8;

#[derive(Serialize)]
struct Manifest<'a> {
    name: &'a str,
    tests: &'a str,
    deps: Option<&'a str>,
    candidates: Vec<String>,
    /// Calls the model proposed, checked by the script to be calls of the function.
    proposed: &'a [String],
    most_inputs: usize,
    load_secs: f64,
    call_secs: f64,
}

#[derive(Deserialize)]
struct Report {
    inputs: Vec<String>,
    outputs: Vec<Option<Vec<String>>>,
    /// The last `proposed` inputs are the model's.
    #[serde(default)]
    proposed: usize,
}

/// The vote's outcome.
struct Vote {
    candidates: Vec<Candidate>,
    inputs: u32,
    proposed: u32,
    chosen: usize,
    note: Option<String>,
}

impl Core {
    /// `first` (the code of the call `code/NAME/1`) and the other
    /// candidates asked with `messages`, voted on; the code to keep.
    pub(super) async fn by_consensus(
        &self,
        name: &str,
        (messages, prefill): (Vec<ChatMessage>, Option<String>),
        first: String,
    ) -> Result<String, Stop> {
        let wanted = self.opts.candidates.max(1);
        let has_tests = self.read(|s| s.nodes.get(name).is_some_and(|n| n.tests.is_some()));
        if wanted < 2 || !has_tests {
            return Ok(first);
        }
        let first_call = self.read(|s| Tag::first_code(name).latest_call(s));
        let mut codes = vec![(self.with_prelude(name, first), first_call)];
        for k in 2..=wanted {
            let tag = Tag::Code {
                node: name.to_string(),
                iteration: 1,
                candidate: k,
            };
            // Recorded replies without this candidate (a demo): it is not
            // asked for, and a function with no other keeps its one, unvoted.
            if !self.model.can_answer(&tag.to_string()) {
                if k == 2 {
                    self.notice_once(
                        NoticeLevel::Info,
                        NO_CANDIDATES,
                        format!(
                            "{NO_CANDIDATES} for `{name}` (no reply tagged {tag}): a function they have none for keeps its one code, without a vote"
                        ),
                    )
                    .await?;
                    return Ok(codes.remove(0).0);
                }
                break;
            }
            let purpose = Purpose::Code {
                node: name.to_string(),
            };
            match self.may_ask(&purpose).await {
                Ok(()) => {}
                // No more candidates: the vote is among those there are.
                Err(Stop::Skipped | Stop::Budget) => break,
                Err(e) => return Err(e),
            }
            match self
                .call_for_code(
                    Ask::new(purpose, tag.clone(), messages.clone())
                        .with_temperature(Some(VARIETY))
                        .with_prefill(prefill.clone()),
                    Some(name),
                )
                .await
            {
                Ok((_, code)) => codes.push((
                    self.with_prelude(name, code),
                    self.read(|s| tag.latest_call(s)),
                )),
                Err(Stop::Failed | Stop::Model | Stop::Skipped | Stop::Budget) => {}
                Err(e) => return Err(e),
            }
        }
        let proposed = if codes.len() > 1 {
            self.propose_inputs(name).await?
        } else {
            Vec::new()
        };
        let vote = self.vote(name, &codes, &proposed).await?;
        let chosen_code = codes
            .get(vote.chosen)
            .map(|(c, _)| c.clone())
            .unwrap_or_default();
        let iteration = 1;
        self.record(Event::Candidates(CandidatesEvent {
            node: name.to_string(),
            iteration,
            candidates: vote.candidates,
            inputs: vote.inputs,
            proposed: vote.proposed,
            chosen: vote.chosen,
            note: vote.note.clone(),
        }))
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

    /// Calls of `name` the model proposes to tell its candidates apart
    /// (`prompts/inputs.md`, held to `schemas::inputs`); none when the call
    /// is skipped, fails or its reply cannot be read (said in a notice).
    async fn propose_inputs(&self, name: &str) -> Result<Vec<String>, Stop> {
        let purpose = Purpose::Inputs {
            node: name.to_string(),
        };
        match self.may_ask(&purpose).await {
            Ok(()) => {}
            Err(Stop::Skipped | Stop::Budget) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        }
        let Some(ctx) = self.read(|s| super::generate::node_ctx(s, name)) else {
            return Ok(Vec::new());
        };
        let prompt = self.prompts.render(
            "inputs.md",
            minijinja::context! {
                task => ctx.task, inputs => ctx.inputs, plan => ctx.plan, spec => ctx.spec,
                deps => ctx.deps, tests => self.shown_tests(ctx.tests),
            },
        )?;
        let messages = self.messages(prompt)?;
        let reply = match self
            .call(
                purpose,
                Tag::Inputs {
                    node: name.to_string(),
                },
                messages,
                None,
            )
            .await
        {
            Ok(reply) => reply,
            Err(Stop::Failed | Stop::Model | Stop::Skipped | Stop::Budget) => {
                return Ok(Vec::new());
            }
            Err(e) => return Err(e),
        };
        match proposed_calls(&reply, name) {
            Ok(calls) => Ok(calls),
            Err(why) => {
                self.notice(
                    NoticeLevel::Warning,
                    format!("the inputs proposed for `{name}` could not be read ({why}): the vote uses its tests' calls only"),
                )
                .await?;
                Ok(Vec::new())
            }
        }
    }

    /// Run every candidate on the tests' inputs and score their agreement.
    async fn vote(
        &self,
        name: &str,
        codes: &[(String, Option<u64>)],
        proposed: &[String],
    ) -> Result<Vote, Stop> {
        if codes.len() < 2 {
            return Ok(unvoted(codes, "only one candidate was written"));
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
            return Ok(unvoted(codes, "the node has no tests to take inputs from"));
        };
        let mut spec = vote_run(name, codes, proposed, tests, deps, self.limits());
        spec.inputs = self.read(super::runs::input_paths);
        let outcome = match self
            .sandbox
            .run(spec, None, self.cancel.child_token())
            .await
        {
            Ok(o) => o,
            Err(ExecError::Cancelled) => return Err(Stop::Cancelled),
            Err(e) => {
                return Ok(unvoted(
                    codes,
                    &format!("the candidates could not run: {e}"),
                ));
            }
        };
        let report = outcome
            .collected
            .iter()
            .find(|(f, _)| f == REPORT)
            .and_then(|(_, bytes)| serde_json::from_slice::<Report>(bytes).ok());
        let Some(report) = report else {
            return Ok(unvoted(codes, "the candidates' run gave no report"));
        };
        Ok(tally(codes, &report))
    }
}

/// The vote not held, for `note`: every candidate unscored, the first kept.
fn unvoted(codes: &[(String, Option<u64>)], note: &str) -> Vote {
    Vote {
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
        proposed: 0,
        chosen: 0,
        note: Some(note.to_string()),
    }
}

/// The run that tries every candidate on the calls of `name` its `tests`
/// make and on the `proposed` ones (`consensus.py`, with the dependencies'
/// code `deps`), each call given a share of the run's wall-clock limit.
fn vote_run(
    name: &str,
    codes: &[(String, Option<u64>)],
    proposed: &[String],
    tests: String,
    deps: String,
    limits: Limits,
) -> RunSpec {
    let per_call = (limits.wall.as_secs_f64() / (2.0 * codes.len() as f64 * 4.0)).clamp(0.2, 2.0);
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
        proposed,
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
    RunSpec {
        files,
        script: "consensus.py".into(),
        limits,
        collect: vec![REPORT.into()],
        ..RunSpec::default()
    }
}

/// The vote from the run's `report`: each candidate scored by how many
/// others its outputs agree with, on the inputs that tell something.
fn tally(codes: &[(String, Option<u64>)], report: &Report) -> Vote {
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
        return unvoted(
            codes,
            "the tests make no call of the function to take inputs from",
        );
    }
    let first_proposed = report.inputs.len().saturating_sub(report.proposed);
    let proposed_kept = keep.iter().filter(|k| **k >= first_proposed).count() as u32;
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
    Vote {
        candidates,
        inputs: keep.len() as u32,
        proposed: proposed_kept,
        chosen,
        note: None,
    }
}

/// The calls of `name` in a reply to `prompts/inputs.md`: `{"calls": [...]}`
/// (bare, fenced or amid prose), each a string that calls `name`; at most
/// `schemas::MAX_PROPOSED_INPUTS`. The script checks each parses as one call.
fn proposed_calls(reply: &str, name: &str) -> Result<Vec<String>, String> {
    let (answer, _) = super::extract::strip_reasoning(reply);
    let object = answer
        .char_indices()
        .filter(|(_, c)| *c == '{')
        .find_map(|(i, _)| {
            let mut values =
                serde_json::Deserializer::from_str(&answer[i..]).into_iter::<serde_json::Value>();
            match values.next() {
                Some(Ok(v)) if v.get("calls").is_some() => Some(v),
                _ => None,
            }
        })
        .ok_or_else(|| "no JSON object with `calls` in the reply".to_string())?;
    let calls = object
        .get("calls")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| "`calls` is not a list".to_string())?;
    let opening = format!("{name}(");
    Ok(calls
        .iter()
        .filter_map(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|c| c.starts_with(&opening) && c.ends_with(')'))
        .take(super::schemas::MAX_PROPOSED_INPUTS as usize)
        .map(str::to_string)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proposed_calls_of_the_function_only_are_read() {
        let reply = "Here:\n```json\n{\"calls\": [\"f([])\", \" f([1, 2]) \", \"import os\", \"g(1)\", 3]}\n```";
        assert_eq!(proposed_calls(reply, "f").unwrap(), ["f([])", "f([1, 2])"]);
        assert!(proposed_calls("no json", "f").is_err());
    }
}
