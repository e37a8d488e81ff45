# The fork server's own floor: every sample through codeloop's fork server
# (forkserver.py, with the evaluator's runner as its prelude and its judge)
# as codeloop drives it (length-first JSON jobs, each followed by its
# judge's frame, the next queued while one runs), but
# with no sandbox around it: no namespaces, seccomp, Landlock or rlimits of
# the sandbox, no codeloop. Between the runner floor (runner_floor.py) and
# `codeloop eval`, it tells the server's work per job (files, hand-over,
# sweep, reply) from the isolation's and codeloop's side. Arguments: the
# problems file, the runner's source, the server's source, the copies.
# Prints the CPU time per program of the server and its children, the
# judge among them (per copy), their page faults per job, and how many
# passed with their token.
import gzip, json, os, re, resource, shutil, subprocess, sys, tempfile

problems, runner, server = sys.argv[1:4]
copies = int(sys.argv[4]) if len(sys.argv) > 4 else 1
opener = gzip.open if problems.endswith(".gz") else open
ps = [json.loads(line) for line in opener(problems, "rt") if line.strip()]
lines = lambda text: len(re.findall(r"\r\n|\r|\n", text))  # noqa: E731 (as compile counts them)
# On a tmpfs where there is one, as the sandbox's job directories are.
try:
    root = tempfile.mkdtemp(prefix="codeloop-server-floor-", dir="/dev/shm")
except OSError:  # none, or not writable: the default temporary directory
    root = tempfile.mkdtemp(prefix="codeloop-server-floor-")
shutil.copy(server, os.path.join(root, "_codeloop_forkserver.py"))
shutil.copy(runner, os.path.join(root, "_codeloop_eval_prelude.py"))
setup = {
    "jobs": root + "/jobs", "jobdir": root + "/jobs/job", "out": root + "/_out", "kill_all": False,
    "private_shm": False, "prelude": "_codeloop_eval_prelude.py", "ruleset": None,
    "prctl": {"set_dumpable": 4, "set_child_subreaper": 36},
}
jobs = []
for _ in range(copies):
    for p in ps:
        token = os.urandom(16).hex()
        args = [p["entry_point"], str(lines(p["prompt"]) + 1)]
        if copies > 1:  # as codeloop asks a server to learn only a problem with more samples
            args.append("learn")
        files = [
            ["program.py", p["prompt"] + p["canonical_solution"] + "\n"],
            ["_codeloop_eval.py", "import _codeloop_prelude\n_codeloop_prelude.serve_job()\n"],
        ]
        job = {
            "id": len(jobs) + 1, "files": files, "script": "_codeloop_eval.py", "args": args,
            "wall": 3.25, "cpu": 5, "mem": 1 << 30, "fsize": 1 << 26, "nofile": 256, "keep": 4096,
            "collect": [], "disk": 1 << 26, "entries": 1000, "require_confinement": False, "judged": True,
        }
        judge = {"token": token, "entry": p["entry_point"], "prompt": p["prompt"],
                 "completion": p["canonical_solution"], "test": p["test"]}
        body, frame = json.dumps(job).encode(), json.dumps(judge).encode()
        jobs.append((b"%08x" % len(body) + body + b"%08x" % len(frame) + frame, token))
t0 = os.times()
f0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
srv = subprocess.Popen(
    [sys.executable, "-E", "-s", "-u", "-B", "-S", "_codeloop_forkserver.py", json.dumps(setup)],
    cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={"PATH": "/usr/bin:/bin"},
)
passed = 0
if json.loads(srv.stdout.readline()).get("ready"):
    srv.stdin.write(jobs[0][0])
    srv.stdin.flush()
    for i, (_, token) in enumerate(jobs):
        if i + 1 < len(jobs):
            srv.stdin.write(jobs[i + 1][0])
            srv.stdin.flush()
        reply = json.loads(srv.stdout.readline())
        verdict = reply.get("judged")
        passed += bool(verdict) and json.loads(verdict) == {"result": "passed", "token": token}
srv.stdin.close()
srv.wait()
t1 = os.times()
faults = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - f0
shutil.rmtree(root, ignore_errors=True)
n = len(jobs)
print((t1[2] + t1[3] - t0[2] - t0[3]) / copies, faults / n, passed, n)
