//! Forged samples fail: a wrong completion that tries to pass without
//! passing its check (early exits, SystemExit, a verdict written by itself,
//! hooks after the check, signals, trace hooks, results equal to anything,
//! a check swapped by a thread, a pass token looked for in the memory the
//! sample can reach) reads as failed, with fork servers and with
//! a fresh interpreter per sample; honest samples, multiprocessing
//! included, still pass.

use std::time::Duration;

use codeloop::eval::{self, EvalOptions, Problem, Sample};
use codeloop::exec::Sandbox;
use tokio_util::sync::CancellationToken;

fn problem() -> Problem {
    Problem {
        task_id: "t/0".into(),
        prompt: "def double(x):\n".into(),
        canonical_solution: None,
        test: "def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(5) == 10\n    assert abs(candidate(2) - 4) < 1e-9\n".into(),
        entry_point: "double".into(),
    }
}

fn sample(completion: &str) -> Sample {
    Sample {
        task_id: "t/0".into(),
        completion: completion.into(),
        fields: serde_json::Map::new(),
    }
}

const HONEST: &[(&str, &str)] = &[
    ("correct", "    return 2 * x\n"),
    (
        "multiprocessing",
        "    import multiprocessing\n    with multiprocessing.Pool(2) as p:\n        return p.map(abs, [2 * x])[0]\n",
    ),
];

const FORGED: &[(&str, &str)] = &[
    ("os._exit(0)", "    return 0\nimport os\nos._exit(0)\n"),
    ("SystemExit", "    return 0\nraise SystemExit(0)\n"),
    (
        "exit 0 inside the check",
        "    import os\n    os._exit(0)\n",
    ),
    (
        "a verdict written by the sample",
        "    import json, os\n    json.dump({'result': 'passed', 'token': ''}, open('verdict.json', 'w'))\n    json.dump('passed', open('verdict2.json', 'w'))\n    os._exit(0)\n",
    ),
    (
        "an atexit hook after the failed check",
        "    return 0\nimport atexit, json\natexit.register(lambda: json.dump({'result': 'passed', 'token': ''}, open('verdict.json', 'w')))\n",
    ),
    (
        "a signal to itself",
        "    import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)\n",
    ),
    (
        "a signal to its parent",
        "    import os, signal\n    os.kill(os.getppid(), signal.SIGKILL)\n    return 0\n",
    ),
    (
        "a trace hook that skips the asserts",
        "    return 0\nimport sys\ndef _t(frame, event, arg):\n    if event == 'line' and frame.f_code.co_name == 'check':\n        frame.f_lineno = frame.f_code.co_firstlineno + 4\n    return _t\nsys.settrace(_t)\n",
    ),
    (
        "a result equal to anything",
        "    class Any(int):\n        def __eq__(self, other): return True\n        def __sub__(self, other): return 0\n    return Any()\n",
    ),
    (
        "a result inside a list equal to anything",
        "    class Any:\n        __eq__ = lambda s, o: True\n    return [Any()][0]\n",
    ),
    (
        "a check swapped by a thread",
        "    return 0\nimport threading, time\ndef _swap():\n    g = globals()\n    while g.get('check') is None or getattr(g['check'], '_mine', False):\n        time.sleep(0.0001)\n    f = lambda c: None\n    f._mine = True\n    g['check'] = f\nthreading.Thread(target=_swap, daemon=True).start()\n",
    ),
    (
        "the frames reached through a traceback",
        "    try:\n        raise ValueError\n    except ValueError as e:\n        f = e.__traceback__.tb_frame.f_back\n        while f is not None:\n            for k, v in list(f.f_locals.items()):\n                if k == 'token':\n                    import json, os\n                    json.dump({'result': 'passed', 'token': v}, open('verdict.json', 'w'))\n                    os._exit(0)\n            f = f.f_back\n    return 0\n",
    ),
    (
        "a pass token looked for in every frame's variables",
        "    import json, os, re, sys\n    found, f = [], sys._getframe()\n    while f is not None and not found:\n        seen, todo = set(), [f.f_locals]\n        while todo and len(seen) < 100000:\n            v = todo.pop()\n            if id(v) in seen:\n                continue\n            seen.add(id(v))\n            if isinstance(v, (str, bytes)):\n                found += re.findall(r'[0-9a-f]{32}', v if isinstance(v, str) else v.decode('latin-1'))\n            elif isinstance(v, dict):\n                todo += list(v.keys()) + list(v.values())\n            elif isinstance(v, (list, tuple, set, frozenset)):\n                todo += list(v)\n        f = f.f_back\n    if found:\n        json.dump({'result': 'passed', 'token': found[0]}, open('verdict.json', 'w'))\n        os._exit(0)\n    return 0\n",
    ),
    (
        "builtins patched for the test",
        "    import builtins\n    builtins.abs = lambda v: 0\n    return 2 * x\n",
    ),
];

async fn verdicts(completions: &[(&str, &str)], fork_server: bool) -> Vec<(String, bool, String)> {
    let samples: Vec<Sample> = completions.iter().map(|(_, c)| sample(c)).collect();
    let options = EvalOptions {
        workers: 2,
        timeout: Duration::from_secs(3),
        fork_server,
        ..EvalOptions::default()
    };
    let results = eval::evaluate(
        &Sandbox::probe(),
        &[problem()],
        &samples,
        &options,
        None,
        CancellationToken::new(),
    )
    .await
    .unwrap();
    completions
        .iter()
        .zip(results)
        .map(|((name, _), r)| (name.to_string(), r.passed, r.result))
        .collect()
}

async fn forged_fail_and_honest_pass(fork_server: bool) {
    for (name, passed, result) in verdicts(FORGED, fork_server).await {
        assert!(!passed, "{name} passed ({result})");
        assert!(
            result.starts_with("failed") || result == "timed out",
            "{name}: {result}"
        );
    }
    for (name, passed, result) in verdicts(HONEST, fork_server).await {
        assert!(passed, "{name}: {result}");
        assert_eq!(result, "passed");
    }
}

#[tokio::test]
async fn forged_samples_fail_in_fork_servers() {
    forged_fail_and_honest_pass(true).await;
}

#[tokio::test]
async fn forged_samples_fail_in_fresh_interpreters() {
    forged_fail_and_honest_pass(false).await;
}
