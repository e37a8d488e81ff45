# What a fork server learns of a problem (the eval runner's learn()) gives
# each later sample the same program as compiling it whole: for every
# HumanEval problem and for hand-made ones, samples the learned path takes
# compile to the same code as the whole-program path, samples it must not
# take are left to the whole program, and in forked children, as in a fork
# server, both paths give the same verdicts.
#
# python3 learned_parts.py RUNNER HUMANEVAL_JSONL_GZ; prints "ok N M" (N
# samples compared, M verdicts) or fails with what differed.
import gzip, json, os, re, shutil, sys, tempfile, types

runner_path, problems_path = sys.argv[1], sys.argv[2]
runner = types.ModuleType("_codeloop_prelude")
runner.__file__ = runner_path
sys.modules["_codeloop_prelude"] = runner
with open(runner_path, "rb") as f:
    exec(compile(f.read(), runner_path, "exec"), runner.__dict__)

def closure(f):
    return dict(zip(f.__code__.co_freevars, (c.cell_contents for c in f.__closure__)))


learned_parts, compile_parts = closure(runner.run)["learned_parts"], closure(runner.run)["compile_parts"]
learned = closure(learned_parts)["learned"]
code_type = type(learned_parts.__code__)
lines = lambda text: len(re.findall(r"\r\n|\r|\n", text))  # noqa: E731 (as codeloop counts them)


def job(problem, completion):
    head = problem["prompt"] + completion + "\n"
    program = head + problem["test"] + "\n"
    return program, [problem["entry_point"], str(lines(problem["prompt"]) + 1), str(lines(head) + 1)]


def same(a, b, top=False):
    """The same code: bytecode, names, constants (code within, in turn)
    and line numbers. The test's own module code (`top`) is moved down as
    a whole when the test starts lower than where it was learned, so its
    first line (and RESUME's, which no line of the program holds) differ."""
    if type(a) is not code_type or type(b) is not code_type:
        return type(a) is type(b) and a == b
    la, lb = list(a.co_lines()), list(b.co_lines())
    if top:
        la, lb = la[1:], lb[1:]
    return (
        a.co_code == b.co_code
        and a.co_names == b.co_names
        and a.co_varnames == b.co_varnames
        and a.co_flags == b.co_flags
        and (top or a.co_firstlineno == b.co_firstlineno)
        and la == lb
        and len(a.co_consts) == len(b.co_consts)
        and all(same(x, y) for x, y in zip(a.co_consts, b.co_consts))
    )


def compare(name, program, args):
    """learned_parts() against compile_parts(): the same, or None."""
    completion_line, test_line = int(args[1]), int(args[2])
    got = learned_parts(program, completion_line, test_line)
    if got is None:
        return False
    want = compile_parts(program, completion_line, test_line)
    (gp, gs, gt), gdefs, gplain, gbound = got
    (wp, ws, wt), wdefs, wplain, wbound = want
    problems = []
    for part, a, b in (("prompt", gp, wp), ("sample", gs, ws), ("test", gt, wt)):
        if not same(a, b, top=part == "test"):
            problems.append(part)
    if set(gdefs) != set(wdefs) or not all(same(gdefs[k], wdefs[k]) for k in gdefs):
        problems.append("test functions")
    if gplain != wplain or gbound != wbound:
        problems.append("test names")
    assert not problems, f"{name}: the learned path differs in {problems}"
    return True


problems = [json.loads(line) for line in gzip.open(problems_path, "rt") if line.strip()]
hand_made = [
    # A prompt that ends with a def's header and nothing under it.
    {"task_id": "bare", "prompt": "def double(x):\n", "entry_point": "double",
     "canonical_solution": "    return 2 * x\n",
     "test": "def check(candidate):\n    assert candidate(2) == 4\n"},
    # Its last def decorated, a helper and a future import before it.
    {"task_id": "decorated", "entry_point": "f",
     "prompt": "from __future__ import annotations\nimport functools\n\ndef helper(x: int) -> int:\n    return x + 1\n\n@functools.lru_cache(None)\ndef f(x: int) -> int:\n    \"\"\"Doc.\"\"\"\n",
     "canonical_solution": "    return helper(x) * 2\n",
     "test": "\n\nMETADATA = {}\n\n@staticmethod\ndef check(candidate):\n    pass\n\ndef check(candidate):\n    assert candidate(1) == 4\n"},
    # A method: the prompt's last statement is a class.
    {"task_id": "method", "entry_point": "g",
     "prompt": "class A:\n    def g(self, x):\n",
     "canonical_solution": "        return x\n\ndef g(x):\n    return A().g(x)\n",
     "test": "def check(candidate):\n    assert candidate(3) == 3\n"},
]
for p in problems + hand_made:
    program, args = job(p, p["canonical_solution"])
    assert not runner.learn([["program.py", program]], args), "learned without being asked"
    assert runner.learn([["program.py", program], ["pass.token", "0" * 32]], args + ["learn"]), p["task_id"]
    assert not runner.learn([["program.py", program]], args + ["learn"]), "learned twice"

taken = [
    ("as written", lambda c: c),
    ("a longer completion (the test further down)", lambda c: "    # a note\n\n    \n" + c),
    ("a shorter one (the test further up)", lambda c: c[: len(c) - len(c.lstrip())] + "return None\n"),
    ("a comment at the margin first", lambda c: "# a note\n" + c),
    ("a helper after it, at the margin", lambda c: c + "\n\ndef _mine(v):\n    return v\n\n_mine(1)\n"),
    ("\\r\\n newlines", lambda c: c.replace("\n", "\r\n")),
    ("a lone \\r", lambda c: c.replace("\n", "\r", 1)),
]
left = [
    ("the entry redefined at the margin", lambda c, p: "def " + p["entry_point"] + "(*a):\n    return None\n"),
    ("a future import", lambda c, p: "    from __future__ import annotations\n" + c),
    ("a form feed", lambda c, p: "\x0c" + c),
    # A form feed moves the margin back: this line is at the margin.
    ("a form feed after a space", lambda c, p: " \x0c_x = 1\n"),
    ("a syntax error", lambda c, p: c + "    return (\n"),
    ("an open string that swallows the test", lambda c, p: c + 'x = """\n'),
    ("a trailing backslash", lambda c, p: c + "x = 1 + \\\n"),
    ("nothing", lambda c, p: ""),
    ("only comments", lambda c, p: "    # nothing yet\n"),
    ("a null byte", lambda c, p: c + "\x00"),
]
compared = 0
for p in problems + hand_made:
    for name, change in taken:
        program, args = job(p, change(p["canonical_solution"]))
        assert compare(f"{p['task_id']} {name}", program, args), f"{p['task_id']} {name}: not taken"
        compared += 1
    for name, change in left:
        program, args = job(p, change(p["canonical_solution"], p))
        assert not compare(f"{p['task_id']} {name}", program, args), f"{p['task_id']} {name}: taken"

# Each path's verdict, in a forked child as a fork server gives it: the
# same, for samples that pass, fail, or fail to compile.
verdict_cases = []
for p in problems[:40] + hand_made:
    for completion in (p["canonical_solution"], "    return None\n", "    return (\n", "    # a note\n" + p["canonical_solution"]):
        verdict_cases.append(job(p, completion))
work = tempfile.mkdtemp(prefix="codeloop-learned-parts-")
os.chdir(work)


def verdict_of(program, args, forget):
    with open("program.py", "w") as f:
        f.write(program)
    with open("pass.token", "w") as f:
        f.write("t" * 32)
    pid = os.fork()
    if pid == 0:
        if forget:
            learned.clear()
        sys.argv = ["_codeloop_eval.py"] + args
        runner.run()
        os._exit(1)
    os.waitpid(pid, 0)
    with open("verdict.json") as f:
        got = json.load(f)
    os.unlink("verdict.json")
    return got["result"], got["token"] == "t" * 32


for program, args in verdict_cases:
    whole, learnt = verdict_of(program, args, True), verdict_of(program, args, False)
    assert whole == learnt, f"{args}: compiled whole {whole}, learned {learnt}"
os.chdir("/")
shutil.rmtree(work)
print("ok", compared, len(verdict_cases))
