//! `bench --html FILE`: one self-contained page of a bench's results: pass@1
//! by repair round drawn as a chart (inline SVG; no script, nothing
//! fetched), the figures beside it (outcomes, calls and the wasted ones,
//! tokens, time to first token, the prefix shared across problems), and
//! each problem's outcome and calls. With `--compare A B` both result sets
//! are drawn on the one chart.

use std::fmt::Write;

use super::results::{BenchResult, Figures, Status, share};
use crate::commands::export::html::esc;
use crate::protocol::resources::cpu_time;
use crate::session::CallFigure;

const WIDTH: f64 = 560.0;
const HEIGHT: f64 = 300.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 32.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 44.0;
/// A colour per series (colour-blind safe, readable on white).
const COLOURS: &[&str] = &["#1f77b4", "#d95f02", "#1b9e77", "#7570b3"];

/// pass@1 (percent) after 0, 1, 2, ... repair rounds; empty when nothing
/// was measured.
pub(crate) fn rates(results: &[BenchResult]) -> Vec<f64> {
    let f = Figures::of(results);
    if f.measured == 0 {
        return Vec::new();
    }
    f.by_round
        .iter()
        .map(|k| 100.0 * *k as f64 / f.measured as f64)
        .collect()
}

/// The chart: pass@1 (0 to 100%) against the repair round (0 = the first
/// try), one line a series, each point marked and labelled with its value.
pub(crate) fn svg(series: &[(String, Vec<f64>)]) -> String {
    let plot = Plot {
        rounds: series
            .iter()
            .map(|(_, r)| r.len())
            .max()
            .unwrap_or(0)
            .max(1),
    };
    let mut out = String::new();
    // One legend row a series, below the chart.
    let total = HEIGHT + 16.0 * series.len().saturating_sub(1) as f64;
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" viewBox=\"0 0 {WIDTH} {total}\" width=\"{WIDTH}\" height=\"{total}\" role=\"img\" aria-label=\"pass@1 by repair round\">"
    );
    plot.axes(&mut out);
    for (i, (name, rates)) in series.iter().enumerate() {
        plot.series(&mut out, i, name, rates);
    }
    out.push_str("</svg>\n");
    out
}

/// Where the chart's points go: rounds across, pass@1 up.
struct Plot {
    rounds: usize,
}

impl Plot {
    fn x(&self, k: usize) -> f64 {
        let plot_w = WIDTH - LEFT - RIGHT;
        if self.rounds == 1 {
            LEFT + plot_w / 2.0
        } else {
            LEFT + plot_w * k as f64 / (self.rounds - 1) as f64
        }
    }

    fn y(&self, pct: f64) -> f64 {
        TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - pct.clamp(0.0, 100.0) / 100.0)
    }

    /// The grid at each quarter with its percentages, the rounds' names
    /// under it, the axis's name beside it.
    fn axes(&self, out: &mut String) {
        for pct in [0.0, 25.0, 50.0, 75.0, 100.0] {
            let _ = writeln!(
                out,
                "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"11\" fill=\"#555\">{pct:.0}%</text>",
                WIDTH - RIGHT,
                self.y(pct),
                self.y(pct),
                LEFT - 6.0,
                self.y(pct) + 4.0
            );
        }
        for k in 0..self.rounds {
            let label = if k == 0 {
                "first try".to_string()
            } else {
                format!("repair {k}")
            };
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\" fill=\"#555\">{label}</text>",
                self.x(k),
                HEIGHT - BOTTOM + 18.0
            );
        }
        let middle = TOP + (HEIGHT - TOP - BOTTOM) / 2.0;
        let _ = writeln!(
            out,
            "<text x=\"14\" y=\"{:.1}\" font-size=\"11\" fill=\"#555\" transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">pass@1</text>",
            middle, middle
        );
    }

    /// Series `i`: its line, each point marked and labelled, its legend row.
    fn series(&self, out: &mut String, i: usize, name: &str, rates: &[f64]) {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<String> = rates
            .iter()
            .enumerate()
            .map(|(k, r)| format!("{:.1},{:.1}", self.x(k), self.y(*r)))
            .collect();
        let _ = writeln!(
            out,
            "<polyline class=\"series\" data-name=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>",
            esc(name),
            points.join(" ")
        );
        for (k, r) in rates.iter().enumerate() {
            let _ = writeln!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{colour}\"><title>{}: {r:.1}% after {k} repair round(s)</title></circle>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"10\" fill=\"{colour}\">{r:.0}%</text>",
                self.x(k),
                self.y(*r),
                esc(name),
                self.x(k),
                self.y(*r) - 7.0 - 11.0 * i as f64
            );
        }
        let _ = writeln!(
            out,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{colour}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"#333\">{}</text>",
            LEFT + 8.0,
            HEIGHT - 14.0 + 16.0 * i as f64,
            LEFT + 22.0,
            HEIGHT - 5.0 + 16.0 * i as f64,
            esc(name)
        );
    }
}

/// The whole page: each named result set's chart line, figures, problems.
pub(crate) fn page(sets: &[(String, Vec<BenchResult>)]) -> String {
    let series: Vec<(String, Vec<f64>)> = sets
        .iter()
        .map(|(name, results)| (name.clone(), rates(results)))
        .collect();
    let mut out = String::from(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <title>codeloop bench</title>\n<style>\
         body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse}\
         td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}.passed{color:#1b7f3b}\
         .failed{color:#b00020}.error,.cancelled{color:#8a6d00}\
         .top{display:flex;flex-wrap:wrap;gap:2em;align-items:flex-start}td.n{text-align:right}</style>\n\
         </head>\n<body>\n<h1>pass@1 by repair round</h1>\n<div class=\"top\">\n",
    );
    if series.iter().all(|(_, r)| r.is_empty()) {
        out.push_str("<p>No problem was measured.</p>\n");
    } else {
        out.push_str(&svg(&series));
    }
    out.push_str(&calls_table(sets));
    out.push_str("</div>\n");
    out.push_str("<h2>Figures</h2>\n<table>\n<tr><th>results</th><th>measured</th>");
    let rounds = series.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
    for k in 0..rounds {
        if k == 0 {
            out.push_str("<th>first try</th>");
        } else {
            let _ = write!(out, "<th>after repair {k}</th>");
        }
    }
    out.push_str("<th>errors</th><th>cancelled</th></tr>\n");
    for (name, results) in sets {
        let f = Figures::of(results);
        let _ = write!(out, "<tr><td>{}</td><td>{}</td>", esc(name), f.measured);
        for k in 0..rounds {
            let cell = f.by_round.get(k).map_or("-".to_string(), |n| f.rate(*n));
            let _ = write!(out, "<td>{}</td>", esc(&cell));
        }
        let count = |s: Status| results.iter().filter(|r| r.status == s).count();
        let _ = writeln!(
            out,
            "<td>{}</td><td>{}</td></tr>",
            count(Status::Error),
            count(Status::Cancelled)
        );
    }
    out.push_str("</table>\n");
    // Which tests the loop worked from, codeloop's own verdicts beside the
    // hidden ones, and the resampling baseline: named on every page.
    for (name, results) in sets {
        let lines = super::verdicts::lines(results);
        if !lines.is_empty() {
            let _ = write!(
                out,
                "<h3>{}</h3>\n<pre class=\"verdicts\">{}</pre>\n",
                esc(name),
                esc(lines.trim_end())
            );
        }
    }
    for (name, results) in sets {
        let _ = write!(
            out,
            "<h2>Problems: {}</h2>\n<table>\n<tr><th>problem</th><th>outcome</th><th>own verdict</th><th>passed at version</th><th>versions</th>\
             <th>fresh starts</th><th>calls</th><th>wasted</th><th>tokens in</th><th>tokens out</th>\
             <th>first token, median</th><th>first token, p90</th><th>first prompt shared with earlier problems</th>\
             <th>each call: prompt tokens, first token</th><th>summary</th></tr>\n",
            esc(name)
        );
        for r in results {
            let status = match r.status {
                Status::Passed => "passed",
                Status::Failed => "failed",
                Status::Error => "error",
                Status::Cancelled => "cancelled",
            };
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td class=\"{status}\">{status}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>",
                esc(&r.task_id),
                r.verdicts
                    .as_ref()
                    .map_or("-".to_string(), |v| esc(&v.words())),
                r.passed_at.map_or("-".to_string(), |v| v.to_string()),
                r.iterations,
                r.fresh_starts,
                r.calls,
                if r.per_call.is_empty() {
                    "-".to_string()
                } else {
                    r.wasted_calls.to_string()
                },
                r.prompt_tokens,
                r.completion_tokens,
                time(r.first_token_median_ms),
                time(r.first_token_p90_ms),
                shared(r.first_request_shared_chars, r.first_request_chars),
                each_call(&r.per_call),
                esc(r.error.as_deref().unwrap_or(&r.summary))
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// Each call on a line of its own: `code/add/1: 275 tokens, 13.3 s`, and
/// why its reply was not used when it was not (escaped).
fn each_call(calls: &[CallFigure]) -> String {
    let lines: Vec<String> = calls
        .iter()
        .map(|c| {
            let tokens = c
                .prompt_tokens
                .map_or("-".to_string(), |t| format!("{t} tokens"));
            let waste = c
                .waste
                .map_or(String::new(), |w| format!(" ({})", w.label()));
            esc(&format!(
                "{}: {tokens}, {}{waste}",
                c.tag,
                time(c.first_token_ms)
            ))
        })
        .collect();
    lines.join("<br>")
}

/// `2.10 s`, or `-`.
fn time(ms: Option<u64>) -> String {
    ms.map_or("-".to_string(), cpu_time)
}

/// `78% of 1234 characters`, or `-`.
fn shared(part: u64, total: u64) -> String {
    if total == 0 {
        return "-".into();
    }
    format!("{} of {total} characters", share(part, total))
}

/// A row of the figures beside the chart: its cell for a result set.
type Cell = fn(&Figures) -> String;

/// The figures beside the chart, a column a result set: outcomes, calls
/// and the wasted ones, tokens, time to first token, prompt tokens per
/// call, the prefix shared across problems.
fn calls_table(sets: &[(String, Vec<BenchResult>)]) -> String {
    let figures: Vec<Figures> = sets.iter().map(|(_, r)| Figures::of(r)).collect();
    let mut out = String::from("<table class=\"calls\">\n<tr><th></th>");
    for (name, _) in sets {
        let _ = write!(out, "<th>{}</th>", esc(name));
    }
    out.push_str("</tr>\n");
    let rows: [(&str, Cell); 13] = [
        ("first try", |f| {
            f.rate(f.by_round.first().copied().unwrap_or(0))
        }),
        ("after repair", |f| f.rate(f.passed_final)),
        ("fresh starts", |f| f.fresh_starts.to_string()),
        ("model calls", |f| f.calls.to_string()),
        ("wasted calls", |f| {
            if f.figured_calls == 0 {
                "-".into()
            } else {
                f.wasted_words()
            }
        }),
        ("tokens in", |f| f.prompt_tokens.to_string()),
        ("tokens out", |f| f.completion_tokens.to_string()),
        ("first token, median", |f| time(f.first_token_median_ms)),
        ("first token, p90", |f| time(f.first_token_p90_ms)),
        ("prompt tokens a call, median", |f| {
            f.call_prompt_median.map_or("-".into(), |t| t.to_string())
        }),
        ("prompt tokens a call, most", |f| {
            f.call_prompt_max.map_or("-".into(), |t| t.to_string())
        }),
        ("first prompt shared with earlier problems", |f| {
            shared(f.first_request_shared_chars, f.first_request_chars)
        }),
        ("server cache on first calls", |f| {
            if f.first_call_prompt_tokens == 0 {
                "-".into()
            } else {
                format!(
                    "{} of {} tokens",
                    share(f.first_call_cached_tokens, f.first_call_prompt_tokens),
                    f.first_call_prompt_tokens
                )
            }
        }),
    ];
    for (name, cell) in rows {
        let _ = write!(out, "<tr><th>{name}</th>");
        for f in &figures {
            let _ = write!(out, "<td>{}</td>", esc(&cell(f)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_round_is_a_point_at_its_rate() {
        let chart = svg(&[("a".into(), vec![50.0, 75.0, 100.0])]);
        // x from 56 to 528 over three rounds; y from 256 (0%) up to 16 (100%).
        assert!(
            chart.contains("points=\"56.0,136.0 292.0,76.0 528.0,16.0\""),
            "{chart}"
        );
        assert!(chart.contains(">first try</text>"));
        assert!(chart.contains(">repair 2</text>"));
        assert!(chart.contains(">75%</text>"));
    }

    #[test]
    fn two_series_are_two_lines() {
        let chart = svg(&[
            ("with".into(), vec![0.0, 50.0]),
            ("without".into(), vec![0.0, 25.0]),
        ]);
        assert_eq!(chart.matches("<polyline").count(), 2);
        assert!(chart.contains("data-name=\"without\""));
    }
}
