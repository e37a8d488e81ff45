"""codeloop's runtime values: what the failing node's local variables held
along a failing test's path. Loaded by the test harness
(_codeloop_harness.py) from the same directory.

A snapshot is {"line", "depth", "vars": [[name, repr], ...]}: the node's
local variables when that line of its file ran (depth counts calls of the
node's own code, 0 for the call the test made). Kept: the line where the
node's code returned or raised, the lines of the last iteration of each loop
it went through, and for recursion the innermost calls and the outermost
one. Only frames of the node's own file, only plain local variables (no
modules, functions, classes, dunder names).

Values come from a re-run of the failed test under a tracer (the first run
is never traced, so it behaves as it would without codeloop), except where
the first run's traceback holds them: a crash's frames are read before
anything runs again, and a run stopped at its time limit is not re-run.

Everything is bounded: reprs are cut short and never walk far into a
container; an object's own __repr__ runs under a CPU-time guard; the re-run
has a time budget, and after a number of line snapshots the tracer watches
only calls, returns and exceptions, so a loop of ten million iterations
takes about twice its untraced time instead of minutes.
"""
import ast
import collections
import io
import os
import signal
import sys
import time
import types

REPR_CHARS = 80  # one value's text, at most
MAX_VARS = 12  # variables in one snapshot
MAX_SNAPSHOTS = 32  # snapshots of one failure
LOOP_LINES = 6  # snapshots kept of a loop's last iteration
INNER_FRAMES = 3  # innermost frames of a call chain kept (recursion); plus the outermost
CONTAINER_DEPTH = 3  # containers inside containers shown before "..."
DETAIL_SNAPSHOTS = 20000  # line snapshots before the tracer watches only calls and returns
DETAIL_SECONDS = 0.5  # the same, in time
RERUN_SECONDS = 1.0  # a re-run under the tracer: this, plus
RERUN_FACTOR = 3  # this many times the first run, and at most a third of the time left
REPR_SECONDS = 0.02  # CPU time one object's own __repr__ may take
REPR_TOTAL_SECONDS = 0.25  # all objects' own __repr__ for one failure, then skipped
BIG_INT_BITS = 256

SKIPPED_TYPES = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)
CONTAINERS = {
    list: ("[", "]", ""),
    tuple: ("(", ")", ""),
    set: ("{", "}", ""),
    frozenset: ("frozenset({", "})", ""),
    dict: ("{", "}", ""),
    collections.deque: ("deque([", "])", ""),
    collections.OrderedDict: ("OrderedDict({", "})", ""),
    collections.Counter: ("Counter({", "})", ""),
    collections.defaultdict: ("defaultdict(", "})", "{"),
}
MAPPINGS = (dict, collections.OrderedDict, collections.Counter, collections.defaultdict)


class ReprTooSlow(BaseException):
    """An object's own __repr__ used up its CPU time (SIGPROF)."""


class RerunStop(BaseException):
    """The re-run under the tracer used up its time (SIGALRM). A
    BaseException, so `except Exception` in the code does not swallow it."""


class Alarm:
    """One interval timer and its signal: while armed, the handler raises
    `error` every `interval` seconds, so code that swallows one raise meets
    the next; disarmed, a late signal is ignored."""

    def __init__(self, which, signum, error):
        self.which, self.signum, self.error = which, signum, error
        self.armed = False
        self.saved = None
        self.usable = hasattr(signal, "setitimer")

    def handler(self, signum, frame):
        if self.armed:
            raise self.error()

    def arm(self, seconds, interval):
        self.saved = signal.signal(self.signum, self.handler)
        self.armed = True
        signal.setitimer(self.which, seconds, interval)

    def disarm(self):
        self.armed = False
        if self.saved is not None:
            signal.setitimer(self.which, 0)
            signal.signal(self.signum, self.saved)
            self.saved = None


CPU_GUARD = Alarm(getattr(signal, "ITIMER_PROF", 0), getattr(signal, "SIGPROF", 0), ReprTooSlow)


def cut(text, limit=REPR_CHARS):
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Reprs:
    """Bounded reprs for one failure. Builtin containers are walked only as
    far as the text can show (a list of ten million items costs what its
    first few cost); anything else is its own __repr__, cut, under a CPU-time
    guard, and all of those together under a total."""

    def __init__(self):
        self.own_seconds = 0.0

    def __call__(self, value):
        try:
            return cut(self.text(value, 0))
        except ReprTooSlow:
            return "<repr too slow>"
        except Exception as exc:
            return "<repr failed: %s>" % describe(exc)

    def text(self, value, depth):
        kind = type(value)
        if value is None or kind in (bool, float, complex):
            return repr(value)
        if kind is int:
            if value.bit_length() > BIG_INT_BITS:
                return "<int of %d bits>" % value.bit_length()
            return repr(value)
        if kind in (str, bytes, bytearray):
            return repr(value[: REPR_CHARS + 1])
        shape = CONTAINERS.get(kind)
        if shape is None:
            return self.own(value)
        opening, closing, inner = shape
        if kind is collections.defaultdict:
            opening += self.text(value.default_factory, depth + 1) + ", "
        opening += inner
        if depth >= CONTAINER_DEPTH:
            return opening + "..." + closing
        if not value:
            return {set: "set()", frozenset: "frozenset()"}.get(kind, opening + closing)
        parts, size = [], len(opening)
        items = value.items() if kind in MAPPINGS else value
        for item in items:
            if size > REPR_CHARS:
                parts.append("...")
                break
            if kind in MAPPINGS:
                part = "%s: %s" % (self.text(item[0], depth + 1), self.text(item[1], depth + 1))
            else:
                part = self.text(item, depth + 1)
            parts.append(part)
            size += len(part) + 2
        text = ", ".join(parts)
        if kind is tuple and len(value) == 1:
            text += ","
        return opening + text + closing

    def own(self, value):
        if self.own_seconds >= REPR_TOTAL_SECONDS:
            return "<repr skipped: too slow>"
        started = time.process_time()
        guarded = CPU_GUARD.usable and CPU_GUARD.signum
        try:
            if guarded:
                CPU_GUARD.arm(REPR_SECONDS, REPR_SECONDS)
            try:
                text = repr(value)
            finally:
                if guarded:
                    CPU_GUARD.disarm()
        finally:
            self.own_seconds += time.process_time() - started
        return text[: REPR_CHARS + 1]


def describe(exc):
    try:
        message = str(exc)
    except Exception:
        message = ""
    name = type(exc).__name__
    return cut("%s: %s" % (name, message), 60) if message else name


def variables(frame, reprs):
    """The frame's plain local variables as [name, repr], in the frame's order."""
    out = []
    for name, value in list(frame.f_locals.items()):
        if name.startswith("__") or name.startswith(".") or issubclass(type(value), SKIPPED_TYPES):
            continue
        out.append([name, reprs(value)])
        if len(out) >= MAX_VARS:
            break
    return out


def walk(tree):
    """Every node of an AST, as ast.walk gives them. Its own: ast.walk
    imports collections when called, which an import policy may refuse
    once the code under test runs, and the policy is never the harness's."""
    todo = [tree]
    while todo:
        node = todo.pop()
        todo.extend(ast.iter_child_nodes(node))
        yield node


class Loops:
    """The loops of the node's file: for each line, the header line of the
    innermost loop whose body holds it, and for each loop the loop around it."""

    def __init__(self, path):
        self.body_loop = {}
        self.enclosing = {}
        # `with` statements' lines: an exception leaving a `with` block
        # comes back to its line (the context manager's exit) on its way
        # out, which is not the exception handled.
        self.with_lines = set()
        try:
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), path)
        except (OSError, SyntaxError, ValueError):
            return
        spans = []
        for node in walk(tree):
            if isinstance(node, (ast.With, ast.AsyncWith)):
                self.with_lines.add(node.lineno)
            if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and node.body:
                first = node.body[0].lineno
                last = max(getattr(s, "end_lineno", s.lineno) or s.lineno for s in node.body)
                if first > node.lineno:  # a loop on one line has no lines of its own to show
                    spans.append((last - first, node.lineno, first, last))
        for _, header, first, last in sorted(spans, reverse=True):
            for line in range(first, last + 1):
                self.body_loop[line] = header
        for _, header, _, _ in spans:
            self.enclosing[header] = self.body_loop.get(header)

    def around(self, line):
        """The loops running when `line` runs, innermost first."""
        header = line if line in self.enclosing else self.body_loop.get(line)
        while header is not None:
            yield header
            header = self.enclosing.get(header)


class Frame:
    """What the tracer keeps of one call of the node's code."""

    __slots__ = ("tracer", "code", "depth", "parent", "recursive", "loops", "fresh", "last_line", "last_seq",
                 "terminal", "exc", "chain", "wanted", "ran")

    def __init__(self, tracer, code, parent, seq, line):
        self.tracer, self.code, self.parent = tracer, code, parent
        self.depth = parent.depth + 1 if parent is not None else 0
        self.recursive = parent is not None and parent.code is code
        self.loops = {}  # header line -> deque of [seq, line, vars] of its latest iteration
        self.fresh = set()  # loops whose header ran since their last body line: a new iteration
        self.last_line, self.last_seq = line, seq
        self.terminal = None
        self.exc = None  # the exception passing through, until a line handles it
        self.chain = 0  # calls between this one and where its exception began
        self.wanted = parent is None
        self.ran = tracer.ran.setdefault(code, set())  # lines of this code that ran (coverage)

    def event(self, frame, event, arg):
        tracer = self.tracer
        if tracer.stopped:
            raise RerunStop()
        tracer.seq += 1
        if event == "line":
            if self.exc is not None and frame.f_lineno in tracer.loops.with_lines:
                # The exception leaving a `with` block, at its exit on the
                # way out: not a line of its own, and not handled.
                return self.event
            self.exc = None  # an exception seen in this frame was handled
            self.last_line, self.last_seq = frame.f_lineno, tracer.seq
            self.ran.add(self.last_line)
            if tracer.detailed:
                tracer.line(self, frame)
            else:
                frame.f_trace_lines = False
        elif event == "exception":
            self.exc = arg[1]
        elif event == "return":
            self.ran.add(frame.f_lineno)
            tracer.finish(self, frame)
        return self.event


class Tracer:
    """Watches one re-run of a failing test in the node's file: each loop's
    last iteration, the line each call returned or raised from, the chain of
    calls a failure came through."""

    def __init__(self, target_file, loops, reprs):
        self.target_file, self.loops, self.reprs = target_file, loops, reprs
        self.seq = 0
        self.taken = 0
        self.started = time.monotonic()
        self.detailed = True
        self.stopped = False
        self.cut = False
        self.live = {}  # id(frame) -> Frame, while the call runs
        self.top = None  # the latest call the test made
        self.deepest = None  # its deepest recursive call
        self.origin = None  # the call where its latest exception began
        self.last_raised = None
        self.returned_from = None
        self.ran = {}  # code object -> the lines of it that ran (coverage)

    def call(self, frame, event, arg):
        if self.stopped:
            raise RerunStop()
        if os.path.basename(frame.f_code.co_filename) != self.target_file:
            return None
        parent, outer = None, frame.f_back
        while outer is not None:
            parent = self.live.get(id(outer))
            if parent is not None:
                break
            outer = outer.f_back
        self.seq += 1
        record = Frame(self, frame.f_code, parent, self.seq, frame.f_lineno)
        if parent is None:
            self.top, self.deepest, self.origin, self.last_raised = record, None, None, None
        self.live[id(frame)] = record
        if not self.detailed:
            frame.f_trace_lines = False
        return record.event

    def line(self, record, frame):
        line = frame.f_lineno
        if line in self.loops.enclosing:
            record.fresh.add(line)
            return
        header = self.loops.body_loop.get(line)
        if header is None:
            return
        kept = record.loops.get(header)
        if kept is None or header in record.fresh:
            kept = record.loops[header] = collections.deque(maxlen=LOOP_LINES)
            record.fresh.discard(header)
        kept.append([record.last_seq, line, variables(frame, self.reprs)])
        self.taken += 1
        if self.taken >= DETAIL_SNAPSHOTS or (
            self.taken % 256 == 0 and time.monotonic() - self.started > DETAIL_SECONDS
        ):
            self.degrade()
            frame.f_trace_lines = False

    def degrade(self):
        """From now on only calls, returns and exceptions: the loops still
        running lose their last iteration, which this run will not see."""
        self.detailed = False
        for record in self.live.values():
            for header in self.loops.around(record.last_line):
                if record.loops.pop(header, None) is not None:
                    self.cut = True

    def finish(self, record, frame):
        self.live.pop(id(frame), None)
        line = frame.f_lineno
        wanted = record.wanted
        seq = record.last_seq
        if record.exc is not None:
            child = self.last_raised
            if child is not None and child.parent is record and child.exc is record.exc:
                record.chain = child.chain + 1
            else:
                self.origin = record
            self.last_raised = record
            wanted = wanted or record.chain < INNER_FRAMES
        else:
            seq = self.seq  # a return comes after everything its callees did
            if record.recursive and (self.deepest is None or record.depth > self.deepest.depth):
                self.deepest, wanted = record, True
                outer = record.parent
                for _ in range(INNER_FRAMES - 1):
                    if outer is None:
                        break
                    outer.wanted = True
                    outer = outer.parent
        if wanted:
            # The last line snapshot in this frame is the same moment as this one.
            for kept in record.loops.values():
                if kept and kept[-1][0] == record.last_seq:
                    kept.pop()
            record.terminal = [seq, line, variables(frame, self.reprs)]
        if record.parent is None:
            self.returned_from = line

    def snapshots(self, crashed):
        """The snapshots of the failing call, in execution order."""
        if crashed:
            chain = along(self.origin)
        else:
            chain = along(self.deepest)[:INNER_FRAMES] if self.deepest is not None else []
        kept = chain[:INNER_FRAMES]
        if self.top is not None and self.top not in kept:
            kept.append(self.top)
        terminals, others = [], []
        for record in kept:
            if record.terminal is not None:
                seq, line, names = record.terminal
                terminals.append((seq, snapshot(line, record.depth, names)))
            for iteration in record.loops.values():
                for seq, line, names in iteration:
                    others.append((seq, snapshot(line, record.depth, names)))
        others.sort(key=lambda item: item[0])
        room = max(MAX_SNAPSHOTS - len(terminals), 0)
        chosen = terminals[:MAX_SNAPSHOTS] + (others[-room:] if room else [])
        chosen.sort(key=lambda item: item[0])
        return [item for _, item in chosen]


def executable_lines(code, out):
    """The lines of `code` and of the code nested in it that hold
    bytecode, the def line itself (its call, not its body) left out."""
    first = code.co_firstlineno if code.co_name != "<module>" else None
    for _, _, line in code.co_lines():
        if line is not None and line != first:
            out.add(line)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            executable_lines(const, out)
    return out


def coverage(tracer):
    """Which lines of the node's file ran in the re-run, and which of the
    functions it went through could have run and did not. Once the tracer
    watched only calls and returns, what did not run is unknown: none is
    said."""
    ran, could = set(), set()
    for code, lines in tracer.ran.items():
        ran |= lines
        executable_lines(code, could)
    missed = set() if not tracer.detailed else could - ran
    return sorted(ran), sorted(missed)


def snapshot(line, depth, names):
    return {"line": line, "depth": depth, "vars": names}


def along(record):
    """A call and the calls it came from, innermost first."""
    out = []
    while record is not None:
        out.append(record)
        record = record.parent
    return out


def traceback_snapshots(exc, target_file, reprs):
    """Snapshots at the lines a traceback went through in the node's file,
    from the frames' own locals: the innermost ones and the outermost one."""
    found = []
    tb = exc.__traceback__
    while tb is not None:
        if os.path.basename(tb.tb_frame.f_code.co_filename) == target_file:
            found.append((len(found), tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    if len(found) > INNER_FRAMES + 1:
        found = found[:1] + found[-INNER_FRAMES:]
    return [snapshot(line, depth, variables(frame, reprs)) for depth, frame, line in found]


def innermost_line(exc, target_file):
    line = None
    tb = exc.__traceback__ if exc is not None else None
    while tb is not None:
        if os.path.basename(tb.tb_frame.f_code.co_filename) == target_file:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


class Discard(io.TextIOBase):
    """Where a re-run's output goes: it was already shown by the first run."""

    def writable(self):
        return True

    def write(self, text):
        return len(text)


def rerun(fn, tracer, first_seconds):
    """Run `fn` again under `tracer`, output discarded; the exception it
    raised, if any. Its time: a second plus three times what the first run
    took, and never more than a third of what the harness has left, so the
    tests after it still get theirs. The harness's own alarm is put back
    with the time that is left."""
    alarm = Alarm(signal.ITIMER_REAL, signal.SIGALRM, RerunStop) if hasattr(signal, "setitimer") else None
    left = signal.getitimer(signal.ITIMER_REAL)[0] if alarm else 0.0
    budget = RERUN_SECONDS + RERUN_FACTOR * first_seconds
    if left:
        budget = min(budget, left / 3)
    started = time.monotonic()
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = Discard()
    raised = None
    try:
        if alarm:
            alarm.arm(budget, 0.05)
        sys.settrace(tracer.call)
        try:
            fn()
        finally:
            if alarm:
                alarm.armed = False  # first: no raise from here on
            sys.settrace(None)
            tracer.stopped = True
    except BaseException as exc:
        raised = exc
    finally:
        sys.settrace(None)
        if alarm:
            alarm.disarm()
        sys.stdout, sys.stderr = saved
        if left:
            signal.setitimer(signal.ITIMER_REAL, max(left - (time.monotonic() - started), 0.01))
    return raised


LOOPS = {}


def loops_of(path):
    if path not in LOOPS:
        LOOPS[path] = Loops(path)
    return LOOPS[path]


def at_failure(exc, target_file):
    """Values from the traceback alone: at the lines it went through in the
    node's file, as the first run left them."""
    return traceback_snapshots(exc, target_file, Reprs()) if target_file else []


def collect(fn, exc, target_path, first_seconds, first):
    """The values along a failed test's path: the test `fn` is run again
    under the tracer. `exc` is what the first run raised, after
    `first_seconds`; `first` its values from `at_failure`, taken before
    anything could run again. Returns the report's fields: values,
    values_note, the line the node's code last returned to the test from
    (None when it never did), and the coverage of the path (executed_lines,
    missed_lines; empty unless the re-run took the failing path)."""
    target_file = os.path.basename(target_path)
    crash_line = innermost_line(exc, target_file)
    tracer = Tracer(target_file, loops_of(target_path), Reprs())
    again = rerun(fn, tracer, first_seconds)
    out = {"values": first, "values_note": None, "returned_from": tracer.returned_from,
           "executed_lines": [], "missed_lines": []}
    shown = "only the failing line's values are shown" if first else "no values were recorded"
    if isinstance(again, RerunStop):
        out["returned_from"] = None
        out["values_note"] = "the re-run to record values ran out of time: " + shown
        return out
    if crash_line is not None:
        same = (
            type(again) is type(exc)
            and innermost_line(again, target_file) == crash_line
            and tracer.origin is not None
        )
    elif type(again) is type(exc) and tracer.top is None:
        return out  # the test failed without calling the node's code
    else:
        same = type(again) is type(exc)
    if not same:
        out["values_note"] = "the test took another path when run again: " + shown
        return out
    out["values"] = tracer.snapshots(crash_line is not None)
    out["executed_lines"], out["missed_lines"] = coverage(tracer)
    if tracer.cut:
        out["values_note"] = "a loop ran too long to record each line: its last iteration is not shown"
    return out
