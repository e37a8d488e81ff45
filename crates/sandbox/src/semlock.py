"""codeloop's stand-in for _multiprocessing where the host's /dev/shm is
not writable (the reduced sandbox of an ordinary user: no mount namespace
gives the run a /dev/shm of its own, and the host's stays read-only so a
run leaves nothing there and touches no other program's shared memory).

glibc's sem_open only ever uses /dev/shm, so the real SemLock cannot be
made there. This one keeps a semaphore's value as bytes in a pipe: acquire
reads one, release writes one, the value is what the pipe holds. Forked
children share the pipe; spawned ones are handed its two descriptors.
Everything else comes from the real module. multiprocessing's heap
(Value, Array) is pointed at the temporary directory instead of /dev/shm.
What still needs /dev/shm (multiprocessing.shared_memory) does not work.

It is found first because its directory leads PYTHONPATH; it loads the
real extension module from the rest of sys.path.
"""
import importlib.machinery
import importlib.util
import os
import select
import sys
import threading
import time

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load_real():
    path = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("_multiprocessing", path)
    if spec is None:
        return None
    mine = sys.modules.get(__name__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # Loading an extension module may register it under its name (3.8
    # does): this module stays the one imported.
    if mine is not None:
        sys.modules[__name__] = mine
    return module


_real = _load_real()
flags = getattr(_real, "flags", {})
RECURSIVE_MUTEX, SEMAPHORE = 0, 1
_TOO_MANY = "semaphore or lock released too many times"


def __getattr__(name):
    if _real is None:
        raise AttributeError(name)
    return getattr(_real, name)


def sem_unlink(name):
    # The semaphores made here have no name; a named one is the real module's.
    if _real is not None:
        _real.sem_unlink(name)


class _Handle:
    """What a spawned child is given: the pipe's two ends."""

    def __init__(self, read_end, write_end):
        self.read_end, self.write_end = read_end, write_end


class SemLock:
    # As on macOS; a pipe holds 64 KiB, so the largest value always fits.
    SEM_VALUE_MAX = 32767

    def __init__(self, kind, value, maxvalue, name=None, unlink=True):
        if kind not in (RECURSIVE_MUTEX, SEMAPHORE):
            raise ValueError("unrecognized kind")
        if not 0 <= value <= self.SEM_VALUE_MAX:
            raise ValueError("invalid value")
        r, w = os.pipe()
        self._setup(r, w, kind, maxvalue)
        if value:
            written = os.write(w, b"x" * value)
            if written != value:
                os.close(r)
                os.close(w)
                raise OSError("cannot hold a semaphore value of %d" % value)

    def _setup(self, r, w, kind, maxvalue):
        os.set_blocking(r, False)
        os.set_blocking(w, False)
        self._r, self._w = r, w
        self.kind, self.maxvalue, self.name = kind, maxvalue, None
        self._n, self._owner = 0, None

    @classmethod
    def _rebuild(cls, handle, kind, maxvalue, name):
        self = cls.__new__(cls)
        self._setup(handle.read_end.detach(), handle.write_end.detach(), kind, maxvalue)
        return self

    @property
    def handle(self):
        from multiprocessing import context, reduction

        if context.get_spawning_popen() is None:
            return self._r
        return _Handle(reduction.DupFd(self._r), reduction.DupFd(self._w))

    def _is_mine(self):
        return self._n > 0 and self._owner == threading.get_ident()

    def _count(self):
        return self._n

    def _get_value(self):
        import fcntl
        import termios

        buf = bytearray(4)
        fcntl.ioctl(self._r, termios.FIONREAD, buf)
        return int.from_bytes(buf, sys.byteorder)

    def _is_zero(self):
        return self._get_value() == 0

    def _after_fork(self):
        self._n = 0

    def acquire(self, block=True, timeout=None):
        if self.kind == RECURSIVE_MUTEX and self._is_mine():
            self._n += 1
            return True
        deadline = None
        if block and timeout is not None:
            deadline = time.monotonic() + max(timeout, 0)
        poller = None
        while True:
            try:
                if os.read(self._r, 1):
                    self._n += 1
                    self._owner = threading.get_ident()
                    return True
            except BlockingIOError:
                pass
            if not block:
                return False
            wait_ms = None
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                wait_ms = max(1, int(left * 1000))
            if poller is None:
                poller = select.poll()
                poller.register(self._r, select.POLLIN)
            poller.poll(wait_ms)

    def release(self):
        if self.kind == RECURSIVE_MUTEX:
            if not self._is_mine():
                raise AssertionError("attempt to release recursive lock not owned by thread")
            if self._n > 1:
                self._n -= 1
                return
        elif self._get_value() >= self.maxvalue:
            raise ValueError(_TOO_MANY)
        try:
            os.write(self._w, b"x")
        except BlockingIOError:
            raise ValueError(_TOO_MANY) from None
        self._n -= 1

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *args):
        self.release()


def _heap_off_dev_shm():
    try:
        from multiprocessing import heap

        heap.Arena._dir_candidates = []
    except (ImportError, AttributeError):
        pass


_heap_off_dev_shm()
