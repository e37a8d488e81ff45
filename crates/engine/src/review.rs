//! The review before running (`EngineOptions::review`): once a node's code
//! passed the static check and before it runs, one model call reads it
//! against the task, the spec and the tests (`prompts/review.md`, its reply
//! held to `schemas::review`) and says what looks wrong. Its verdict is an
//! `Event::Review`. Advisory: in step mode it is a pause (`Step::Review`:
//! approve runs the code, skip sends it to a repair unrun); otherwise a
//! serious finding sends the code to a repair without a run only when
//! `review_repairs` is on, and never two versions in a row (the version a
//! review-sent repair wrote always runs). A reply that cannot be read, a
//! failed or skipped call, a spent budget: a notice, and the code runs unreviewed.

use serde_json::Value;

use super::context::{Core, Stop};
use super::extract;
use super::generate::node_ctx;
use super::steering::GateAnswer;
use super::tag::Tag;
use codeloop_protocol::{ChatMessage, Location};
use codeloop_session::review::{REVIEW_ERROR, review_failure};
use codeloop_session::{
    CodeSource, Event, NoticeLevel, Purpose, ReviewEvent, ReviewFinding, ReviewVerdict, Severity,
    State, Step,
};

/// What follows a node's review.
pub(super) enum AfterReview {
    /// Run the code; `approved`: the person already said so (step mode).
    Run { approved: bool },
    /// Repair it unrun, from this failure (the review's findings).
    Repair(Box<Location>),
    /// The code was edited meanwhile: check the edit first.
    Edited,
}

impl Core {
    /// Review `name`'s code at `iteration` when the session asks for
    /// reviews, and say what comes next.
    pub(super) async fn review_before_run(
        &self,
        name: &str,
        iteration: u32,
    ) -> Result<AfterReview, Stop> {
        if !self.opts.policy.review || !self.read(|s| reviewable(s, name, iteration)) {
            return Ok(AfterReview::Run { approved: false });
        }
        // A resumed session does not ask again for a review on the tape.
        let known = self.read(|s| {
            s.review_of(name, iteration)
                .map(|r| (r.verdict, r.findings.clone()))
        });
        let (_verdict, findings) = match known {
            Some(known) => known,
            None => match self.ask_review(name, iteration).await? {
                Some(reviewed) => reviewed,
                None => return Ok(AfterReview::Run { approved: false }),
            },
        };
        if self.iteration_of_node(name) != iteration {
            return Ok(AfterReview::Edited);
        }
        let file = format!("{name}.py");
        if self.read(|s| s.step_mode) {
            let answer = self
                .gate(Step::Review {
                    node: name.to_string(),
                    iteration,
                })
                .await;
            if self.iteration_of_node(name) != iteration {
                return Ok(AfterReview::Edited);
            }
            return match answer {
                GateAnswer::Go => Ok(AfterReview::Run { approved: true }),
                GateAnswer::Skip => Ok(AfterReview::Repair(Box::new(sent_to_repair(
                    &file, &findings,
                )))),
                GateAnswer::Cancel => Err(Stop::Cancelled),
            };
        }
        if !self.opts.policy.review_repairs || self.read(|s| review_repaired(s, name, iteration)) {
            return Ok(AfterReview::Run { approved: false });
        }
        // Only serious findings make a failure.
        match review_failure(&file, &findings) {
            Some(location) => {
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "the review of `{name}` found something serious: it goes to a repair without a run"
                    ),
                )
                .await?;
                Ok(AfterReview::Repair(Box::new(location)))
            }
            None => Ok(AfterReview::Run { approved: false }),
        }
    }

    fn iteration_of_node(&self, name: &str) -> u32 {
        self.read(|s| s.nodes.get(name).map(|n| n.iteration()).unwrap_or(0))
    }

    /// The review's prompt: the node's context and its code at
    /// `iteration`, its lines numbered.
    fn review_prompt(&self, name: &str, iteration: u32) -> Result<Option<Vec<ChatMessage>>, Stop> {
        let Some(ctx) = self.read(|s| node_ctx(s, name)) else {
            return Ok(None);
        };
        let code = self.read(|s| {
            s.nodes
                .get(name)
                .and_then(|n| n.code())
                .unwrap_or("")
                .to_string()
        });
        let prompt = self.prompts.render(
            "review.md",
            minijinja::context! {
                task => ctx.task, inputs => ctx.inputs, plan => ctx.plan, spec => ctx.spec,
                deps => ctx.deps, tests => self.shown_tests(ctx.tests), iteration,
                numbered => numbered(&code),
            },
        )?;
        Ok(Some(self.messages(prompt)?))
    }

    /// The review call and its verdict on the tape; None when there is
    /// none to go by (said in a notice).
    async fn ask_review(
        &self,
        name: &str,
        iteration: u32,
    ) -> Result<Option<(ReviewVerdict, Vec<ReviewFinding>)>, Stop> {
        let purpose = Purpose::Review {
            node: name.to_string(),
        };
        match self.may_ask(&purpose).await {
            Ok(()) => {}
            Err(Stop::Skipped) => {
                self.notice(
                    NoticeLevel::Info,
                    format!("the review of `{name}` was skipped: it runs unreviewed"),
                )
                .await?;
                return Ok(None);
            }
            // The budget's notice is given; the run needs no model.
            Err(Stop::Budget) => return Ok(None),
            Err(e) => return Err(e),
        }
        let Some(messages) = self.review_prompt(name, iteration)? else {
            return Ok(None);
        };
        let tag = Tag::Review {
            node: name.to_string(),
            iteration,
        };
        let reply = match self.call(purpose, tag.clone(), messages, None).await {
            Ok(reply) => reply,
            // The call's failure is on the tape with its notice.
            Err(Stop::Failed | Stop::Model | Stop::Skipped | Stop::Budget) => {
                self.notice(
                    NoticeLevel::Warning,
                    format!("`{name}` runs unreviewed: the review call gave no reply"),
                )
                .await?;
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let call_id = self.read(|s| tag.latest_call(s));
        match parse(&reply) {
            Ok((verdict, findings)) => {
                self.record(Event::Review(ReviewEvent {
                    node: name.to_string(),
                    iteration,
                    verdict,
                    findings: findings.clone(),
                    call_id,
                }))
                .await?;
                Ok(Some((verdict, findings)))
            }
            Err(why) => {
                self.notice(
                    NoticeLevel::Warning,
                    format!("the review of `{name}` could not be read ({why}): it runs unreviewed"),
                )
                .await?;
                Ok(None)
            }
        }
    }
}

/// Whether `name`'s code at `iteration` is one a review reads: the model's
/// (the person's own edit is not reviewed), with tests to run.
fn reviewable(s: &State, name: &str, iteration: u32) -> bool {
    s.nodes.get(name).is_some_and(|n| {
        n.tests.is_some()
            && n.versions.last().is_some_and(|v| {
                v.iteration == iteration
                    && matches!(v.source, CodeSource::Model | CodeSource::PlanReply)
            })
    })
}

/// Whether the version before `iteration` went to its repair on a review's
/// word, unrun: then this one runs whatever its review says.
fn review_repaired(s: &State, name: &str, iteration: u32) -> bool {
    s.failures_of(name)
        .any(|f| f.iteration + 1 == iteration && f.location.error_type == REVIEW_ERROR)
}

/// The failure of code the person sent to a repair from the review's pause:
/// the serious findings, else every finding, else the person's word alone.
fn sent_to_repair(file: &str, findings: &[ReviewFinding]) -> Location {
    let all: Vec<ReviewFinding> = findings
        .iter()
        .map(|f| ReviewFinding {
            severity: Severity::Serious,
            ..f.clone()
        })
        .collect();
    let chosen = if findings.iter().any(|f| f.severity == Severity::Serious) {
        findings
    } else {
        &all
    };
    review_failure(file, chosen).unwrap_or_else(|| Location {
        file: file.to_string(),
        line: None,
        column: None,
        function: None,
        error_type: REVIEW_ERROR.to_string(),
        message: "the person sent the code to a repair after its review (see the hints)".into(),
        in_node_code: true,
        ..Location::default()
    })
}

/// The code with its line numbers, as the review reads it.
fn numbered(code: &str) -> String {
    let width = code.lines().count().max(1).to_string().len();
    code.lines()
        .enumerate()
        .map(|(i, l)| format!("{:>width$} | {l}", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The verdict and findings of a review's reply: its JSON object (bare, in a
/// fence, or amid prose; reasoning left out). Lenient in what it reads
/// (`"Serious"`, a line as a string, `message` for `what`), strict that
/// there is a verdict or findings to read.
pub(crate) fn parse(reply: &str) -> Result<(ReviewVerdict, Vec<ReviewFinding>), String> {
    let (answer, _) = extract::strip_reasoning(reply);
    let object = answer
        .char_indices()
        .filter(|(_, c)| *c == '{')
        .find_map(|(i, _)| {
            let mut values = serde_json::Deserializer::from_str(&answer[i..]).into_iter::<Value>();
            match values.next() {
                Some(Ok(v @ Value::Object(_)))
                    if v.get("verdict").is_some() || v.get("findings").is_some() =>
                {
                    Some(v)
                }
                _ => None,
            }
        })
        .ok_or_else(|| "no JSON object with a verdict in the reply".to_string())?;
    let findings: Vec<ReviewFinding> = match object.get("findings") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.iter().filter_map(finding).collect(),
        Some(_) => return Err("`findings` is not a list".into()),
    };
    let verdict = match object
        .get("verdict")
        .and_then(Value::as_str)
        .map(|v| v.trim().to_lowercase())
        .as_deref()
    {
        Some("ok") => ReviewVerdict::Ok,
        Some("concerns" | "concern") => ReviewVerdict::Concerns,
        None if !findings.is_empty() => ReviewVerdict::Concerns,
        None => ReviewVerdict::Ok,
        Some(other) => {
            return Err(format!(
                "the verdict is \"{other}\", neither \"ok\" nor \"concerns\""
            ));
        }
    };
    // An "ok" that lists something serious is not ok.
    let verdict = if findings.iter().any(|f| f.severity == Severity::Serious) {
        ReviewVerdict::Concerns
    } else {
        verdict
    };
    Ok((verdict, findings))
}

fn finding(item: &Value) -> Option<ReviewFinding> {
    let text = |k: &str| item.get(k).and_then(Value::as_str).map(str::trim);
    let what = text("what")
        .or_else(|| text("message"))
        .or_else(|| text("description"))
        .filter(|w| !w.is_empty())
        // The prompt's placeholder, copied (SmolLM2 copied its example).
        .filter(|w| !(w.starts_with('<') && w.ends_with('>')))?;
    let severity = match text("severity").map(str::to_lowercase).as_deref() {
        Some("serious" | "major" | "critical" | "high" | "error") => Severity::Serious,
        _ => Severity::Minor,
    };
    let line = match item.get("line") {
        Some(Value::Number(n)) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|l| *l > 0);
    Some(ReviewFinding {
        severity,
        line,
        what: what.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_ok_reads() {
        assert_eq!(
            parse("{\"verdict\": \"ok\", \"findings\": []}").unwrap(),
            (ReviewVerdict::Ok, vec![])
        );
    }

    #[test]
    fn a_fenced_reply_amid_prose_with_loose_fields_reads() {
        let reply = "<think>hmm {not json}</think>Here is my review:\n```json\n{\"verdict\": \"Concerns\", \"findings\": [{\"severity\": \"Serious\", \"line\": \"4\", \"what\": \"off by one\"}, {\"severity\": \"minor\", \"line\": null, \"message\": \"naming\"}]}\n```";
        let (verdict, findings) = parse(reply).unwrap();
        assert_eq!(verdict, ReviewVerdict::Concerns);
        assert_eq!(
            findings,
            vec![
                ReviewFinding {
                    severity: Severity::Serious,
                    line: Some(4),
                    what: "off by one".into()
                },
                ReviewFinding {
                    severity: Severity::Minor,
                    line: None,
                    what: "naming".into()
                },
            ]
        );
    }

    #[test]
    fn an_ok_with_a_serious_finding_is_concerns() {
        let (verdict, _) = parse(
            "{\"verdict\": \"ok\", \"findings\": [{\"severity\": \"serious\", \"line\": 1, \"what\": \"x\"}]}",
        )
        .unwrap();
        assert_eq!(verdict, ReviewVerdict::Concerns);
    }

    #[test]
    fn the_prompts_placeholder_copied_is_no_finding() {
        let (verdict, findings) = parse(
            "{\"verdict\": \"concerns\", \"findings\": [{\"severity\": \"serious\", \"line\": 7, \"what\": \"<one sentence: what fails, and why>\"}]}",
        )
        .unwrap();
        assert_eq!((verdict, findings), (ReviewVerdict::Concerns, vec![]));
    }

    #[test]
    fn prose_or_a_strange_verdict_does_not_read() {
        assert!(parse("Looks fine to me.").is_err());
        assert!(parse("{\"verdict\": \"maybe\"}").is_err());
        assert!(parse("{\"other\": 1}").is_err());
    }

    #[test]
    fn code_is_numbered_for_the_review() {
        assert_eq!(numbered("a\nb"), "1 | a\n2 | b");
    }
}
