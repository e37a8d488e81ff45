//! `codeloop bench --compare A.jsonl B.jsonl`: two results files side by
//! side, per metric and per problem where they differ: the experiment that
//! says what a switch (`--no-runtime-values`, `--no-fresh-start`,
//! `--review`, `--candidates N`) does on a problem set.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;

use super::results::{BenchResult, Figures, Status, share};
use crate::protocol::resources::cpu_time;

/// The results in a file written by `codeloop bench`.
pub(crate) fn read_results(path: &Path) -> anyhow::Result<Vec<BenchResult>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the results file {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).with_context(|| {
                format!(
                    "{} line {} is not a bench result (is it a results file of `codeloop bench`?)",
                    path.display(),
                    i + 1
                )
            })
        })
        .collect()
}

/// How a problem ended, in a few words: `pass at 2`, `FAIL`, `error`.
fn outcome(r: &BenchResult) -> String {
    match (r.status, r.passed_version()) {
        (Status::Passed | Status::Failed, Some(1)) => "pass first try".into(),
        (Status::Passed | Status::Failed, Some(v)) => format!("pass at version {v}"),
        (Status::Passed | Status::Failed, None) => format!("FAIL ({} versions)", r.iterations),
        (Status::Error, _) => "error".into(),
        (Status::Cancelled, _) => "cancelled".into(),
    }
}

/// The two result sets side by side: the figures, then the problems whose outcome differs.
pub(crate) fn compare(a_name: &str, a: &[BenchResult], b_name: &str, b: &[BenchResult]) -> String {
    let rows = figure_rows(&Figures::of(a), &Figures::of(b));
    let mut out = table(a_name, b_name, &rows);
    let differ = differing(a, b);
    if differ.is_empty() {
        out.push_str("every problem ended the same way in both\n");
    } else {
        out.push_str(&format!(
            "problems that differ ({}):\n{}\n",
            differ.len(),
            differ.join("\n")
        ));
    }
    out
}

/// A figure's name and its value on each side.
type Row = (String, String, String);

/// The figures of both sides, a row each: pass@1 by round, tokens, calls,
/// the vote and the review when either side had them, time, repairs.
fn figure_rows(fa: &Figures, fb: &Figures) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    rows.push((
        "problems measured".into(),
        fa.measured.to_string(),
        fb.measured.to_string(),
    ));
    let rounds = fa.by_round.len().max(fb.by_round.len());
    for k in 0..rounds {
        let at = |f: &Figures| {
            let passed = f
                .by_round
                .get(k)
                .or(f.by_round.last())
                .copied()
                .unwrap_or(0);
            f.rate(passed)
        };
        let name = if k == 0 {
            "pass@1 first try".to_string()
        } else {
            format!("pass@1 after repair {k}")
        };
        rows.push((name, at(fa), at(fb)));
    }
    rows.push((
        "pass@1 final".into(),
        fa.rate(fa.passed_final),
        fb.rate(fb.passed_final),
    ));
    let tokens = |f: &Figures| (f.prompt_tokens + f.completion_tokens).to_string();
    rows.push(("tokens".into(), tokens(fa), tokens(fb)));
    rows.push((
        "model calls".into(),
        fa.calls.to_string(),
        fb.calls.to_string(),
    ));
    // Functional consensus (`--candidates N`), when either side voted.
    if fa.candidates + fb.candidates > 0 {
        rows.push((
            "candidates voted on".into(),
            fa.candidates.to_string(),
            fb.candidates.to_string(),
        ));
    }
    // The review before running (`--review`), when either side had it.
    if fa.reviews + fb.reviews > 0 {
        for (name, get) in [
            (
                "reviews",
                (|f: &Figures| f.reviews as u64) as fn(&Figures) -> u64,
            ),
            ("  sent to repair unrun", |f| f.review_repairs.into()),
            ("  review tokens", |f| f.review_tokens),
        ] {
            rows.push((name.into(), get(fa).to_string(), get(fb).to_string()));
        }
    }
    // The call figures, when either side has them.
    if fa.figured_calls + fb.figured_calls > 0 {
        let time = |v: Option<u64>| v.map_or("-".to_string(), cpu_time);
        rows.push((
            "wasted calls".into(),
            fa.wasted_calls().to_string(),
            fb.wasted_calls().to_string(),
        ));
        rows.push((
            "first token, median".into(),
            time(fa.first_token_median_ms),
            time(fb.first_token_median_ms),
        ));
        rows.push((
            "first token, p90".into(),
            time(fa.first_token_p90_ms),
            time(fb.first_token_p90_ms),
        ));
        let across = |f: &Figures| share(f.first_request_shared_chars, f.first_request_chars);
        rows.push(("prefix across problems".into(), across(fa), across(fb)));
    }
    let secs = |f: &Figures| format!("{:.1} s", f.model_ms as f64 / 1000.0);
    rows.push(("model time".into(), secs(fa), secs(fb)));
    for (name, get) in [
        // `repairs` counts every attempt after a failure, fresh starts too.
        (
            "repairs",
            (|f: &Figures| f.repairs.saturating_sub(f.fresh_starts)) as fn(&Figures) -> u32,
        ),
        ("  with runtime values", |f| f.repairs_with_values),
        ("fresh starts", |f| f.fresh_starts),
        ("test fixes", |f| f.test_fixes),
    ] {
        rows.push((name.into(), get(fa).to_string(), get(fb).to_string()));
    }
    rows
}

/// The rows in columns under the two names, `*` where the sides differ.
fn table(a_name: &str, b_name: &str, rows: &[Row]) -> String {
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let w1 = rows
        .iter()
        .map(|r| r.1.len())
        .chain([a_name.len()])
        .max()
        .unwrap_or(0);
    let mut out = format!("{:<w0$}  {:<w1$}  {}\n", "", a_name, b_name);
    for (name, x, y) in rows {
        let mark = if x == y { "" } else { "  *" };
        out.push_str(&format!("{name:<w0$}  {x:<w1$}  {y}{mark}\n").replace("  \n", "\n"));
    }
    out
}

/// The problems whose outcome differs, or that only one side ran, a line each.
fn differing(a: &[BenchResult], b: &[BenchResult]) -> Vec<String> {
    let by_id: BTreeMap<&str, &BenchResult> = b.iter().map(|r| (r.task_id.as_str(), r)).collect();
    let mut differ = Vec::new();
    for ra in a {
        match by_id.get(ra.task_id.as_str()) {
            Some(rb) if outcome(ra) != outcome(rb) => differ.push(format!(
                "  {}: {} | {}",
                ra.task_id,
                outcome(ra),
                outcome(rb)
            )),
            Some(_) => {}
            None => differ.push(format!("  {}: {} | not run", ra.task_id, outcome(ra))),
        }
    }
    let in_a: std::collections::BTreeSet<&str> = a.iter().map(|r| r.task_id.as_str()).collect();
    for rb in b.iter().filter(|r| !in_a.contains(r.task_id.as_str())) {
        differ.push(format!("  {}: not run | {}", rb.task_id, outcome(rb)));
    }
    differ
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(id: &str, passed_at: Option<u32>, iterations: u32, with_values: u32) -> BenchResult {
        BenchResult {
            status: if passed_at.is_some() {
                Status::Passed
            } else {
                Status::Failed
            },
            passed_first: passed_at == Some(1),
            passed_final: passed_at.is_some(),
            iterations,
            passed_at,
            repairs: iterations - 1,
            repairs_with_values: with_values,
            ..BenchResult::not_started(id.into())
        }
    }

    #[test]
    fn the_call_figures_are_compared_when_either_side_has_them() {
        let mut with = r("T/0", Some(1), 1, 0);
        with.keep_calls(vec![crate::session::CallFigure {
            call_id: 1,
            tag: "code/f/1".into(),
            prompt_tokens: Some(100),
            completion_tokens: Some(10),
            cached_tokens: None,
            first_token_ms: Some(1_500),
            total_ms: Some(3_000),
            waste: Some(crate::session::Waste::Cut),
        }]);
        let old = r("T/0", Some(1), 1, 0);
        let text = compare("after", &[with], "before", std::slice::from_ref(&old));
        let row = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(name))
                .map(|l| l[name.len()..].split_whitespace().collect::<Vec<_>>())
        };
        assert_eq!(row("wasted calls"), Some(vec!["1", "0", "*"]), "{text}");
        assert_eq!(
            row("first token, median"),
            Some(vec!["1.50", "s", "-", "*"]),
            "{text}"
        );
        let text = compare(
            "a",
            std::slice::from_ref(&old),
            "b",
            std::slice::from_ref(&old),
        );
        assert!(!text.contains("wasted calls"), "{text}");
    }

    #[test]
    fn two_result_sets_side_by_side_with_the_problems_that_differ() {
        let a = vec![
            r("T/0", Some(1), 1, 0),
            r("T/1", Some(2), 2, 1),
            r("T/2", None, 3, 2),
        ];
        let b = vec![
            r("T/0", Some(1), 1, 0),
            r("T/1", None, 3, 0),
            r("T/2", None, 3, 0),
        ];
        assert_eq!(
            compare("values.jsonl", &a, "no-values.jsonl", &b),
            "                       values.jsonl  no-values.jsonl\n\
             problems measured      3             3\n\
             pass@1 first try       33.3% (1/3)   33.3% (1/3)\n\
             pass@1 after repair 1  66.7% (2/3)   33.3% (1/3)  *\n\
             pass@1 after repair 2  66.7% (2/3)   33.3% (1/3)  *\n\
             pass@1 final           66.7% (2/3)   33.3% (1/3)  *\n\
             tokens                 0             0\n\
             model calls            0             0\n\
             model time             0.0 s         0.0 s\n\
             repairs                3             4  *\n  \
             with runtime values  3             0  *\n\
             fresh starts           0             0\n\
             test fixes             0             0\n\
             problems that differ (1):\n  \
             T/1: pass at version 2 | FAIL (3 versions)\n"
        );
    }
}
