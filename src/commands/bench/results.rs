//! One problem's outcome as the results file keeps it, measured from its
//! session's state, and the scores over a set: pass@1 at the first try,
//! after each repair round and at the end; tokens and model time; how the
//! repairs went (with runtime values, fresh starts, test fixes); each
//! model call's prompt tokens and time to first token, and the calls whose
//! reply was not used (`session::call_figures`); the prompt prefix a
//! server could keep from one problem to the next.

use crate::protocol::present::{count, plural};
use serde::{Deserialize, Serialize};

use super::judge::Feedback;
use super::verdicts::{Resampled, Verdicts};
use crate::protocol::Location;
use crate::protocol::resources::{Resources, cpu_time, memory};
use crate::session::call_figures::percentile;
use crate::session::{AttemptKind, CallFigure, State, Waste};

/// How a problem ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Status {
    Passed,
    /// The code was written and run, and did not pass: a measured failure.
    Failed,
    /// Nothing was measured: a model call failed, or a run could not be set up.
    Error,
    /// Stopped by a signal before it ended.
    Cancelled,
}

/// One problem's outcome, as written to the results file. Fields after
/// `tape` were added later: a results file without them still reads.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct BenchResult {
    pub(crate) task_id: String,
    pub(crate) status: Status,
    /// Why nothing was measured (status "error").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    pub(crate) passed_first: bool,
    pub(crate) passed_final: bool,
    /// Code versions written (1 = the first try only).
    pub(crate) iterations: u32,
    /// The first failure, localized.
    #[serde(default)]
    pub(crate) first_failure: Option<Location>,
    #[serde(default)]
    pub(crate) summary: String,
    /// The session's tape; none when the problem was cancelled before it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tape: Option<String>,
    /// The code version that first passed (1 = the first try), if one did.
    #[serde(default)]
    pub(crate) passed_at: Option<u32>,
    #[serde(default)]
    pub(crate) prompt_tokens: u64,
    #[serde(default)]
    pub(crate) completion_tokens: u64,
    /// Time spent waiting for the model, milliseconds.
    #[serde(default)]
    pub(crate) model_ms: u64,
    /// Attempts after a failure (repairs and fresh starts).
    #[serde(default)]
    pub(crate) repairs: u32,
    /// Repairs whose prompt showed the runtime values at the failure.
    #[serde(default)]
    pub(crate) repairs_with_values: u32,
    #[serde(default)]
    pub(crate) fresh_starts: u32,
    /// Model fixes of the tests applied (never of a benchmark's own tests).
    #[serde(default)]
    pub(crate) test_fixes: u32,
    /// Characters of the session's prompts, and of them those that were a
    /// prefix of an earlier prompt of the session (`session::prefix`).
    #[serde(default)]
    pub(crate) prompt_chars: u64,
    #[serde(default)]
    pub(crate) prefix_chars: u64,
    /// Of `prompt_tokens`, those the server said it took from its prompt
    /// cache (`None`: it never said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cached_tokens: Option<u64>,
    /// Runs of the problem's session whose figures were measured, and
    /// what they used together: CPU time summed, the largest peak memory.
    #[serde(default)]
    pub(crate) runs: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) resources: Option<Resources>,
    /// Model calls made (the review's included).
    #[serde(default)]
    pub(crate) calls: u32,
    /// Reviews before running (`--review`), the repairs they sent code to
    /// without a run, and the tokens the review calls used.
    #[serde(default)]
    pub(crate) reviews: u32,
    #[serde(default)]
    pub(crate) review_repairs: u32,
    #[serde(default)]
    pub(crate) review_tokens: u64,
    /// Candidates of the first code voted on (`--candidates N`; 0: no vote).
    #[serde(default)]
    pub(crate) candidates: u32,
    /// Each model call, in the order asked: its tokens, its time to first
    /// token, why its reply was not used when it was not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) per_call: Vec<CallFigure>,
    /// Calls whose reply was not used (of `per_call`).
    #[serde(default)]
    pub(crate) wasted_calls: u32,
    /// The time to first token of the calls that streamed: the median and
    /// the 90th percentile (nearest rank), milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) first_token_median_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) first_token_p90_ms: Option<u64>,
    /// The session's first request: its characters, and the longest prefix
    /// it shares with an earlier problem's first request (in the problems'
    /// order): what a server's cache could keep from problem to problem.
    #[serde(default)]
    pub(crate) first_request_chars: u64,
    #[serde(default)]
    pub(crate) first_request_shared_chars: u64,
    /// What the repairs saw: own tests, or the hidden ones (oracle
    /// feedback). Results written before it was recorded were oracle.
    #[serde(default = "Feedback::oracle")]
    pub(crate) feedback: Feedback,
    /// Own-test feedback: codeloop's own verdicts beside the hidden tests'
    /// (then `passed_first`, `passed_final` and `passed_at` are the hidden ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) verdicts: Option<Verdicts>,
    /// The resampling baseline on the problem (`--resample`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) resample: Option<Resampled>,
}

impl BenchResult {
    pub(crate) fn measured(&self) -> bool {
        match self.status {
            Status::Passed | Status::Failed => true,
            Status::Error | Status::Cancelled => false,
        }
    }

    pub(crate) fn not_started(task_id: String) -> BenchResult {
        BenchResult {
            task_id,
            status: Status::Cancelled,
            error: None,
            passed_first: false,
            passed_final: false,
            iterations: 0,
            first_failure: None,
            summary: "cancelled before it started".into(),
            tape: None,
            passed_at: None,
            prompt_tokens: 0,
            completion_tokens: 0,
            model_ms: 0,
            repairs: 0,
            repairs_with_values: 0,
            fresh_starts: 0,
            test_fixes: 0,
            prompt_chars: 0,
            prefix_chars: 0,
            cached_tokens: None,
            runs: 0,
            resources: None,
            calls: 0,
            reviews: 0,
            review_repairs: 0,
            review_tokens: 0,
            candidates: 0,
            per_call: Vec::new(),
            wasted_calls: 0,
            first_token_median_ms: None,
            first_token_p90_ms: None,
            first_request_chars: 0,
            first_request_shared_chars: 0,
            feedback: Feedback::Own,
            verdicts: None,
            resample: None,
        }
    }

    /// The hidden tests' verdict on each code version (own-test feedback):
    /// they score the problem, and the engine's own verdicts are kept
    /// beside them. What passed is the code the session ended with.
    pub(crate) fn judged_by(&mut self, hidden: Vec<bool>) {
        let v = Verdicts {
            own_first: self.passed_first,
            own_final: self.passed_final,
            hidden,
        };
        self.passed_first = v.hidden_first();
        self.passed_final = v.hidden_final();
        // The first version the hidden tests passed.
        self.passed_at = v.hidden.iter().position(|&h| h).map(|i| i as u32 + 1);
        self.status = super::verdicts::status_of(self.passed_final);
        self.verdicts = Some(v);
    }

    /// Keep the session's call figures, and what they add up to.
    pub(crate) fn keep_calls(&mut self, per_call: Vec<CallFigure>) {
        self.wasted_calls = per_call.iter().filter(|c| c.waste.is_some()).count() as u32;
        let firsts = first_tokens(&per_call);
        self.first_token_median_ms = percentile(&firsts, 50);
        self.first_token_p90_ms = percentile(&firsts, 90);
        self.per_call = per_call;
    }

    /// The code version that first passed; for results written before
    /// `passed_at`, read from the first-try and final verdicts.
    pub(crate) fn passed_version(&self) -> Option<u32> {
        match (self.passed_at, self.passed_first, self.passed_final) {
            (Some(v), _, true) => Some(v),
            (_, true, _) => Some(1),
            (_, false, true) => Some(self.iterations.max(1)),
            (_, _, false) => None,
        }
    }

    /// Whether it passed within `repairs` repair rounds (0 = the first try).
    /// In own-test feedback: whether the version the loop stood at after
    /// that many rounds passed the hidden tests (the loop stops at its own
    /// pass, so a version the hidden tests passed and its own tests failed
    /// is followed by others, and the last is what it delivers).
    pub(crate) fn passed_within(&self, repairs: u32) -> bool {
        if let Some(v) = &self.verdicts {
            let at = (repairs as usize).min(v.hidden.len().saturating_sub(1));
            return v.hidden.get(at).copied().unwrap_or(false);
        }
        self.passed_version().is_some_and(|v| v <= repairs + 1)
    }

    /// The measured parts of a session's state: the version that first
    /// passed, tokens, model time, and its attempts by kind.
    pub(crate) fn measure(&mut self, state: &State, node: &str) {
        self.passed_at = state
            .runs_in_order()
            .map(|(_, r)| r)
            .filter(|r| r.node.as_deref() == Some(node))
            .find(|r| r.record.as_ref().is_some_and(|r| r.passed))
            .map(|r| r.iteration);
        self.prompt_tokens = state.usage.prompt_tokens;
        self.completion_tokens = state.usage.completion_tokens;
        self.cached_tokens = state.usage.cached_tokens;
        self.model_ms = state.model_ms;
        let reuse = state.prefix_reuse();
        self.prompt_chars = reuse.prompt_chars;
        self.prefix_chars = reuse.reused_chars;
        if let Some(t) = crate::session::figures::total(state) {
            self.runs = t.runs;
            self.resources = Some(t.total);
        }
        self.calls = state.calls.len() as u32;
        let (reviews, review_tokens) = crate::session::review::review_cost(state);
        self.reviews = reviews;
        self.review_tokens = review_tokens;
        self.review_repairs = state
            .failures_of(node)
            .filter(|f| f.location.error_type == crate::session::review::REVIEW_ERROR)
            .count() as u32;
        if let Some(n) = state.nodes.get(node) {
            self.candidates = n
                .candidates
                .as_ref()
                .map_or(0, |c| c.candidates.len() as u32);
            self.repairs = n.attempts.len() as u32;
            self.repairs_with_values =
                n.attempts.iter().filter(|a| a.runtime_values).count() as u32;
            self.fresh_starts = n
                .attempts
                .iter()
                .filter(|a| a.kind == AttemptKind::FreshStart)
                .count() as u32;
            self.test_fixes = n.applied_test_fixes() as u32;
        }
    }
}

/// One line of progress for a finished problem.
pub(crate) fn progress_line(r: &BenchResult) -> String {
    match r.status {
        Status::Passed | Status::Failed => format!(
            "  {:<16} first try {:<4} after repair {:<4}{} ({} iteration{}; prompt prefix reused {}{}){}{}",
            r.task_id,
            if r.passed_first { "pass" } else { "FAIL" },
            if r.passed_final { "pass" } else { "FAIL" },
            r.verdicts
                .as_ref()
                .map(|v| format!(" [{}]", v.words()))
                .unwrap_or_default(),
            r.iterations,
            plural(r.iterations),
            share(r.prefix_chars, r.prompt_chars),
            match r.cached_tokens {
                Some(c) => format!("; server cache {}", share(c, r.prompt_tokens)),
                None => String::new(),
            },
            calls_words(r),
            r.resources
                .map(|res| format!(" · {}, {}", count(r.runs, "run"), res.short()))
                .unwrap_or_default()
        ),
        Status::Error => format!(
            "  {:<16} ERROR, not scored: {}",
            r.task_id,
            r.error.as_deref().unwrap_or("")
        ),
        Status::Cancelled => format!("  {:<16} cancelled", r.task_id),
    }
}

/// ` · 3 calls, 1 wasted, first token 2.10 s median` (nothing for results
/// written before the call figures).
fn calls_words(r: &BenchResult) -> String {
    if r.per_call.is_empty() {
        return String::new();
    }
    let first = match r.first_token_median_ms {
        Some(ms) => format!(", first token {} median", cpu_time(ms)),
        None => String::new(),
    };
    format!(
        " · {}, {} wasted{first}",
        count(r.per_call.len(), "call"),
        r.wasted_calls
    )
}

/// The times to first token of the calls that streamed.
fn first_tokens(calls: &[CallFigure]) -> Vec<u64> {
    calls.iter().filter_map(|c| c.first_token_ms).collect()
}

/// `42%` of `total`, or `-` when there is nothing to share.
pub(crate) fn share(part: u64, total: u64) -> String {
    if total == 0 {
        return "-".into();
    }
    format!("{:.0}%", 100.0 * part as f64 / total as f64)
}

/// The figures of a set of results, over the measured problems only.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figures {
    pub(crate) measured: usize,
    /// Passed within r repair rounds, r = 0 (the first try) up to the most any used.
    pub(crate) by_round: Vec<usize>,
    pub(crate) passed_final: usize,
    pub(crate) prompt_tokens: u64,
    pub(crate) completion_tokens: u64,
    pub(crate) model_ms: u64,
    pub(crate) repairs: u32,
    pub(crate) repairs_with_values: u32,
    pub(crate) fresh_starts: u32,
    pub(crate) test_fixes: u32,
    pub(crate) prompt_chars: u64,
    pub(crate) prefix_chars: u64,
    /// Cached prompt tokens, and the prompt tokens of the problems whose
    /// server said how many it cached.
    pub(crate) cached_tokens: u64,
    pub(crate) cache_told_prompt_tokens: u64,
    pub(crate) calls: u32,
    pub(crate) reviews: u32,
    pub(crate) review_repairs: u32,
    pub(crate) review_tokens: u64,
    pub(crate) candidates: u32,
    /// Calls with figures (results written before them have none), and of
    /// them those whose reply was not used, by why.
    pub(crate) figured_calls: u32,
    pub(crate) wasted: Vec<(Waste, u32)>,
    /// Over every call that streamed: time to first token, median and p90.
    pub(crate) first_token_median_ms: Option<u64>,
    pub(crate) first_token_p90_ms: Option<u64>,
    /// Over every call that reported them: prompt tokens, median and most.
    pub(crate) call_prompt_median: Option<u64>,
    pub(crate) call_prompt_max: Option<u64>,
    /// The problems' first requests: characters, and those shared with an
    /// earlier problem's first request.
    pub(crate) first_request_chars: u64,
    pub(crate) first_request_shared_chars: u64,
    /// The problems' first calls whose server said what it took from its
    /// cache: their prompt tokens, and those it took (from the problems
    /// before: the across-problems reuse as the server measured it).
    pub(crate) first_call_prompt_tokens: u64,
    pub(crate) first_call_cached_tokens: u64,
}

impl Figures {
    pub(crate) fn of(results: &[BenchResult]) -> Figures {
        let measured: Vec<&BenchResult> = results.iter().filter(|r| r.measured()).collect();
        let rounds = measured
            .iter()
            .map(|r| r.iterations.max(1) - 1)
            .max()
            .unwrap_or(0);
        let sum = |f: fn(&BenchResult) -> u64| measured.iter().map(|r| f(r)).sum::<u64>();
        let calls: Vec<&CallFigure> = measured.iter().flat_map(|r| &r.per_call).collect();
        let first_tokens: Vec<u64> = calls.iter().filter_map(|c| c.first_token_ms).collect();
        let prompts: Vec<u64> = calls.iter().filter_map(|c| c.prompt_tokens).collect();
        Figures {
            measured: measured.len(),
            by_round: (0..=rounds)
                .map(|k| measured.iter().filter(|r| r.passed_within(k)).count())
                .collect(),
            passed_final: measured.iter().filter(|r| r.passed_final).count(),
            prompt_tokens: sum(|r| r.prompt_tokens),
            completion_tokens: sum(|r| r.completion_tokens),
            model_ms: sum(|r| r.model_ms),
            repairs: sum(|r| r.repairs.into()) as u32,
            repairs_with_values: sum(|r| r.repairs_with_values.into()) as u32,
            fresh_starts: sum(|r| r.fresh_starts.into()) as u32,
            test_fixes: sum(|r| r.test_fixes.into()) as u32,
            prompt_chars: sum(|r| r.prompt_chars),
            prefix_chars: sum(|r| r.prefix_chars),
            cached_tokens: sum(|r| r.cached_tokens.unwrap_or(0)),
            cache_told_prompt_tokens: sum(|r| {
                if r.cached_tokens.is_some() {
                    r.prompt_tokens
                } else {
                    0
                }
            }),
            calls: sum(|r| r.calls.into()) as u32,
            reviews: sum(|r| r.reviews.into()) as u32,
            review_repairs: sum(|r| r.review_repairs.into()) as u32,
            review_tokens: sum(|r| r.review_tokens),
            candidates: sum(|r| r.candidates.into()) as u32,
            figured_calls: sum(|r| r.per_call.len() as u64) as u32,
            wasted: wasted_by_why(&calls),
            first_token_median_ms: percentile(&first_tokens, 50),
            first_token_p90_ms: percentile(&first_tokens, 90),
            call_prompt_median: percentile(&prompts, 50),
            call_prompt_max: prompts.iter().max().copied(),
            first_request_chars: sum(|r| r.first_request_chars),
            first_request_shared_chars: sum(|r| r.first_request_shared_chars),
            first_call_prompt_tokens: sum(|r| {
                r.per_call
                    .first()
                    .filter(|c| c.cached_tokens.is_some())
                    .and_then(|c| c.prompt_tokens)
                    .unwrap_or(0)
            }),
            first_call_cached_tokens: sum(|r| {
                r.per_call
                    .first()
                    .and_then(|c| c.cached_tokens)
                    .unwrap_or(0)
            }),
        }
    }

    /// Calls whose reply was not used.
    pub(crate) fn wasted_calls(&self) -> u32 {
        self.wasted.iter().map(|(_, n)| n).sum()
    }

    /// `6 wasted (3 unusable or refused, 2 stopped (looping), 1 cut)`, or `0 wasted`.
    pub(crate) fn wasted_words(&self) -> String {
        let n = self.wasted_calls();
        if n == 0 {
            return "0 wasted".into();
        }
        let why: Vec<String> = self
            .wasted
            .iter()
            .map(|(w, k)| format!("{k} {}", w.label()))
            .collect();
        format!("{n} wasted ({})", why.join(", "))
    }

    /// `50.0% (1/2)`.
    pub(crate) fn rate(&self, k: usize) -> String {
        if self.measured == 0 {
            return "-".into();
        }
        format!(
            "{:.1}% ({k}/{})",
            100.0 * k as f64 / self.measured as f64,
            self.measured
        )
    }
}

/// The wasted calls by why, most first (the order of `Waste` among equals).
fn wasted_by_why(calls: &[&CallFigure]) -> Vec<(Waste, u32)> {
    let mut by: Vec<(Waste, u32)> = Vec::new();
    for w in calls.iter().filter_map(|c| c.waste) {
        match by.iter_mut().find(|(x, _)| *x == w) {
            Some((_, n)) => *n += 1,
            None => by.push((w, 1)),
        }
    }
    by.sort_by_key(|(w, n)| (std::cmp::Reverse(*n), *w as u8));
    by
}

/// The scores, over the problems that were measured only.
pub(crate) fn report(results: &[BenchResult]) -> String {
    let f = Figures::of(results);
    let mut out = super::verdicts::lines(results);
    if f.measured == 0 {
        out.push_str("pass@1: no problem was measured\n");
    } else {
        out.push_str(&format!("pass@1 first try:    {}\n", f.rate(f.by_round[0])));
        for (k, passed) in f.by_round.iter().enumerate().skip(1) {
            out.push_str(&format!("  after repair {k}:    {}\n", f.rate(*passed)));
        }
        out.push_str(&format!(
            "pass@1 after repair: {}\n",
            f.rate(f.passed_final)
        ));
    }
    let errors: Vec<&BenchResult> = results
        .iter()
        .filter(|r| r.status == Status::Error)
        .collect();
    if !errors.is_empty() {
        out.push_str(&format!(
            "errors: {} problem{} not measured, left out of pass@1:\n",
            errors.len(),
            plural(errors.len())
        ));
        for r in errors {
            out.push_str(&format!(
                "  {}: {}\n",
                r.task_id,
                r.error.as_deref().unwrap_or("")
            ));
        }
    }
    let cancelled = results
        .iter()
        .filter(|r| r.status == Status::Cancelled)
        .count();
    if cancelled > 0 {
        out.push_str(&format!(
            "cancelled: {cancelled} problem{} not measured, left out of pass@1\n",
            plural(cancelled)
        ));
    }
    if f.measured > 0 {
        out.push_str(&format!(
            "tokens: {} prompt + {} completion; model time {:.1} s\n",
            f.prompt_tokens,
            f.completion_tokens,
            f.model_ms as f64 / 1000.0
        ));
        out.push_str(&format!(
            "repairs: {} ({} with runtime values), fresh starts: {}, test fixes: {}\n",
            // `repairs` counts every attempt after a failure, fresh starts too.
            f.repairs.saturating_sub(f.fresh_starts),
            f.repairs_with_values,
            f.fresh_starts,
            f.test_fixes
        ));
        out.push_str(&format!(
            "prompt prefix reused: {} of {} characters (an estimate: of each prompt, its longest prefix shared with an earlier prompt of its session and that prompt's reply)\n",
            share(f.prefix_chars, f.prompt_chars),
            f.prompt_chars
        ));
        if f.cache_told_prompt_tokens > 0 {
            out.push_str(&format!(
                "server prompt cache: {} of {} prompt tokens (as the server reported them)\n",
                share(f.cached_tokens, f.cache_told_prompt_tokens),
                f.cache_told_prompt_tokens
            ));
        }
        out.push_str(&calls_lines(&f));
        out.push_str(&resources_line(results));
    }
    out
}

/// The call figures of a set: calls and those wasted, time to first token
/// and prompt tokens per call, the prefix shared across problems; empty for
/// results written before them.
fn calls_lines(f: &Figures) -> String {
    if f.figured_calls == 0 {
        return String::new();
    }
    let mut out = format!("calls: {}, {}\n", f.figured_calls, f.wasted_words());
    let ms = |v: Option<u64>| v.map_or("-".to_string(), cpu_time);
    let tokens = |v: Option<u64>| v.map_or("-".to_string(), |t| t.to_string());
    out.push_str(&format!(
        "time to first token: median {}, p90 {}; prompt tokens per call: median {}, most {}\n",
        ms(f.first_token_median_ms),
        ms(f.first_token_p90_ms),
        tokens(f.call_prompt_median),
        tokens(f.call_prompt_max)
    ));
    if f.first_request_chars > 0 {
        out.push_str(&format!(
            "prompt prefix across problems: {} of {} characters (of each problem's first request, its longest prefix shared with an earlier problem's first request)\n",
            share(f.first_request_shared_chars, f.first_request_chars),
            f.first_request_chars
        ));
    }
    if f.first_call_prompt_tokens > 0 {
        out.push_str(&format!(
            "server cache on each problem's first call: {} of {} prompt tokens (as the server reported them)\n",
            share(f.first_call_cached_tokens, f.first_call_prompt_tokens),
            f.first_call_prompt_tokens
        ));
    }
    out
}

/// `runs: 12, CPU 3.40 s in all; peak memory 98 MiB at most (HumanEval/3)`,
/// over the measured problems whose runs were measured; empty when none were.
fn resources_line(results: &[BenchResult]) -> String {
    let measured: Vec<&BenchResult> = results.iter().filter(|r| r.measured()).collect();
    let runs: u32 = measured.iter().map(|r| r.runs).sum();
    let cpu: u64 = measured
        .iter()
        .filter_map(|r| r.resources)
        .map(|r| r.cpu_ms)
        .sum();
    let Some(top) = measured
        .iter()
        .filter(|r| r.resources.is_some())
        .max_by_key(|r| r.resources.map_or(0, |x| x.peak_rss_bytes))
    else {
        return String::new();
    };
    format!(
        "runs: {runs}, CPU {} in all; peak memory {} at most ({})\n",
        cpu_time(cpu),
        memory(top.resources.map_or(0, |x| x.peak_rss_bytes)),
        top.task_id
    )
}

#[cfg(test)]
mod tests;
