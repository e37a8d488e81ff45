//! State a sandboxed program could leave for a later one (issue 41): an
//! extended attribute on its working directory, a SysV message queue,
//! shared memory segment and semaphore set, a POSIX message queue, all
//! under one key or name. The fork server's tests (`crates/sandbox`) and
//! eval's (`tests/eval_samples_apart.rs`) run it, so each channel is
//! written once.

/// Python that defines `CHANNELS`, `leave(channel)` (leave a mark there;
/// whether it could) and `seen(channel)` (whether a mark left before is
/// there). `leave("memfd")` writes 1 MiB into a memfd (memory no rlimit
/// counts) and is not a channel: a memfd goes with its process.
pub const LASTING_STATE_PY: &str = r#"
import ctypes as _ct, os as _os, struct as _struct
_libc = _ct.CDLL(None, use_errno=True)
_libc.shmat.restype = _ct.c_void_p
_libc.shmat.argtypes = [_ct.c_int, _ct.c_void_p, _ct.c_int]
_libc.shmdt.argtypes = [_ct.c_void_p]
_libc.mq_open.argtypes = [_ct.c_char_p, _ct.c_int, _ct.c_int, _ct.c_void_p]
_KEY = 0x434C4F50
_MQ = b"/codeloop-lasting"
_CREAT = 0o1000
CHANNELS = ["xattr", "msg", "shm", "sem", "mq"]


def leave(channel):
    try:
        if channel == "xattr":
            _os.setxattr(".", "user.codeloop", b"42")
            return True
        if channel == "msg":
            q = _libc.msgget(_KEY, _CREAT | 0o600)
            return q >= 0 and _libc.msgsnd(q, _struct.pack("l", 1) + b"42", 2, 0) == 0
        if channel == "shm":
            s = _libc.shmget(_KEY, 1 << 20, _CREAT | 0o600)
            a = _libc.shmat(s, None, 0) if s >= 0 else None
            if a is None or a == 2**64 - 1:
                return False
            _ct.memset(a, 42, 1 << 20)
            _libc.shmdt(a)
            return True
        if channel == "sem":
            m = _libc.semget(_KEY, 1, _CREAT | 0o600)
            return m >= 0 and _libc.semctl(m, 0, 16, 42) == 0  # SETVAL
        if channel == "mq":
            return _libc.mq_open(_MQ, _os.O_CREAT | _os.O_WRONLY, 0o600, None) >= 0
        if channel == "memfd":
            fd = _os.memfd_create("codeloop-lasting")
            _os.write(fd, b"x" * (1 << 20))
            return True
    except (OSError, AttributeError):
        return False
    raise ValueError(channel)


def seen(channel):
    try:
        if channel == "xattr":
            return _os.getxattr(".", "user.codeloop") == b"42"
        if channel == "msg":
            return _libc.msgget(_KEY, 0) >= 0
        if channel == "shm":
            return _libc.shmget(_KEY, 0, 0) >= 0
        if channel == "sem":
            return _libc.semget(_KEY, 0, 0) >= 0
        if channel == "mq":
            return _libc.mq_open(_MQ, _os.O_RDONLY, 0, None) >= 0
    except OSError:
        return False
    raise ValueError(channel)
"#;

/// The SysV objects under the key `LASTING_STATE_PY` uses that this IPC
/// namespace holds (`/proc/sysvipc`), as "shm", "msg", "sem".
pub fn left_in_this_ipc_namespace() -> Vec<&'static str> {
    let key = 0x434C4F50u32.to_string();
    ["shm", "msg", "sem"]
        .into_iter()
        .filter(|kind| {
            std::fs::read_to_string(format!("/proc/sysvipc/{kind}")).is_ok_and(|t| {
                t.lines()
                    .skip(1)
                    .any(|l| l.split_whitespace().next() == Some(key.as_str()))
            })
        })
        .collect()
}
