//! Every system call the sandbox makes that Rust's standard library does not
//! wrap: the only module of the crate allowed `unsafe` (the crate root
//! denies it elsewhere). Each function is safe to call: pointers are built
//! here from owned values, and errors come back as `io::Error`.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The result of a `libc` call that returns -1 (or a negative value) on failure.
fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// The real user id.
pub(crate) fn uid() -> u32 {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() }
}

/// The real group id.
pub(crate) fn gid() -> u32 {
    // SAFETY: getgid has no preconditions.
    unsafe { libc::getgid() }
}

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Processes of the same uid may no longer read this one's /proc entries
/// (its environment, with API keys) or ptrace it.
pub(crate) fn forbid_same_uid_inspection() {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
}

/// This process is killed when its parent ends.
pub(crate) fn die_with_parent() {
    // SAFETY: prctl with integer arguments.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
}

/// No exec of this process or its children gains privileges.
pub(crate) fn no_new_privs() -> io::Result<()> {
    // SAFETY: prctl with integer arguments.
    check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }).map(drop)
}

/// Whether the kernel answers PR_GET_SECCOMP (it knows seccomp).
pub(crate) fn seccomp_known() -> bool {
    // SAFETY: PR_GET_SECCOMP takes no pointers.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

/// The Landlock ABI version the kernel offers (0: none).
pub(crate) fn landlock_abi() -> i32 {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    // only returns the ABI version (or an error).
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    if r < 0 { 0 } else { r as i32 }
}

/// Clock ticks per second (what /proc counts CPU time in).
pub(crate) fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64
}

/// SIGKILL to a process group; a stale group fails harmlessly.
pub(crate) fn kill_group(pgid: i32) {
    // SAFETY: kill takes plain integers.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

/// SIGKILL to every process this uid may signal (`kill(-1)`); false once
/// there is none left.
pub(crate) fn kill_every_reachable() -> bool {
    // SAFETY: kill takes plain integers.
    unsafe { libc::kill(-1, libc::SIGKILL) == 0 }
}

/// Set close-on-exec on `fd`.
pub(crate) fn close_on_exec(fd: RawFd) {
    // SAFETY: fcntl on a descriptor number; a closed one fails harmlessly.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
}

/// Mark every descriptor from `first` up close-on-exec at once
/// (close_range, Linux 5.11); an error on older kernels.
pub(crate) fn close_range_on_exec(first: u32) -> io::Result<()> {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: close_range with plain integers only changes descriptor flags.
    let r = unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, CLOSE_RANGE_CLOEXEC) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Reads of `file` never block.
pub(crate) fn set_nonblocking(file: &impl AsRawFd) {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor the caller holds.
    unsafe {
        libc::fcntl(
            fd,
            libc::F_SETFL,
            libc::fcntl(fd, libc::F_GETFL) | libc::O_NONBLOCK,
        )
    };
}

/// Close a descriptor number this process has no use for.
pub(crate) fn close(fd: RawFd) {
    // SAFETY: closing a descriptor number; nothing here uses it afterwards.
    unsafe { libc::close(fd) };
}

/// Take ownership of a descriptor number handed to this process to own
/// (the status pipe's write end, named in the helper's plan); `None` when
/// no such descriptor is open.
pub(crate) fn adopt_fd(fd: RawFd) -> Option<std::fs::File> {
    // SAFETY: F_GETFD only reads the descriptor's flags.
    if fd < 0 || unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return None;
    }
    // SAFETY: the descriptor is open, and was handed over for this process
    // to own; nothing else here holds it.
    Some(std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// A close-on-exec pipe: (read end, write end).
pub(crate) fn pipe_cloexec() -> io::Result<(std::fs::File, std::fs::File)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both descriptors were just opened and are owned here.
    Ok(unsafe {
        (
            std::fs::File::from(OwnedFd::from_raw_fd(fds[0])),
            std::fs::File::from(OwnedFd::from_raw_fd(fds[1])),
        )
    })
}

/// Which side of a fork this is.
pub(crate) enum Forked {
    Child,
    Parent(libc::pid_t),
}

/// Fork. Only for the helper, which is single-threaded: the child goes on
/// with system calls and exits or execs.
pub(crate) fn fork() -> io::Result<Forked> {
    // SAFETY: the helper is single-threaded, so the child's copy of the
    // process is whole (no lock held by another thread).
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(pid)),
    }
}

/// Wait for any child; its pid, raw wait status and resource usage
/// (with the children it waited for).
pub(crate) fn wait_any() -> io::Result<(libc::pid_t, i32, libc::rusage)> {
    let mut status = 0;
    // SAFETY: rusage is plain data; all zeroes is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 writes the status and the rusage we pass.
    let pid = check(unsafe { libc::wait4(-1, &mut status, 0, &mut ru) })?;
    Ok((pid, status, ru))
}

/// Exit as a process killed by `signal`: the signal raised on itself with
/// its default action and no core dump (128 + signal if it survives it).
pub(crate) fn die_of_signal(signal: i32) -> ! {
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on this process; the signal's default action
    // ends it.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::kill(libc::getpid(), signal);
    }
    std::process::exit(128 + signal)
}

/// Create new namespaces (`CLONE_NEW*` flags) for this process.
pub(crate) fn unshare(flags: libc::c_int) -> io::Result<()> {
    // SAFETY: unshare takes flags only.
    check(unsafe { libc::unshare(flags) }).map(drop)
}

/// Name the (new) uts namespace's host.
pub(crate) fn set_hostname(name: &[u8]) {
    // SAFETY: the pointer and length describe `name`.
    unsafe { libc::sethostname(name.as_ptr() as *const libc::c_char, name.len()) };
}

/// mount(2).
pub(crate) fn mount(
    src: Option<&CStr>,
    dst: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> io::Result<()> {
    // SAFETY: every pointer is either null or a valid NUL-terminated string
    // that outlives the call.
    let r = unsafe {
        libc::mount(
            src.map_or(std::ptr::null(), CStr::as_ptr),
            dst.as_ptr(),
            fstype.map_or(std::ptr::null(), CStr::as_ptr),
            flags,
            data.map_or(std::ptr::null(), |c| c.as_ptr() as *const libc::c_void),
        )
    };
    check(r).map(drop)
}

/// Detach the mount at `path` (umount2 with MNT_DETACH).
pub(crate) fn unmount_detach(path: &CStr) -> io::Result<()> {
    // SAFETY: umount2 with a valid path.
    check(unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) }).map(drop)
}

/// pivot_root(2).
pub(crate) fn pivot_root(new_root: &CStr, put_old: &CStr) -> io::Result<()> {
    // SAFETY: both are valid NUL-terminated strings.
    let r = unsafe { libc::syscall(libc::SYS_pivot_root, new_root.as_ptr(), put_old.as_ptr()) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The mount flags (`ST_*`) of the file system at `path`.
pub(crate) fn mount_flags(path: &CStr) -> io::Result<libc::c_ulong> {
    // SAFETY: statvfs is plain data; all zeroes is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid path, and the struct we pass.
    check(unsafe { libc::statvfs(path.as_ptr(), &mut st) })?;
    Ok(st.f_flag)
}

/// Open `name` beneath the directory `dir` (openat).
pub(crate) fn open_at(
    dir: &impl AsRawFd,
    name: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<std::fs::File> {
    // SAFETY: openat on a descriptor the caller holds, with a valid name.
    let fd = check(unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, mode) })?;
    // SAFETY: fd was just opened and is owned here.
    Ok(std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// The current hard limit of a resource (infinity when unknown).
pub(crate) fn hard_rlimit(resource: libc::__rlimit_resource_t) -> libc::rlim_t {
    let mut current = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct we pass.
    if unsafe { libc::getrlimit(resource, &mut current) } == 0 {
        current.rlim_max
    } else {
        libc::RLIM_INFINITY
    }
}

/// setrlimit(2).
pub(crate) fn set_rlimit(
    resource: libc::__rlimit_resource_t,
    soft: libc::rlim_t,
    hard: libc::rlim_t,
) -> io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit reads the struct we pass.
    check(unsafe { libc::setrlimit(resource, &lim) }).map(drop)
}

/// Become `uid` (and gid `uid`) with no supplementary groups, for good.
pub(crate) fn switch_to(uid: u32) -> Result<(), String> {
    // SAFETY: plain syscalls; results checked below.
    unsafe {
        if libc::setgroups(0, std::ptr::null()) != 0 {
            return Err(format!(
                "cannot clear supplementary groups: {}",
                io::Error::last_os_error()
            ));
        }
        if libc::setresgid(uid, uid, uid) != 0 {
            return Err(format!(
                "cannot switch to gid {uid}: {}",
                io::Error::last_os_error()
            ));
        }
        if libc::setresuid(uid, uid, uid) != 0 {
            return Err(format!(
                "cannot switch to uid {uid}: {}",
                io::Error::last_os_error()
            ));
        }
        if libc::getuid() == 0 || libc::geteuid() == 0 {
            return Err("still root after switching uid".into());
        }
    }
    Ok(())
}

/// The (resource, value) pairs `limit_before_exec` sets.
pub(crate) type ChildLimits = [(libc::__rlimit_resource_t, u64); 5];

/// Set these rlimits in the child of `cmd` before it execs (each no higher
/// than its current hard limit): the sandbox without its helper binary.
pub(crate) fn limit_before_exec(cmd: &mut tokio::process::Command, limits: ChildLimits) {
    // SAFETY: only async-signal-safe getrlimit/setrlimit calls run in the child.
    unsafe {
        cmd.pre_exec(move || {
            for (res, v) in limits {
                let mut cur = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                let max = if libc::getrlimit(res, &mut cur) == 0 {
                    cur.rlim_max
                } else {
                    libc::RLIM_INFINITY
                };
                let v = (v as libc::rlim_t).min(max);
                let lim = libc::rlimit {
                    rlim_cur: v,
                    rlim_max: v,
                };
                libc::setrlimit(res, &lim);
            }
            Ok(())
        });
    }
}

/// The child of `cmd` leads its own session and process group (how a run
/// is killed as a whole), and `keep` goes on to the program it execs.
pub(crate) fn own_session_before_exec(cmd: &mut tokio::process::Command, keep: Option<RawFd>) {
    // SAFETY: setsid and fcntl are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            libc::setsid();
            if let Some(fd) = keep {
                libc::fcntl(fd, libc::F_SETFD, 0);
            }
            Ok(())
        });
    }
}

/// A new non-blocking, close-on-exec inotify instance.
pub(crate) fn inotify() -> io::Result<OwnedFd> {
    // SAFETY: inotify_init1 takes flags only.
    let raw = check(unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) })?;
    // SAFETY: `raw` was just opened and is owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Register an owned descriptor with tokio's reactor.
pub(crate) fn async_fd(fd: OwnedFd) -> Option<tokio::io::unix::AsyncFd<OwnedFd>> {
    // SAFETY: the OwnedFd keeps the descriptor open, and the same, for as
    // long as the AsyncFd that owns it.
    unsafe { tokio::io::unix::AsyncFd::register(fd) }.ok()
}

/// Watch `dir` for `events` on the inotify instance `fd`.
pub(crate) fn inotify_watch(fd: &impl AsRawFd, dir: &CStr, events: u32) -> io::Result<()> {
    // SAFETY: a valid descriptor and NUL-terminated path.
    check(unsafe { libc::inotify_add_watch(fd.as_raw_fd(), dir.as_ptr(), events) }).map(drop)
}

/// read(2) into `buf`: the bytes read, or `None` at the end or an error
/// (EAGAIN on a non-blocking descriptor included).
pub(crate) fn read_some(fd: &impl AsRawFd, buf: &mut [u8]) -> Option<usize> {
    // SAFETY: read into our own buffer of the given length.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n <= 0 { None } else { Some(n as usize) }
}

/// The inotify event header at the start of `bytes` (which must hold one).
pub(crate) fn inotify_event(bytes: &[u8]) -> Option<libc::inotify_event> {
    if bytes.len() < std::mem::size_of::<libc::inotify_event>() {
        return None;
    }
    // SAFETY: the slice holds a whole header; read_unaligned copes with the
    // buffer's alignment, and any bytes are a valid inotify_event.
    Some(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) })
}

/// The child of `cmd`, before it execs: in a session and process group of
/// its own (killed as a whole), killed when the thread that started it
/// ends, and held to these rlimits (CPU time with a second's grace before
/// SIGKILL; each no higher than its current hard limit).
pub(crate) fn contain_before_exec(
    cmd: &mut std::process::Command,
    limits: [(libc::__rlimit_resource_t, u64); 5],
) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls (setsid, prctl, getrlimit,
    // setrlimit) run in the child between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::setsid();
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            for (res, v) in limits {
                let mut cur = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                let max = if libc::getrlimit(res, &mut cur) == 0 {
                    cur.rlim_max
                } else {
                    libc::RLIM_INFINITY
                };
                let soft = (v as libc::rlim_t).min(max);
                let hard = if res == libc::RLIMIT_CPU {
                    soft.saturating_add(1).min(max)
                } else {
                    soft
                };
                let lim = libc::rlimit {
                    rlim_cur: soft,
                    rlim_max: hard,
                };
                if libc::setrlimit(res, &lim) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// How a child ended: its exit code, or the signal that killed it.
pub(crate) struct Ended {
    pub(crate) code: Option<i32>,
    pub(crate) signal: Option<i32>,
}

/// What a child used, as `wait4` tells (its CPU time).
pub(crate) struct Used {
    pub(crate) cpu: std::time::Duration,
}

/// Wait for the child `pid` (at once with `nohang`: None while it runs).
pub(crate) fn wait_pid(pid: libc::pid_t, nohang: bool) -> io::Result<Option<(Ended, Used)>> {
    loop {
        let mut status = 0;
        // SAFETY: rusage is plain data; all zeroes is a valid value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let flags = if nohang { libc::WNOHANG } else { 0 };
        // SAFETY: wait4 writes the status and the rusage we pass.
        let r = unsafe { libc::wait4(pid, &mut status, flags, &mut ru) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Ok(None);
        }
        let ended = if libc::WIFSIGNALED(status) {
            Ended {
                code: None,
                signal: Some(libc::WTERMSIG(status)),
            }
        } else {
            Ended {
                code: Some(libc::WEXITSTATUS(status)),
                signal: None,
            }
        };
        let tv = |t: libc::timeval| {
            std::time::Duration::from_secs(t.tv_sec.max(0) as u64)
                + std::time::Duration::from_micros(t.tv_usec.max(0) as u64)
        };
        let used = Used {
            cpu: tv(ru.ru_utime) + tv(ru.ru_stime),
        };
        return Ok(Some((ended, used)));
    }
}
