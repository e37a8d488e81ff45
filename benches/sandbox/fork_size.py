# What a forking parent's size costs each child: a trivial program run in
# children forked from a warm interpreter (the fork floor's modules), first
# as it is, then with the evaluator's runner set up in it as a fork server
# sets it up (run as its prelude, collected, frozen, freed memory given
# back), then with more memory of its own (live objects). Prints, per
# parent: its resident anonymous memory (KiB) and the CPU per child (µs,
# parent and child: the fork, the child's run and its exit), each the
# lowest of a few rounds. Its arguments: the problems file (not read) and
# the runner's source.
import ctypes, gc, os, sys, types
import typing, math, re, collections, itertools, functools, string, heapq  # noqa: F401,E401
import bisect, random, fractions, decimal, copy, statistics, io, builtins  # noqa: F401,E401

ROUNDS, CHILDREN = 3, 1000
program = compile("def f(n):\n    return sum(i * i for i in range(n))\nassert f(200) > 0\n", "p", "exec")


def anon_kib():
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("Anonymous:"):
                return int(line.split()[1])
    return 0


def settle():
    gc.collect()
    gc.freeze()
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    if trim is not None:
        trim(0)


def per_child_us():
    best = None
    for _ in range(ROUNDS):
        t0 = os.times()
        for _ in range(CHILDREN):
            pid = os.fork()
            if pid == 0:
                exec(program, {})
                os._exit(0)
            os.waitpid(pid, 0)
        t1 = os.times()
        cpu = sum(t1[:4]) - sum(t0[:4])
        best = cpu if best is None else min(best, cpu)
    return best / CHILDREN * 1e6


settle()
figures = [anon_kib(), per_child_us()]
runner = types.ModuleType("_codeloop_prelude")
runner.__file__ = sys.argv[2]
sys.modules["_codeloop_prelude"] = runner
with open(sys.argv[2], "rb") as f:
    exec(compile(f.read(), sys.argv[2], "exec"), runner.__dict__)
settle()
figures += [anon_kib(), per_child_us()]
pad = [str(i) * 3 for i in range(8 << 20 >> 6)]  # about 8 MiB of live objects
settle()
figures += [anon_kib(), per_child_us()]
print(*("%.1f" % x for x in figures))
