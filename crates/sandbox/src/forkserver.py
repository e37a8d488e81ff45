# codeloop fork server: a warm interpreter inside the sandbox that runs one
# job at a time in a forked child. Requests and replies are JSON lines on
# stdin and stdout. Each child gets a fresh directory, its own rlimits, its
# output in files, and the nested Landlock domain codeloop built for it: it
# may write only beneath its own directory and may signal nothing outside
# itself. After each job
# every other process in the sandbox is killed and the scratch areas wiped.
import ctypes, gc, json, marshal, os, resource, select, signal, socket, stat, struct, sys, time

# Warm the modules test programs use most, so a fork starts with them loaded
# (and the evaluator's runner finds the modules it watches already there).
# Not more: each module's objects are pages every fork maps and a child
# copies when it touches them (hashlib, used by one HumanEval problem in
# 164, is imported by the sample that needs it).
import typing, math, re, collections, itertools, functools, string, heapq  # noqa: F401,E401
import bisect, random, fractions, decimal, copy, statistics, io, types, builtins  # noqa: F401,E401

# The server's set-up, built by codeloop: where jobs run and their output
# goes, how a job's leftovers are killed, whether /dev/shm is the
# sandbox's own, the prelude, and each job's Landlock ruleset.
SETUP = json.loads(sys.argv[1])
JOBS = SETUP["jobs"]
# Where every job runs (a new directory for each job), beneath JOBS.
JOBDIR = SETUP["jobdir"]
OUT = SETUP["out"]
KILL_ALL = SETUP["kill_all"]
# /dev/shm is wiped after each job only when it is the sandbox's own tmpfs.
PRIVATE_SHM = SETUP["private_shm"]
# A module run once here before any fork (the evaluator's runner), as
# `_codeloop_prelude`: its jobs' scripts call into it, so no child sets it
# up again, and its pages are the server's.
PRELUDE = SETUP.get("prelude")
# The nested Landlock domain each job's child enters (None: the kernel has
# no Landlock): the rights handled, the scopes, the rules (path, rights) and
# the system call numbers, all as codeloop gives them.
RULESET = SETUP.get("ruleset")
# The import policy's guard (guard.py), where it is enforced: compiled here,
# installed in each child before its job.
GUARD = None
if os.path.exists("_codeloop_guard.py"):
    with open("_codeloop_guard.py", "rb") as _f:
        GUARD = compile(_f.read(), "<codeloop import guard>", "exec")
PRCTL = SETUP["prctl"]
libc = ctypes.CDLL(None, use_errno=True)


def settle():
    """What is alive now lives as long as the server: out of the
    collector's sight, so a child's collections do not touch (and copy)
    its pages; and the memory freed on the way (the prelude's compiling,
    say) given back, so no fork maps it and no child's exit unmaps it
    (glibc's malloc_trim; about 1.5 MiB of the evaluator's server)."""
    gc.collect()
    gc.freeze()
    trim = getattr(libc, "malloc_trim", None)  # glibc only
    if trim is not None:
        trim(0)


class RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]


def build_ruleset():
    """The nested Landlock domain codeloop built (RULESET), made once in
    the server as a ruleset fd each job's child restricts itself with:
    (fd, None), or (None, what failed). Its rules hold their paths by
    inode: the job directory, /dev/null, /dev/shm where it is the
    sandbox's own; the job directory is made anew for each job
    (reset_jobdir), and the ruleset with it."""
    if RULESET is None:
        return None, "landlock unavailable"
    create, add_rule, _ = RULESET["syscalls"]
    attr = RulesetAttr(RULESET["handled_fs"], 0, RULESET["scoped"])
    fd = libc.syscall(create, ctypes.byref(attr), RULESET["attr_size"], 0)
    if fd < 0:
        return None, "landlock_create_ruleset failed"
    for path, access in RULESET["rules"]:
        try:
            pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        rule = PathBeneath(access, pfd)
        libc.syscall(add_rule, fd, RULESET["rule_type"], ctypes.byref(rule), 0)
        os.close(pfd)
    return fd, None


# The ruleset (build_ruleset()) that holds the current job directory.
RULES = (None, "not built yet")


def confine():
    """Enter the nested Landlock domain (RULES), and close its fd."""
    fd, problem = RULES
    if fd is None:
        return problem
    restricted = libc.syscall(RULESET["syscalls"][2], fd, 0) == 0
    os.close(fd)
    return None if restricted else "landlock_restrict_self failed"


def make_jobdir():
    """The job directory made anew (all of JOBS wiped first), with the
    ruleset that holds it."""
    global RULES
    wipe(JOBS)
    os.mkdir(JOBDIR, 0o755)
    if RULES[0] is not None:
        os.close(RULES[0])
    RULES = build_ruleset()


def reset_jobdir():
    """After a job: the job directory made anew (all of JOBS wiped first)
    with the ruleset that holds the new one, so the next job starts from
    nothing: not the old directory emptied, which would keep what a job
    set on the directory itself (its extended attributes, say)."""
    make_jobdir()


DISK_POLL = 0.1


def child(job, jobdir, out_path, err_path, timing, channel):
    """Become the job: `job` holds only what the child needs (limits,
    script, args), never the job's files. `channel`: its end of the socket
    to the judge (None where the server has none), named to the job in
    CODELOOP_JUDGE_FD."""
    cpu, mem, fsize, nofile, script, args, require_confinement = job
    try:
        out = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (out, err, null):
            os.close(fd)
        problem = confine()
        kept = sorted(fd for fd in (timing, channel) if fd is not None)
        for low, high in zip([3] + [fd + 1 for fd in kept], kept + [1024]):
            os.closerange(low, high)
        if channel is not None:
            os.environ["CODELOOP_JUDGE_FD"] = str(channel)
        os.chdir(jobdir)
        cpu = max(1, int(cpu))
        for res, soft, hard in (
            (resource.RLIMIT_CPU, cpu, cpu + 1),
            (resource.RLIMIT_AS, mem, mem),
            (resource.RLIMIT_FSIZE, fsize, fsize),
            (resource.RLIMIT_NOFILE, nofile, nofile),
        ):
            resource.setrlimit(res, (soft, hard))
        if problem and require_confinement:
            os.write(2, ("codeloop fork server: " + problem + "\n").encode())
            os._exit(125)
        # sys.stdin, sys.stdout and sys.stderr are the server's own, unused
        # and unbuffered (-u): they now read and write fds 0, 1 and 2. The
        # environment and sys.path were set for every job by the server.
        sys.argv = [script] + list(args)
        if GUARD is not None:
            exec(GUARD, {"__builtins__": builtins})
        os.write(timing, struct.pack("d", time.monotonic()))
        os.close(timing)
        code = 0
        try:
            # What `python script.py` does, without runpy's importer lookups.
            path = os.path.join(jobdir, script)
            with open(path, "rb") as f:
                source = f.read()
            program = COMPILED.get((path, source))
            if program is None:
                program = compile(source, path, "exec")
            main = types.ModuleType("__main__")
            main.__file__ = path
            main.__builtins__ = builtins
            sys.modules["__main__"] = main
            exec(program, main.__dict__)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if not isinstance(e.code, int) and e.code is not None:
                print(e.code, file=sys.stderr)
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        os._exit(code)
    except BaseException as e:
        try:
            os.write(2, ("codeloop fork server: " + repr(e) + "\n").encode())
        finally:
            os._exit(125)


def fork_waiting():
    """Fork the next job's child before the server has read its job, so the
    child's memory holds nothing of it: the child waits on a pipe for its
    limits, script and args, then becomes the job. With a judge, the child
    and the judge get the two ends of a socket made here."""
    r, w = os.pipe()
    tr, tw = os.pipe()
    ends = [s.detach() for s in socket.socketpair()] if JUDGE else [None, None]
    pid = os.fork()
    if pid == 0:
        os.close(w)
        os.close(tr)
        if JUDGE:
            os.close(ends[1])
            JUDGE[1].close()  # the server's end: the judge's alone to answer
        try:
            os.setpgid(0, 0)
        except OSError:
            pass  # pinned to the server's group (no pid namespace): killed with it
        chunks = []
        while True:
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        if not chunks:
            os._exit(0)
        jobdir = JOBDIR
        child(marshal.loads(b"".join(chunks)), jobdir, os.path.join(OUT, "stdout"), os.path.join(OUT, "stderr"), tw, ends[0])
    os.close(r)
    os.close(tw)
    if ends[0] is not None:
        os.close(ends[0])
    return pid, w, tr, ends[1]


# Scripts seen before (the evaluation runner, the same for every sample),
# compiled once here so that the children forked later skip compiling them.
COMPILED = {}
COMPILED_MAX = 8


def remember_compiled(job, jobdir):
    for name, text in job["files"]:
        if name == job["script"] and len(COMPILED) < COMPILED_MAX:
            path = os.path.join(jobdir, name)
            source = text.encode("utf-8")
            if (path, source) not in COMPILED:
                try:
                    COMPILED[(path, source)] = compile(source, path, "exec")
                except (SyntaxError, ValueError):
                    pass


# The prelude's judge, where it has one (judge(control, read_frame)): a
# long-lived child of this server, forked after the prelude and before any
# job, that decides what a judged job's child could not forge (the
# evaluator's verdict). (pid, this server's end of their control socket).
# Its own frame of each judged job comes from codeloop on stdin, right
# after the job's, and is read by the judge alone: nothing in it ever is in
# this server's memory, so no child forked from it holds any.
JUDGE = None
# How long the judge may take to answer once its job's child is gone.
JUDGE_GRACE = 2.0


def start_judge(judge):
    global JUDGE
    mine, its = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        mine.close()
        control = its.detach()
        for low, high in ((3, control), (control + 1, 1024)):
            os.closerange(low, high)
        try:
            judge(control, lambda: read_exact(int(read_exact(8), 16)))
        finally:
            os._exit(0)
    its.close()
    JUDGE = (pid, mine)


def stop_judge():
    """The judge is gone or stopped answering: killed, and this server ends
    after its reply (the judge's frame may be unread on stdin)."""
    global JUDGE
    pid, control = JUDGE
    JUDGE = None
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:
        pass
    control.close()


def tell_judge(wall, channel):
    """Hand the judge a job: its time and its end of the child's socket.
    Whether the judge took it."""
    if JUDGE is None or channel is None:
        return False
    body = json.dumps({"wall": wall}).encode()
    try:
        socket.send_fds(JUDGE[1], [b"%08x" % len(body) + body], [channel])
        return True
    except OSError:
        stop_judge()
        return False


def judge_answer(wait=None):
    """The judge's answer to the job it was handed ({"verdict", "cpu"}),
    waiting at most `wait` seconds for it to begin; None (and the judge
    stopped) when it does not come."""
    control = JUDGE[1].fileno()
    if wait is not None and not select.select([control], [], [], wait)[0]:
        stop_judge()
        return None
    try:
        head = read_exact(8, control)
        answer = json.loads(read_exact(int(head, 16), control)) if head else None
    except (OSError, ValueError):
        answer = None
    if not isinstance(answer, dict):
        stop_judge()
        return None
    return answer


def run(job, waiting, marks):
    jobdir = JOBDIR  # made in main(), made anew after each job (reset_jobdir)
    os.mkdir(os.path.join(jobdir, ".tmp"), 0o755)
    for name, text in job["files"]:
        dest = os.path.join(jobdir, name)
        if os.path.dirname(name):
            os.makedirs(os.path.dirname(dest), exist_ok=True)
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            data = text.encode("utf-8")
            while data:
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)
    out_path = os.path.join(OUT, "stdout")
    err_path = os.path.join(OUT, "stderr")
    pid, handoff, timing, channel = waiting
    marks.append(("files", time.monotonic()))
    started = time.monotonic()
    handed = (job["cpu"], job["mem"], job["fsize"], job["nofile"], job["script"], job["args"], job["require_confinement"])
    os.write(handoff, marshal.dumps(handed))
    os.close(handoff)
    # A judged job: its judge reads the job's own frame (stdin, next) and
    # talks to the child on `channel`; its answer ends the job.
    judging = bool(job.get("judged")) and tell_judge(job["wall"], channel)
    if channel is not None:
        os.close(channel)
    pidfd = os.pidfd_open(pid)
    deadline = started + job["wall"]
    timed_out = disk_full = files_full = exited = False
    judged = None
    while not exited or judging:
        left = deadline - time.monotonic()
        if left <= 0:
            # A child still there after its judge answered is no timeout.
            timed_out = judged is None
            break
        watched = ([] if exited else [pidfd]) + ([JUDGE[1]] if judging else [])
        ready, _, _ = select.select(watched, [], [], min(left, DISK_POLL))
        if pidfd in ready:
            exited = True
        if judging and JUDGE[1] in ready:
            judged, judging = judge_answer(), False
        if ready:
            continue
        used, entries = dir_usage(jobdir, job["entries"])
        if entries > job["entries"]:
            files_full = True
            break
        if used > job["disk"]:
            disk_full = True
            break
    if not exited:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
    if judging:
        # Its child is gone: the judge answers at once, or is stopped.
        judged = judge_answer(JUDGE_GRACE)
    # The job's own figures: its child's rusage (with what it waited for),
    # never the server's RUSAGE_CHILDREN, which holds every job's.
    _, status, usage = os.wait4(pid, 0)
    duration = time.monotonic() - started
    os.close(pidfd)
    try:
        marks.append(("child setup", struct.unpack("d", os.read(timing, 8))[0]))
    except (OSError, struct.error):
        pass
    os.close(timing)
    marks.append(("child run", time.monotonic()))
    # Everything the job left running goes (pid 1 and this server excepted).
    # Only where every other process of this uid belongs to the sandbox: a
    # pid namespace, or a uid of its own.
    # With a judge (a child of this server that must live on), the job's
    # processes are found as this server's descendants (orphans come back
    # here, a subreaper), as they are where the uid is not the sandbox's.
    spare = {JUDGE[0]} if JUDGE else set()
    if KILL_ALL and not spare:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
    else:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        kill_descendants(spare)
    # Reap them all: each was sent SIGKILL above, but one may still be dying
    # (it shows in /proc until it is a zombie), and the next job must not
    # see it. With no leftovers there is no child (but the judge) and
    # nothing to wait for; a child that outlives the deadline is left to
    # the next sweep.
    deadline = time.monotonic() + 2.0
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG) != (0, 0):
                continue
        except ChildProcessError:
            break
        if not children() - spare or time.monotonic() > deadline:
            break
        time.sleep(0.0005)
    marks.append(("sweep", time.monotonic()))
    keep = job["keep"]
    reply = {
        "id": job["id"],
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "timed_out": timed_out,
        "disk_full": disk_full,
        "files_full": files_full,
        "duration": duration,
        "cpu": usage.ru_utime + usage.ru_stime,
        "maxrss_kib": usage.ru_maxrss,
        "stdout": read_kept(out_path, keep),
        "stderr": read_kept(err_path, keep),
        "collected": [],
        "judged": judged and judged.get("verdict"),
    }
    if judged:
        reply["judge_cpu"] = judged.get("cpu", 0.0)
    for name in job["collect"]:
        text = read_collected(os.path.join(jobdir, name))
        if text is not None:
            reply["collected"].append([name, text])
    marks.append(("collect", time.monotonic()))
    reset_jobdir()
    remember_compiled(job, jobdir)
    if PRIVATE_SHM:
        wipe("/dev/shm", keep={os.path.basename(JOBS)} if JOBS.startswith("/dev/shm/") else ())
    marks.append(("wipe", time.monotonic()))
    return reply


def children():
    """The server's children (its own /proc entry: every thread's list)."""
    pids = set()
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for task in tasks:
        try:
            with open("/proc/self/task/%s/children" % task) as f:
                pids.update(int(p) for p in f.read().split())
        except (OSError, ValueError):
            pass
    return pids


def kill_descendants(spare):
    """Everything below the server but `spare` (its judge), generation by
    generation: the server is a child subreaper, so what a killed process
    leaves running comes back to it as a child, to be killed in the next
    round."""
    for _ in range(100000):
        kids = children() - spare
        if not kids:
            return
        for kid in kids:
            try:
                os.kill(kid, signal.SIGKILL)
            except OSError:
                pass
        for kid in kids:
            try:
                os.waitpid(kid, 0)
            except ChildProcessError:
                pass


def read_exact(n, fd=0):
    """Exactly `n` bytes of stdin (b"" at its end): the server never reads
    ahead, so a child forked now holds no job that comes later."""
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return b""
        data += chunk
    return data


def next_job():
    """The next request: its length (8 hex digits), then its JSON."""
    head = read_exact(8)
    if not head:
        return None
    return json.loads(read_exact(int(head, 16)))


def main():
    # Same-uid children must not reach this process through /proc.
    libc.prctl(PRCTL["set_dumpable"], 0, 0, 0, 0)
    # Orphans of a job come back here, to be found and killed after it.
    libc.prctl(PRCTL["set_child_subreaper"], 1, 0, 0, 0)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.makedirs(JOBS, exist_ok=True)
    os.makedirs(OUT, exist_ok=True)
    make_jobdir()
    # Every job runs at the same path (a new directory for each).
    jobdir = JOBDIR
    os.environ["TMPDIR"] = os.path.join(jobdir, ".tmp")
    os.environ["HOME"] = jobdir
    os.environ["PWD"] = jobdir
    sys.path[0] = jobdir
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    null = os.open("/dev/null", os.O_WRONLY)
    os.dup2(null, 1)
    learn = judge = None
    if PRELUDE:
        prelude = types.ModuleType("_codeloop_prelude")
        prelude.__file__ = os.path.abspath(PRELUDE)
        sys.modules["_codeloop_prelude"] = prelude
        with open(PRELUDE, "rb") as f:
            exec(compile(f.read(), prelude.__file__, "exec"), prelude.__dict__)
        # A prelude may learn from each finished job, here in the server
        # and before the next fork, what later children then find made:
        # learn(files, args) says whether it kept anything. It never runs
        # a job's code (the evaluator compiles a problem's own prompt and
        # test, once for all the samples of it).
        learn = getattr(prelude, "learn", None)
        judge = getattr(prelude, "judge", None)
    if judge is not None:
        start_judge(judge)
    probe = {"ready": True, "confined": RULESET is not None, "judge": JUDGE is not None, "pid": os.getpid()}
    proto.write(json.dumps(probe) + "\n")
    settle()
    # The server's CPU for a job runs from the reply before it: writing
    # that reply, learning, forking this job's child, reading this job.
    cpu0 = os.times()
    waiting = fork_waiting()
    prefork = 0.0
    while True:
        job = next_job()
        if job is None:
            break
        t0 = time.monotonic()
        faults0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
        marks = [("start", t0)]
        reply = run(job, waiting, marks)
        cpu1 = os.times()
        phases = [[b[0], b[1] - a[1]] for a, b in zip(marks, marks[1:])]
        phases.append(["prefork (previous)", prefork])
        phases.append(["cpu server", cpu1[0] + cpu1[1] - cpu0[0] - cpu0[1]])
        phases.append(["cpu child", cpu1[2] + cpu1[3] - cpu0[2] - cpu0[3]])
        if "judge_cpu" in reply:
            phases.append(["cpu judge", reply.pop("judge_cpu")])
        # A count, not seconds: the page faults of the job's processes.
        phases.append(["faults child", resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - faults0])
        reply["phases"] = phases
        cpu0 = os.times()
        t1 = time.monotonic()
        proto.write(json.dumps(reply) + "\n")
        reply_t = time.monotonic() - t1
        if judge is not None and JUDGE is None:
            break  # the judge is gone: codeloop starts a new server
        if learn is not None:
            try:
                kept = learn(job["files"], job["args"])
            except Exception:
                kept = False
            if kept:
                settle()
        # The next child is forked with no job's files in this memory.
        job = reply = None
        waiting = fork_waiting()
        prefork = time.monotonic() - t1 - reply_t
    if JUDGE is not None:
        # Its control socket closed, the judge ends; reaped, its CPU time
        # is the server's children's, as the jobs' is.
        JUDGE[1].close()
        os.waitpid(JUDGE[0], 0)


main()
