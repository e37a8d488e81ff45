# The evaluator's own floor: every sample through codeloop's eval runner
# (the sample's process forked from a warm interpreter that ran the runner
# as its prelude, as a fork server does, answering the judge's calls over a
# socket; the judge, with its learned problems, is this process itself),
# but with no sandbox, no server loop and no codeloop on the other end.
# Each program runs `copies` times (the third argument); with more than
# one, after each job this process learns its problem as a fork server
# does when more samples of it follow (so copies after the first compile
# only the sample's part). Between the fork floor (fork_floor.py) and
# `codeloop eval`, it tells the evaluator's work from the isolation's.
# Prints the CPU time per program of this process and its children (per
# copy), their page faults, and how many passed with their token.
import gzip, json, os, re, resource, shutil, socket, sys, tempfile
import typing, math, collections, itertools, functools, string, heapq  # noqa: F401,E401
import bisect, random, fractions, decimal, copy, statistics, io, types, builtins  # noqa: F401,E401
import gc

opener = gzip.open if sys.argv[1].endswith(".gz") else open
ps = [json.loads(line) for line in opener(sys.argv[1], "rt") if line.strip()]
lines = lambda text: len(re.findall(r"\r\n|\r|\n", text))  # noqa: E731 (as compile counts them)
work = []
for p in ps:
    judge = {"entry": p["entry_point"], "prompt": p["prompt"], "completion": p["canonical_solution"], "test": p["test"]}
    work.append((p["prompt"] + p["canonical_solution"] + "\n", [p["entry_point"], str(lines(p["prompt"]) + 1)], judge))
copies = int(sys.argv[3]) if len(sys.argv) > 3 else 1
if copies > 1:  # as codeloop asks a server to learn only a problem with more samples
    work = [(program, args + ["learn"], judge) for program, args, judge in work]
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
for program, args, judge in [w for _ in range(copies) for w in work]:
    with open("program.py", "w") as f:
        f.write(program)
    mine, its = (sock.detach() for sock in socket.socketpair())
    pid = os.fork()
    if pid == 0:
        os.close(mine)
        sys.argv = ["_codeloop_eval.py"] + args
        runner.serve(its, args[0], int(args[1]))
        os._exit(1)
    os.close(its)
    token = os.urandom(16).hex()
    verdict = json.loads(runner.judge_job(dict(judge, token=token), mine))
    os.close(mine)
    os.waitpid(pid, 0)
    passed += verdict["result"] == "passed" and verdict["token"] == token
    if runner.learn([["program.py", program]], args):
        gc.collect()
        gc.freeze()
t1 = os.times()
faults = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - f0
os.chdir("/")
shutil.rmtree(scratch, ignore_errors=True)
print((sum(t1[:4]) - sum(t0[:4])) / copies, faults / len(work) / copies, passed, len(work) * copies)
