"""codeloop's test harness. Runs one node's tests against its code.

Reads _codeloop_manifest.json from the working directory:
  {"modules": [{"name": str, "file": str, "deps": [str], "exports": [str]}...],
   "target": str, "tests": [str], "report": str}
Modules come dependencies first. Each module's file is compiled under its own
file name (so tracebacks point at the right file and line) and executed in its
own namespace; the names its dependencies export are then bound into it, so the
tested code always calls the tested version of a dependency. Several test files
run each in its own namespace; their tests are named "file::test". Test functions named test* run in
definition order; a human-eval style `check(candidate)` is called with the
target; a test file with neither counts its top-level asserts.

Writes a JSON report (per test: passed, exception, frames, expected/actual,
the values of the node's variables along the failing path) and prints one
line per test; exits 0 only when every test passed. The values come from
_codeloop_values.py beside this file: a failed test is run again under its
tracer.
"""
import sys

# The working directory holds the code under test, under names that may be
# the standard library's own (a function called `tokenize` is tokenize.py):
# never import from it by accident.
if sys.path and not getattr(sys.flags, "safe_path", False):
    del sys.path[0]  # the script's own directory

import ast
import json
import os
import signal
import time
import traceback
import types
import importlib.util

HARNESS = os.path.abspath(__file__)
VALUES = os.path.join(os.path.dirname(HARNESS), "_codeloop_values.py")
OWN_FILES = (HARNESS, VALUES)
# The import policy's guard, where it is enforced (written by the sandbox).
GUARD = os.path.join(os.path.dirname(HARNESS), "_codeloop_guard.py")
GUARD_NAME = "<codeloop import guard>"
REPR_LIMIT = 300
# Where the report goes (the manifest says; kept here for a harness error).
REPORT = ["_codeloop_report.json"]


def load_values():
    spec = importlib.util.spec_from_file_location("_codeloop_values", VALUES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


values = load_values()


class Timeout(BaseException):
    """Raised where the code is when the run's time is nearly up, so a hang is
    reported at its line before the sandbox kills the process. A BaseException,
    so `except Exception` in the code under test does not swallow it."""


def on_alarm(signum, frame):
    raise Timeout("still running after %.1f s: stopped here" % TIME_LIMIT[0])


TIME_LIMIT = [0.0]


def short_repr(value):
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ must not break the report
        text = "<unrepresentable %s: %s>" % (type(value).__name__, exc)
    if len(text) > REPR_LIMIT:
        text = text[: REPR_LIMIT - 3] + "..."
    return text


def frames_of(exc):
    out = []
    for fs in traceback.extract_tb(exc.__traceback__):
        if fs.filename == GUARD_NAME or os.path.abspath(fs.filename) in OWN_FILES:
            continue
        out.append(
            {
                "file": os.path.basename(fs.filename),
                "line": fs.lineno,
                "column": (fs.colno + 1) if getattr(fs, "colno", None) is not None else None,
                "function": fs.name,
                "code": fs.line or "",
            }
        )
    if isinstance(exc, SyntaxError) and exc.filename:
        out.append(
            {
                "file": os.path.basename(exc.filename),
                "line": exc.lineno,
                "column": exc.offset,
                "function": None,
                "code": (exc.text or "").rstrip("\n"),
            }
        )
    return out


def error_of(exc):
    message = str(exc)
    if isinstance(exc, SyntaxError):
        message = exc.msg
    return {
        "error_type": type(exc).__name__,
        "message": message,
        "frames": frames_of(exc),
        "expected": None,
        "actual": None,
        "returned_from": None,
        "values": [],
        "values_note": None,
        "executed_lines": [],
        "missed_lines": [],
    }


def find_assert(tree, line):
    best = None
    for node in values.walk(tree):
        if isinstance(node, ast.Assert):
            end = getattr(node, "end_lineno", node.lineno) or node.lineno
            if node.lineno <= line <= end:
                best = node
    return best


def calls_any(node, names):
    for sub in values.walk(node):
        if isinstance(sub, ast.Call):
            f = sub.func
            if isinstance(f, ast.Name) and f.id in names:
                return True
            if isinstance(f, ast.Attribute) and f.attr in names:
                return True
    return False


def explain_assertion(exc, tests_file, tree, names):
    """What a failed `assert` in the tests says, as the fields of its error.
    `assert a == b` (or `is`): the values of both sides, `expected` and
    `actual` (the side that calls the code under test). Any other assert
    (`abs(f(x) - y) < 1e-9`, `f(x) in (1, 2)`, a bare `f(x)`): a `message`
    with what each call of the code under test in it returned, never an
    `expected` it does not state."""
    tb = exc.__traceback__
    frame = None
    while tb is not None:
        if os.path.basename(tb.tb_frame.f_code.co_filename) == tests_file:
            frame = (tb.tb_frame, tb.tb_lineno)
        tb = tb.tb_next
    if frame is None or tree is None:
        return None
    f, line = frame
    node = find_assert(tree, line)
    if node is None:
        return None

    def value_of(expr):
        return eval(compile(ast.Expression(expr), tests_file, "eval"), f.f_globals, f.f_locals)

    test = node.test
    plain = isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.Is))
    try:
        if plain:
            left, right = test.left, test.comparators[0]
            if calls_any(right, names) and not calls_any(left, names):
                left, right = right, left
            actual, expected = value_of(left), value_of(right)
            return {"expected": short_repr(expected), "actual": short_repr(actual)}
        return {"message": unstated(test, value_of, names)}
    except Timeout:
        raise
    except BaseException:
        return None


def explain(err, explained):
    """`explain_assertion`'s fields into `err`; an assert's own message comes first."""
    if not explained:
        return
    said = explained.get("message")
    err.update({k: v for k, v in explained.items() if k != "message"})
    if said:
        err["message"] = "%s; %s" % (err["message"], said) if err["message"] else said


def unstated(test, value_of, names):
    """The words for an assert that states no expected value: the assert,
    then what the calls of the code under test in it returned, then the
    value of a comparison's left side when it is more than such a call."""
    callee = set(names) | {"candidate"}
    calls = []
    for sub in values.walk(test):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in callee:
            text = ast.unparse(sub)
            if text not in [c for c, _ in calls]:
                calls.append((text, value_of(sub)))
        if len(calls) == 3:
            break
    parts = ["%s returned %s" % (text, short_repr(v)) for text, v in calls]
    if isinstance(test, ast.Compare):
        left = ast.unparse(test.left)
        if left not in [c for c, _ in calls]:
            parts.append("%s is %s" % (left, short_repr(value_of(test.left))))
    said = "`%s` is false" % ast.unparse(test)
    return said + (": " + ", ".join(parts) if parts else "")


def class_cases(tns, names):
    """The test methods of the test classes a test file defines (`class
    TestX(unittest.TestCase)`, or a plain `class TestX` as pytest reads
    it), each bound to its own instance, as `TestX.test_y`: small models
    write their tests so, and none of them ran before."""
    out = []
    for k, v in list(tns.items()):
        if not (isinstance(v, type) and k.startswith("Test")) or k in names:
            continue
        case_type = tns.get("__codeloop_testcase__")
        for m in sorted(a for a in dir(v) if a.startswith("test") and callable(getattr(v, a, None))):
            try:
                if case_type is not None and issubclass(v, case_type):
                    inst = v(m)
                else:
                    inst = v()
            except Exception:
                continue
            out.append(("%s.%s" % (k, m), getattr(inst, m)))
    return out


def run_test_file(tests_path, prefix, spaces, exports, names, target_path, target_fn, report, finish):
    target_file = os.path.basename(target_path) if target_path else None
    tests_file = os.path.basename(tests_path)
    tns = {"__name__": "__codeloop_tests__", "__file__": tests_path, "__builtins__": __builtins__}
    for name, ns in spaces.items():
        for export in exports[name]:
            tns[export] = ns[export]
    tree = None
    try:
        with open(tests_path, encoding="utf-8") as fh:
            test_source = fh.read()
        tree = ast.parse(test_source, tests_path)
        exec(compile(test_source, tests_path, "exec"), tns)
        if "unittest" in sys.modules:
            tns["__codeloop_testcase__"] = sys.modules["unittest"].TestCase
    except BaseException as exc:
        err = error_of(exc)
        if isinstance(exc, AssertionError):
            stopped = False
            try:
                err["values"] = values.at_failure(exc, target_file)
                explained = explain_assertion(exc, tests_file, tree, names)
                explain(err, explained)
            except Timeout:
                stopped = True
            report["tests"].append({"name": prefix + "<module>", "passed": False, "error": err})
            report["failed"] += 1
            print("FAIL %s<module>: AssertionError %s" % (prefix, exc), flush=True)
            if stopped:
                print("stopped at the time limit", flush=True)
                finish(1)
            return
        report["load_error"] = err
        print("LOAD ERROR %s: %s: %s" % (tests_path, type(exc).__name__, exc), flush=True)
        finish(1)

    cases = [(k, v) for k, v in tns.items() if k.startswith("test") and callable(v) and k not in names]
    cases += class_cases(tns, names)
    if not cases and callable(tns.get("check")) and target_fn is not None:
        cases = [("check", lambda: tns["check"](target_fn))]
    if not cases:
        report["tests"].append({"name": prefix + "<module>", "passed": True, "error": None})
        report["passed"] += 1
        print("PASS %s<module>" % prefix, flush=True)
        return

    for case_name, fn in cases:
        case_name = prefix + case_name
        started = time.monotonic()
        try:
            fn()
        except BaseException as exc:
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            first_seconds = time.monotonic() - started
            err = error_of(exc)
            stopped = isinstance(exc, Timeout)
            try:
                explain_failure(exc, err, fn, first_seconds, tests_file, tree, names, target_path)
            except Timeout:
                stopped = True
            report["tests"].append({"name": case_name, "passed": False, "error": err})
            report["failed"] += 1
            detail = err["message"]
            if err["expected"] is not None:
                detail = "expected %s, got %s" % (err["expected"], err["actual"])
            print("FAIL %s: %s: %s" % (case_name, err["error_type"], detail), flush=True)
            if stopped:
                print("%d passed, %d failed (stopped at the time limit)" % (report["passed"], report["failed"]), flush=True)
                finish(1)
        else:
            report["tests"].append({"name": case_name, "passed": True, "error": None})
            report["passed"] += 1
            print("PASS %s" % case_name, flush=True)


def explain_failure(exc, err, fn, first_seconds, tests_file, tree, names, target_path):
    """Fill in what a failed test's report says beyond the exception: both
    sides of a failed comparison, the node's values along the failing path,
    the line its code returned a wrong value from. A Timeout raised meanwhile
    (the harness's time is up) leaves it as far as it got."""
    target_file = os.path.basename(target_path) if target_path else None
    # First, before anything runs again and changes what they hold.
    err["values"] = values.at_failure(exc, target_file)
    if isinstance(exc, (Timeout, RecursionError)):
        # A hang is stopped for good; a recursion that deep would not repeat
        # itself under the tracer, whose own calls take stack too.
        return
    explained = None
    if isinstance(exc, AssertionError):
        explained = explain_assertion(exc, tests_file, tree, names)
        explain(err, explained)
    if target_path:
        found = values.collect(fn, exc, target_path, first_seconds, err["values"])
        err["values"], err["values_note"] = found["values"], found["values_note"]
        err["executed_lines"], err["missed_lines"] = found["executed_lines"], found["missed_lines"]
        if explained:
            err["returned_from"] = found["returned_from"]


def install_import_guard():
    """The import policy, where it is enforced: installed once the harness
    and its values recorder have imported everything they use, and before
    the code under test loads. The policy is the generated code's, never
    codeloop's: `block = ["json"]` refuses json to the code and its tests,
    not to the harness that reports on them."""
    if not os.path.exists(GUARD):
        return
    with open(GUARD, "rb") as fh:
        code = compile(fh.read(), GUARD_NAME, "exec")
    exec(code, {"__builtins__": __builtins__})


def harness_failed(text):
    """The harness's own failure, never the code's: said in the report as
    such, so it is not sent to a repair."""
    with open(REPORT[0], "w", encoding="utf-8") as fh:
        json.dump({"load_error": None, "tests": [], "passed": 0, "failed": 0, "harness_error": text}, fh)
    print("codeloop's test harness failed (codeloop's error, not the code's):\n" + text, file=sys.stderr, flush=True)
    sys.exit(3)


def main():
    with open("_codeloop_manifest.json", encoding="utf-8") as fh:
        manifest = json.load(fh)
    REPORT[0] = manifest["report"]
    report = {"load_error": None, "tests": [], "passed": 0, "failed": 0}
    spaces = {}
    exports = {}
    solution = types.ModuleType("solution")
    stdlib = getattr(sys, "stdlib_module_names", frozenset())

    def finish(code):
        with open(manifest["report"], "w", encoding="utf-8") as fh:
            json.dump(report, fh)
        sys.stdout.flush()
        sys.exit(code)

    limit = manifest.get("time_limit")
    if limit and hasattr(signal, "setitimer"):
        TIME_LIMIT[0] = limit
        signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, limit)

    install_import_guard()
    target_path = None
    for mod in manifest["modules"]:
        name, path = mod["name"], mod["file"]
        if name == manifest["target"]:
            target_path = os.path.abspath(path)
        ns = {"__name__": name, "__file__": path, "__builtins__": __builtins__}
        try:
            with open(path, encoding="utf-8") as fh:
                source = fh.read()
            exec(compile(source, path, "exec"), ns)
        except BaseException as exc:
            report["load_error"] = error_of(exc)
            print("LOAD ERROR %s: %s: %s" % (path, type(exc).__name__, exc), flush=True)
            finish(1)
        for dep in mod["deps"]:
            for export in exports.get(dep, ()):
                if export in spaces[dep]:
                    ns[export] = spaces[dep][export]
        spaces[name] = ns
        exports[name] = mod.get("exports") or [name]
        missing = [e for e in exports[name] if e not in ns]
        if missing:
            exc = NameError("%s does not define a function named %r" % (path, missing[0]))
            report["load_error"] = error_of(exc)
            report["load_error"]["frames"] = [
                {"file": os.path.basename(path), "line": 1, "column": None, "function": None, "code": ""}
            ]
            print("LOAD ERROR %s" % exc, flush=True)
            finish(1)
        module = types.ModuleType(name)
        module.__dict__.update(ns)
        if name not in stdlib:
            sys.modules[name] = module
        for export in exports[name]:
            setattr(solution, export, ns[export])
    sys.modules["solution"] = solution

    test_files = manifest.get("tests") or []
    if not test_files:
        finish(0)
    names = {e for name in spaces for e in exports[name]}
    target = manifest["target"]
    target_fn = None
    if target in spaces and exports[target]:
        target_fn = spaces[target].get(exports[target][0])
    for tests_path in test_files:
        prefix = (tests_path + "::") if len(test_files) > 1 else ""
        run_test_file(tests_path, prefix, spaces, exports, names, target_path, target_fn, report, finish)
    print("%d passed, %d failed" % (report["passed"], report["failed"]), flush=True)
    finish(0 if report["failed"] == 0 else 1)


if __name__ == "__main__":
    try:
        main()
    except (SystemExit, KeyboardInterrupt, Timeout):
        raise
    except BaseException:
        # What the code under test and its tests raise is caught where they
        # run: an exception that reaches here is the harness's own.
        harness_failed(traceback.format_exc())
