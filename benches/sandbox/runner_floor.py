# The evaluator's own floor: every check program through codeloop's eval
# runner (its three-part compile, its audit hook, the pass token, the
# verdict file) in a child forked from a warm interpreter that ran the
# runner as its prelude, as a fork server does, but with no sandbox, no
# server loop and no codeloop on the other end. Each program runs
# `copies` times (the third argument); with more than one, after each job
# the parent learns its problem as a fork server does when more samples
# of it follow (so copies after the first compile only the sample's part). Between the
# fork floor (fork_floor.py) and `codeloop eval`, it tells the evaluator's
# work from the isolation's. Prints the CPU time per program of the parent
# and its children (per copy), their page faults, and how many passed with
# their token.
import gzip, json, os, re, resource, shutil, sys, tempfile
import typing, math, collections, itertools, functools, string, heapq  # noqa: F401,E401
import bisect, random, fractions, decimal, copy, statistics, io, types, builtins  # noqa: F401,E401
import gc

opener = gzip.open if sys.argv[1].endswith(".gz") else open
ps = [json.loads(line) for line in opener(sys.argv[1], "rt") if line.strip()]
lines = lambda text: len(re.findall(r"\r\n|\r|\n", text))  # noqa: E731 (as compile counts them)
work = []
for p in ps:
    head = p["prompt"] + p["canonical_solution"] + "\n"
    work.append((head + p["test"] + "\n", [p["entry_point"], str(lines(p["prompt"]) + 1), str(lines(head) + 1)]))
copies = int(sys.argv[3]) if len(sys.argv) > 3 else 1
if copies > 1:  # as codeloop asks a server to learn only a problem with more samples
    work = [(program, args + ["learn"]) for program, args in work]
# On a tmpfs where there is one, as a fork server's job directory is.
try:
    scratch = tempfile.mkdtemp(prefix="codeloop-runner-floor-", dir="/dev/shm")
except OSError:  # none, or not writable: the default temporary directory
    scratch = tempfile.mkdtemp(prefix="codeloop-runner-floor-")
os.chdir(scratch)
runner = types.ModuleType("_codeloop_prelude")
runner.__file__ = sys.argv[2]
sys.modules["_codeloop_prelude"] = runner
with open(sys.argv[2], "rb") as f:
    exec(compile(f.read(), sys.argv[2], "exec"), runner.__dict__)
gc.collect()
gc.freeze()
passed = 0
t0 = os.times()
f0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
for program, args in [w for _ in range(copies) for w in work]:
    token = os.urandom(16).hex()
    for name, text in (("program.py", program), ("pass.token", token)):
        with open(name, "w") as f:
            f.write(text)
    pid = os.fork()
    if pid == 0:
        sys.argv = ["_codeloop_eval.py"] + args
        runner.run()
        os._exit(1)
    os.waitpid(pid, 0)
    with open("verdict.json") as f:
        verdict = json.load(f)
    passed += verdict["result"] == "passed" and verdict["token"] == token
    os.unlink("verdict.json")
    if runner.learn([["program.py", program]], args):
        gc.collect()
        gc.freeze()
t1 = os.times()
faults = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - f0
os.chdir("/")
shutil.rmtree(scratch, ignore_errors=True)
print((sum(t1[:4]) - sum(t0[:4])) / copies, faults / len(work) / copies, passed, len(work) * copies)
