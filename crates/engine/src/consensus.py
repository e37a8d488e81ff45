# codeloop's functional consensus: each candidate of a node, loaded after
# its dependencies' code, is called on every call of the node's function
# that its tests make (the tests' inputs, without their expected values;
# `candidate(...)` too, as HumanEval's `check(candidate)` calls it), then
# on the calls the model proposed (the last `proposed` inputs);
# what each returned (or raised) is written to consensus.json. Each load
# and call has its own time limit; printing is swallowed.
import ast
import contextlib
import io
import json
import signal


class Timeout(Exception):
    pass


def on_alarm(signum, frame):
    raise Timeout()


def bounded(text, most=300):
    return text if len(text) <= most else text[:most] + "..."


def main():
    with open("consensus_manifest.json", encoding="utf-8") as fh:
        m = json.load(fh)
    name = m["name"]
    names = {name, "candidate"}
    with open(m["tests"], encoding="utf-8") as fh:
        tests = fh.read()
    deps = ""
    if m["deps"]:
        with open(m["deps"], encoding="utf-8") as fh:
            deps = fh.read()
    calls = []
    try:
        for node in ast.walk(ast.parse(tests)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in names
            ):
                src = ast.unparse(node)
                if src not in calls:
                    calls.append(src)
    except SyntaxError:
        pass
    calls = calls[: m["most_inputs"]]
    # The model's own proposals: one call of the function each, nothing else.
    proposed = 0
    for src in m.get("proposed", []):
        try:
            expr = ast.parse(src, mode="eval").body
        except SyntaxError:
            continue
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Name)
            and expr.func.id in names
        ):
            src = ast.unparse(expr)
            if src not in calls:
                calls.append(src)
                proposed += 1
    signal.signal(signal.SIGALRM, on_alarm)
    outputs = []
    for path in m["candidates"]:
        ns = {"__name__": "candidate"}
        try:
            with open(path, encoding="utf-8") as fh:
                source = deps + "\n" + fh.read()
            with contextlib.redirect_stdout(io.StringIO()):
                signal.setitimer(signal.ITIMER_REAL, m["load_secs"])
                try:
                    exec(compile(source, path, "exec"), ns)
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            if not callable(ns.get(name)):
                raise NameError(name)
            ns["candidate"] = ns[name]
        except BaseException:
            outputs.append(None)
            continue
        outs = []
        for src in calls:
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    signal.setitimer(signal.ITIMER_REAL, m["call_secs"])
                    try:
                        value = eval(src, ns)
                    finally:
                        signal.setitimer(signal.ITIMER_REAL, 0)
                outs.append("= " + bounded(repr(value)))
            except Timeout:
                outs.append("timeout")
            except BaseException as exc:
                outs.append("raise " + type(exc).__name__)
        outputs.append(outs)
    with open("consensus.json", "w", encoding="utf-8") as fh:
        json.dump({"inputs": calls, "outputs": outputs, "proposed": proposed}, fh)


main()
