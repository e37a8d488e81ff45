//! Seccomp: system calls a test program never needs refused (non-Unix
//! sockets, ptrace, namespace and mount calls, TIOCSTI, bpf, io_uring,
//! keyrings, modules, file watches; extended attributes written, SysV IPC,
//! POSIX message queues and memfd: state that would outlive a job, and
//! memory no limit counts); without a pid namespace, setsid and
//! setpgid too (every process stays in the run's group); in the reduced
//! sandbox, metadata changes and connect() as well.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use futures_util::future::BoxFuture;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use serde::{Deserialize, Serialize};

use super::{
    Child, Layer, LayerImpl, LayerReport, RunPlan, Stage, helper_missing, read_step, step,
};
use crate::probes::{ProbeResult, marker_probe, run};
use crate::{Sandbox, SandboxOptions, sys};

pub(crate) struct Seccomp;

/// Which filters the helper loads.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Plan {
    /// Refuse setsid and setpgid, so every process of the run stays in its
    /// process group and dies with it (used where no pid namespace does that).
    pub pin_process_group: bool,
    /// The reduced sandbox's extra refusals (no namespaces to hide the
    /// host): chmod, chown and utime families, connect(), fallocate().
    pub reduced: bool,
}

const TCP_CONNECT: &str = r#"import socket, sys
port = int(sys.argv[1])
try:
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    s.sendall(b"escaped")
    print("ESCAPED connected to the loopback listener")
except OSError as e:
    print(f"CONTAINED: {type(e).__name__}: {e.strerror or e}")
"#;

const NAMESPACE_ESCAPE: &str = r#"import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET = 0x10000000, 0x00020000, 0x40000000
got = [name for name, flag in [("user", CLONE_NEWUSER), ("mount", CLONE_NEWNS), ("net", CLONE_NEWNET)] if libc.unshare(flag) == 0]
PTRACE_ATTACH = 16
if libc.ptrace(PTRACE_ATTACH, os.getppid(), 0, 0) == 0:
    got.append("ptrace")
print(("ESCAPED " + ", ".join(got)) if got else "CONTAINED: unshare and ptrace refused")
"#;

/// State that would outlive the run, and memory no limit counts.
const LASTING_STATE: &str = r#"import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
IPC_PRIVATE, IPC_CREAT = 0, 0o1000
made = []
try:
    os.setxattr(".", "user.codeloop", b"1")
    made.append("an extended attribute")
except OSError:
    pass
for name, call in [("a message queue", lambda: libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o600)),
                   ("a shared memory segment", lambda: libc.shmget(IPC_PRIVATE, 1 << 20, IPC_CREAT | 0o600)),
                   ("a semaphore set", lambda: libc.semget(IPC_PRIVATE, 1, IPC_CREAT | 0o600))]:
    if call() >= 0:
        made.append(name)
try:
    os.memfd_create("codeloop")
    made.append("a memfd")
except OSError:
    pass
print(("ESCAPED made " + ", ".join(made)) if made else "CONTAINED: extended attributes, SysV IPC and memfd refused")
"#;

impl LayerImpl for Seccomp {
    fn can_be_left_out(&self) -> bool {
        true
    }

    fn probe(&self, sandbox: &mut Sandbox, _options: &SandboxOptions) -> Result<(), String> {
        if let Some(missing) = helper_missing(sandbox) {
            Err(missing)
        } else if !(sys::seccomp_known() && seccomp_programs(true, true).is_ok()) {
            Err("the kernel does not offer seccomp filters".into())
        } else {
            Ok(())
        }
    }

    fn report(&self, sandbox: &Sandbox) -> LayerReport {
        match sandbox.probed(Layer::Seccomp) {
            Ok(()) => LayerReport {
                name: "seccomp".into(),
                active: true,
                detail: format!(
                    "no non-Unix sockets, no ptrace, no namespace or mount calls, no TIOCSTI, no bpf, io_uring, keyrings or modules; no extended attributes written, SysV IPC, POSIX message queues or memfd (state that would outlive a job, memory no limit counts){}",
                    if !sandbox.has_namespaces() {
                        "; no setsid or setpgid, so every process stays in the run's group (no pid namespace here)"
                    } else {
                        ""
                    }
                ),
                advice: None,
            },
            Err(why) => LayerReport {
                name: "seccomp".into(),
                active: false,
                detail: why.to_string(),
                advice: Some(
                    "use a kernel built with CONFIG_SECCOMP_FILTER on x86_64 or aarch64".into(),
                ),
            },
        }
    }

    fn stage(&self) -> Stage {
        Stage::Confine
    }

    fn plan(&self, sandbox: &Sandbox, _run: &RunPlan) -> Option<serde_json::Value> {
        if !sandbox.uses(Layer::Seccomp) {
            return None;
        }
        step(&Plan {
            pin_process_group: !sandbox.has_namespaces(),
            reduced: !sandbox.has_namespaces(),
        })
    }

    fn apply(&self, step: &serde_json::Value, _child: &mut Child) -> Result<(), String> {
        let plan: Plan = read_step(Layer::Seccomp, step)?;
        apply_seccomp(plan.pin_process_group, plan.reduced)
    }

    fn doctor<'a>(&'a self, sandbox: &'a Sandbox) -> BoxFuture<'a, Vec<ProbeResult>> {
        Box::pin(async move {
            vec![
                tcp_loopback(sandbox).await,
                marker_probe(
                    "namespace and ptrace escape",
                    run(sandbox, NAMESPACE_ESCAPE, vec![]).await,
                    true,
                ),
                marker_probe(
                    "lasting state: xattr, SysV IPC, memfd",
                    run(sandbox, LASTING_STATE, vec![]).await,
                    true,
                ),
            ]
        })
    }
}

async fn tcp_loopback(sandbox: &Sandbox) -> ProbeResult {
    let name = "TCP connect to a loopback listener";
    let listener = match TcpListener::bind("127.0.0.1:0") {
        Ok(l) => l,
        Err(e) => {
            return ProbeResult {
                name: name.into(),
                hostile: true,
                ok: false,
                detail: format!("cannot open a loopback listener: {e}"),
            };
        }
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let _ = listener.set_nonblocking(true);
    let outcome = run(sandbox, TCP_CONNECT, vec![port.to_string()]).await;
    let mut host_ok = true;
    if let Ok((mut stream, _)) = listener.accept() {
        let mut buf = [0u8; 16];
        let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
        let _ = stream.read(&mut buf);
        host_ok = false;
    }
    marker_probe(name, outcome, host_ok)
}

/// The syscalls refused outright, with EPERM.
const DENIED_SYSCALLS: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_personality,
    libc::SYS_acct,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_adjtimex,
    libc::SYS_syslog,
    // Watching files: the host directories bound read-only into the run's
    // view (and, in the reduced sandbox, the user's home and /tmp) would
    // tell it what the host does there.
    libc::SYS_inotify_init1,
    libc::SYS_inotify_add_watch,
    libc::SYS_fanotify_init,
    libc::SYS_fanotify_mark,
    // State that would outlive a job, or memory no limit of the run's
    // counts. Extended attributes: the fork server's jobs would leave
    // them for the next on whatever files outlive a job. SysV message
    // queues, semaphores and shared memory, and POSIX message queues:
    // one IPC namespace holds them for every job of a fork server (its
    // children cannot unshare a namespace of their own), the host's in the
    // reduced sandbox, and a segment holds its memory after every process
    // detached. memfd: pages written to one count against no RLIMIT_AS.
    // multiprocessing needs none of them (its locks are POSIX semaphores,
    // files in /dev/shm; its heap is a file in the temporary directory).
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    SYS_SETXATTRAT,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
    SYS_REMOVEXATTRAT,
    libc::SYS_msgget,
    libc::SYS_msgsnd,
    libc::SYS_msgrcv,
    libc::SYS_msgctl,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semtimedop,
    libc::SYS_semctl,
    libc::SYS_shmget,
    libc::SYS_shmat,
    libc::SYS_shmdt,
    libc::SYS_shmctl,
    libc::SYS_mq_open,
    libc::SYS_mq_unlink,
    libc::SYS_mq_timedsend,
    libc::SYS_mq_timedreceive,
    libc::SYS_mq_notify,
    libc::SYS_mq_getsetattr,
    libc::SYS_memfd_create,
    libc::SYS_memfd_secret,
];

/// Linux 6.13's setxattrat and removexattrat (one number on every
/// architecture; the libc crate does not name them yet).
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;

/// Refused in the reduced sandbox only (see `seccomp_programs`).
fn reduced_denied_syscalls() -> Vec<i64> {
    let mut v = vec![
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        libc::SYS_fchmodat2,
        libc::SYS_fchown,
        libc::SYS_fchownat,
        libc::SYS_utimensat,
        libc::SYS_connect,
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        libc::SYS_chmod,
        libc::SYS_chown,
        libc::SYS_lchown,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
    ]);
    v
}

const NAMESPACE_FLAGS: &[u64] = &[
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
];

fn arch() -> Result<TargetArch, String> {
    if cfg!(target_arch = "x86_64") {
        Ok(TargetArch::x86_64)
    } else if cfg!(target_arch = "aarch64") {
        Ok(TargetArch::aarch64)
    } else {
        Err("seccomp filters are built for x86_64 and aarch64 only".into())
    }
}

/// Filters that refuse (EPERM) non-Unix sockets, ptrace, namespace and mount
/// tricks, TIOCSTI and other kernel surfaces a test program never needs;
/// and make clone3 report ENOSYS so the C library falls back to clone, whose
/// flags a filter can inspect.
pub(crate) fn seccomp_programs(
    pin_process_group: bool,
    reduced: bool,
) -> Result<Vec<BpfProgram>, String> {
    let arch = arch()?;
    let mut denied = denied_outright(pin_process_group, reduced);
    denied.extend(denied_by_argument()?);
    let mut programs = Vec::new();
    if reduced {
        // posix_fallocate then falls back to writing, which RLIMIT_FSIZE bounds.
        programs.push(program(
            BTreeMap::from([(libc::SYS_fallocate, vec![])]),
            libc::EOPNOTSUPP,
            arch,
        )?);
    }
    programs.push(program(denied, libc::EPERM, arch)?);
    programs.push(program(
        BTreeMap::from([(libc::SYS_clone3, vec![])]),
        libc::ENOSYS,
        arch,
    )?);
    Ok(programs)
}

/// The system calls refused whatever their arguments.
fn denied_outright(pin_process_group: bool, reduced: bool) -> BTreeMap<i64, Vec<SeccompRule>> {
    let mut denied: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for &nr in DENIED_SYSCALLS {
        denied.insert(nr, vec![]);
    }
    #[cfg(target_arch = "x86_64")]
    denied.insert(libc::SYS_inotify_init, vec![]);
    if pin_process_group {
        denied.insert(libc::SYS_setsid, vec![]);
        denied.insert(libc::SYS_setpgid, vec![]);
    }
    if reduced {
        // Without a mount namespace the host's files and sockets are in
        // view: Landlock keeps writes inside the working directory but
        // governs neither metadata nor connecting to a Unix socket (a tmux
        // server, D-Bus, docker, ssh-agent). socketpair() still works
        // (multiprocessing's pipes).
        for nr in reduced_denied_syscalls() {
            denied.insert(nr, vec![]);
        }
    }
    denied
}

/// The system calls refused for some arguments: device nodes (FIFOs are
/// still made), sockets but Unix ones, the terminal ioctls that type or
/// read for someone else, clone into a new namespace.
fn denied_by_argument() -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
    let device = |arg: u8| -> Result<Vec<SeccompRule>, String> {
        [libc::S_IFCHR, libc::S_IFBLK]
            .into_iter()
            .map(|kind| {
                when(
                    arg,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::MaskedEq(libc::S_IFMT as u64),
                    kind as u64,
                )
            })
            .collect()
    };
    let not_unix = || {
        when(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
    };
    let mut denied = BTreeMap::new();
    #[cfg(target_arch = "x86_64")]
    denied.insert(libc::SYS_mknod, device(1)?);
    denied.insert(libc::SYS_mknodat, device(2)?);
    denied.insert(libc::SYS_socket, vec![not_unix()?]);
    denied.insert(libc::SYS_socketpair, vec![not_unix()?]);
    // The request type differs between C libraries (u64 on glibc, i32 on musl).
    #[allow(clippy::unnecessary_cast)]
    let tty_ioctls = [libc::TIOCSTI as u64, libc::TIOCLINUX as u64];
    denied.insert(
        libc::SYS_ioctl,
        tty_ioctls
            .into_iter()
            .map(|req| when(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, req))
            .collect::<Result<_, _>>()?,
    );
    denied.insert(
        libc::SYS_clone,
        NAMESPACE_FLAGS
            .iter()
            .map(|&flag| {
                when(
                    0,
                    SeccompCmpArgLen::Qword,
                    SeccompCmpOp::MaskedEq(flag),
                    flag,
                )
            })
            .collect::<Result<_, _>>()?,
    );
    Ok(denied)
}

/// A rule that matches when argument `arg` compares to `value` by `op`.
fn when(
    arg: u8,
    len: SeccompCmpArgLen,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompRule, String> {
    let condition =
        SeccompCondition::new(arg, len, op, value).map_err(|e| format!("seccomp rule: {e}"))?;
    SeccompRule::new(vec![condition]).map_err(|e| format!("seccomp rule: {e}"))
}

/// One filter program: the calls in `rules` fail with `errno`, the rest pass.
fn program(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: i32,
    arch: TargetArch,
) -> Result<BpfProgram, String> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .map_err(|e| format!("seccomp filter: {e}"))?;
    BpfProgram::try_from(filter).map_err(|e| format!("seccomp filter: {e}"))
}

fn apply_seccomp(pin_process_group: bool, reduced: bool) -> Result<(), String> {
    for program in seccomp_programs(pin_process_group, reduced)? {
        seccompiler::apply_filter(&program).map_err(|e| format!("seccomp: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seccomp_filters_compile() {
        let programs = seccomp_programs(true, false).unwrap();
        assert_eq!(programs.len(), 2);
        let programs = seccomp_programs(true, true).unwrap();
        assert_eq!(programs.len(), 3);
        assert!(programs.iter().all(|p| !p.is_empty()));
    }
}
