use super::*;

pub(crate) fn result(task_id: &str, status: Status, first: bool, fin: bool) -> BenchResult {
    BenchResult {
        status,
        error: (status == Status::Error).then(|| "model call failed: HTTP 401".into()),
        passed_first: first,
        passed_final: fin,
        iterations: 1,
        ..BenchResult::not_started(task_id.into())
    }
}

#[test]
fn errors_and_cancels_are_counted_apart_and_left_out_of_pass_at_1() {
    let results = vec![
        result("T/0", Status::Passed, true, true),
        result("T/1", Status::Failed, false, false),
        result("T/2", Status::Error, false, false),
        result("T/3", Status::Cancelled, false, false),
    ];
    assert_eq!(
        report(&results),
        "feedback: own tests (hidden tests only judge)\n\
         pass@1 first try:    50.0% (1/2)\n\
         pass@1 after repair: 50.0% (1/2)\n\
         errors: 1 problem not measured, left out of pass@1:\n  \
         T/2: model call failed: HTTP 401\n\
         cancelled: 1 problem not measured, left out of pass@1\n\
         tokens: 0 prompt + 0 completion; model time 0.0 s\n\
         repairs: 0 (0 with runtime values), fresh starts: 0, test fixes: 0\n\
         prompt prefix reused: - of 0 characters (an estimate: of each prompt, its longest prefix shared with an earlier prompt of its session and that prompt's reply)\n"
    );
    let only_errors = vec![result("T/2", Status::Error, false, false)];
    assert!(
        report(&only_errors).starts_with("pass@1: no problem was measured\n"),
        "{}",
        report(&only_errors)
    );
}

#[test]
fn repairs_are_said_apart_from_fresh_starts() {
    // Attempts after a failure: 3 repairs, one of which wrote its code
    // again and was followed by a fresh start, and 2 fresh starts.
    let mut a = result("T/0", Status::Passed, false, true);
    a.repairs = 5;
    a.repairs_with_values = 3;
    a.fresh_starts = 2;
    let text = report(&[a]);
    assert!(
        text.contains("repairs: 3 (3 with runtime values), fresh starts: 2, test fixes: 0\n"),
        "{text}"
    );
}

#[test]
fn each_problem_and_the_set_say_what_their_runs_used() {
    let mut a = result("T/0", Status::Passed, true, true);
    a.runs = 2;
    a.resources = Some(Resources {
        cpu_ms: 300,
        peak_rss_bytes: 20 << 20,
    });
    let mut b = result("T/1", Status::Failed, false, false);
    b.runs = 3;
    b.resources = Some(Resources {
        cpu_ms: 1200,
        peak_rss_bytes: 120 << 20,
    });
    assert!(
        progress_line(&a).ends_with("reused -) · 2 runs, CPU 0.30 s · peak 20 MiB"),
        "{}",
        progress_line(&a)
    );
    assert!(
        report(&[a, b])
            .ends_with("runs: 5, CPU 1.50 s in all; peak memory 120 MiB at most (T/1)\n"),
        "{}",
        report(&[])
    );
}

#[test]
fn pass_rates_by_round_count_the_version_that_first_passed() {
    let mut second = result("T/1", Status::Passed, false, true);
    second.iterations = 3;
    second.passed_at = Some(2);
    let mut old = result("T/2", Status::Passed, false, true);
    old.iterations = 3; // written before passed_at: the last version passed
    let f = Figures::of(&[result("T/0", Status::Passed, true, true), second, old]);
    assert_eq!(f.by_round, vec![1, 2, 3]);
    assert_eq!(f.passed_final, 3);
}

fn call(first_token_ms: Option<u64>, prompt: u64, waste: Option<Waste>) -> CallFigure {
    CallFigure {
        call_id: 0,
        tag: "code/f/1".into(),
        prompt_tokens: Some(prompt),
        completion_tokens: Some(10),
        cached_tokens: None,
        first_token_ms,
        total_ms: None,
        waste,
    }
}

#[test]
fn the_call_figures_add_up_per_problem_and_over_the_set() {
    let mut a = result("T/0", Status::Passed, false, true);
    let mut cached = call(Some(1_000), 300, Some(Waste::Unused));
    cached.cached_tokens = Some(120);
    a.keep_calls(vec![
        cached,
        call(Some(3_000), 500, None),
        call(None, 200, Some(Waste::Failed)),
    ]);
    assert_eq!(a.wasted_calls, 2);
    assert_eq!(
        (a.first_token_median_ms, a.first_token_p90_ms),
        (Some(1_000), Some(3_000))
    );
    assert!(
        progress_line(&a).ends_with(" · 3 calls, 2 wasted, first token 1.00 s median"),
        "{}",
        progress_line(&a)
    );
    let mut b = result("T/1", Status::Failed, false, false);
    b.keep_calls(vec![
        call(Some(2_000), 2_600, Some(Waste::Looped)),
        call(Some(40_000), 400, Some(Waste::Unused)),
    ]);
    b.first_request_chars = 1_000;
    b.first_request_shared_chars = 600;
    a.first_request_chars = 1_000;
    // Not measured: its calls are left out as its pass is.
    let mut c = result("T/2", Status::Error, false, false);
    c.keep_calls(vec![call(Some(99_000), 9_000, Some(Waste::Failed))]);
    let set = [a, b, c];
    let f = Figures::of(&set);
    assert_eq!(
        f.wasted_words(),
        "4 wasted (2 unusable or refused, 1 stopped (looping), 1 failed)"
    );
    let lines = calls_lines(&f);
    assert!(report(&set).contains(&lines));
    assert_eq!(
        lines,
        "calls: 5, 4 wasted (2 unusable or refused, 1 stopped (looping), 1 failed)\n\
         time to first token: median 2.00 s, p90 40.0 s; prompt tokens per call: median 400, most 2600\n\
         prompt prefix across problems: 30% of 2000 characters (of each problem's first request, its longest prefix shared with an earlier problem's first request)\n\
         server cache on each problem's first call: 40% of 300 prompt tokens (as the server reported them)\n"
    );
    // Results written before the call figures print none of them.
    assert_eq!(
        calls_lines(&Figures::of(&[result("T/3", Status::Passed, true, true)])),
        ""
    );
}

#[test]
fn the_server_cache_share_counts_only_problems_whose_server_said() {
    let mut told = result("T/0", Status::Passed, true, true);
    told.prompt_tokens = 400;
    told.cached_tokens = Some(300);
    let mut silent = result("T/1", Status::Failed, false, false);
    silent.prompt_tokens = 600;
    let text = report(&[told.clone(), silent]);
    assert!(
        text.contains("server prompt cache: 75% of 400 prompt tokens"),
        "{text}"
    );
    assert!(progress_line(&told).ends_with("; server cache 75%)"));
    let quiet = result("T/2", Status::Passed, true, true);
    assert!(!report(&[quiet]).contains("server prompt cache"));
}
