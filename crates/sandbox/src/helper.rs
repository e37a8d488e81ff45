//! The sandbox helper: codeloop re-executes itself as this helper (inside
//! bubblewrap's namespaces when those are used); it sets resource limits,
//! drops to an unprivileged uid when started as root, applies Landlock and
//! seccomp to itself, and then execs the interpreter. Doing this in a fresh
//! single-threaded process (rather than a `pre_exec` closure of a tokio
//! process) keeps the restrictions off codeloop itself and off any of its
//! threads.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use serde::{Deserialize, Serialize};

use super::namespaces::{self, NamespacePlan};
use super::sys;

/// The first argument that turns the `codeloop` binary into the helper.
pub const HELPER_ARG: &str = "__codeloop-sandbox-helper";

/// Set by the `codeloop` binary's `main`: the running program is the
/// helper, whatever its file is called (a renamed or copied binary too).
/// Test and bench binaries leave it unset: run with `HELPER_ARG` they would
/// not act as the helper.
static THIS_BINARY_IS_THE_HELPER: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Called by the `codeloop` binary before anything else runs.
pub fn this_binary_is_the_helper() {
    THIS_BINARY_IS_THE_HELPER.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether `this_binary_is_the_helper` was called.
pub fn is_this_binary_the_helper() -> bool {
    THIS_BINARY_IS_THE_HELPER.load(std::sync::atomic::Ordering::Relaxed)
}

/// Exit code of the helper when it could not set the sandbox up; its stderr
/// then starts with [`HELPER_ERROR_PREFIX`].
pub const HELPER_FAILED: i32 = 125;
pub const HELPER_ERROR_PREFIX: &str = "codeloop sandbox helper: ";

/// What the helper does before it execs `argv`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HelperPlan {
    pub workdir: PathBuf,
    pub argv: Vec<OsString>,
    pub rlimits: Rlimits,
    /// Switch to this uid and gid (only when started as root).
    pub drop_to: Option<u32>,
    /// Paths readable (and executable) under Landlock; `None` = no Landlock.
    pub landlock: Option<LandlockPlan>,
    pub seccomp: bool,
    /// Refuse setsid and setpgid, so every process of the run stays in its
    /// process group and dies with it (used where no pid namespace does that).
    #[serde(default)]
    pub pin_process_group: bool,
    /// The reduced sandbox's extra refusals (no namespaces to hide the
    /// host): chmod, chown and utime families, connect(), fallocate().
    #[serde(default)]
    pub reduced: bool,
    /// Namespaces set up by the helper itself (no bubblewrap).
    #[serde(default)]
    pub namespaces: Option<NamespacePlan>,
    /// Where the program's raw wait status and its figures (`Usage`) are
    /// written for codeloop (bubblewrap's init reports a kill as 128 +
    /// signal, and only the program's parent can measure it): by the
    /// namespace's init, or by the helper, which then forks and waits.
    #[serde(default)]
    pub status_fd: Option<i32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rlimits {
    pub cpu_secs: u64,
    pub address_space: u64,
    pub file_size: u64,
    pub open_files: u64,
    /// `None` where the count would include processes outside the run
    /// (an ordinary user without namespaces): then it is left as it is.
    pub processes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LandlockPlan {
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
}

/// Entry point when the binary was started with [`HELPER_ARG`]: never
/// returns on success (the process becomes the interpreter).
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    match args.get(2).and_then(|a| a.to_str()) {
        Some("--probe") => {
            println!("codeloop sandbox helper {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Some("--kill-uid") => {
            return match args.get(3).and_then(|a| a.to_str()).map(str::parse::<u32>) {
                Some(Ok(uid)) if uid != 0 => match kill_uid(uid) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => fail(&e),
                },
                _ => fail("--kill-uid needs a non-zero uid"),
            };
        }
        _ => {}
    }
    let plan = match args.get(2).map(|a| a.clone().into_encoded_bytes()) {
        Some(json) => match serde_json::from_slice::<HelperPlan>(&json) {
            Ok(p) => p,
            Err(e) => return fail(&format!("the plan is not valid JSON: {e}")),
        },
        None => return fail("no plan given (this mode is started by codeloop itself)"),
    };
    match apply_and_exec(&plan) {
        Ok(never) => match never {},
        Err(message) => fail(&message),
    }
}

/// Become `uid` and kill every process of that uid: a run's leftovers when
/// there is no pid namespace to end them.
fn kill_uid(uid: u32) -> Result<(), String> {
    drop_privileges(uid)?;
    // kill(-1) reaches every process this uid may signal: the run's own.
    // Repeat while a fork bomb may still be producing new ones.
    for _ in 0..50 {
        if !sys::kill_every_reachable() {
            return Ok(());
        }
    }
    Ok(())
}

fn fail(message: &str) -> ExitCode {
    eprintln!("{HELPER_ERROR_PREFIX}{message}");
    ExitCode::from(HELPER_FAILED as u8)
}

enum Never {}

fn apply_and_exec(plan: &HelperPlan) -> Result<Never, String> {
    // Whatever codeloop inherited without close-on-exec (a terminal, a
    // socket, a file of the shell that started it) must not reach the
    // program: only stdin, stdout and stderr go on.
    close_inherited_on_exec()?;
    match (&plan.namespaces, plan.status_fd) {
        // Returns in the process that becomes the program; its init
        // measures it and reports on `status_fd`.
        (Some(ns), fd) => namespaces::enter(&plan.workdir, ns, fd)?,
        // Returns in the process that is to become the program.
        (None, Some(fd)) => namespaces::report_status(fd)?,
        (None, None) => {}
    }
    std::env::set_current_dir(&plan.workdir)
        .map_err(|e| format!("cannot enter {}: {e}", plan.workdir.display()))?;
    set_rlimits(&plan.rlimits)?;
    if let Some(uid) = plan.drop_to {
        drop_privileges(uid)?;
    }
    // Die with codeloop (set after the uid change, which clears it).
    sys::die_with_parent();
    sys::no_new_privs().map_err(|e| format!("cannot set no_new_privs: {e}"))?;
    if let Some(landlock) = &plan.landlock {
        apply_landlock(landlock)?;
    }
    if plan.seccomp {
        apply_seccomp(plan.pin_process_group, plan.reduced)?;
    }
    let Some((program, args)) = plan.argv.split_first() else {
        return Err("nothing to run".into());
    };
    let err = std::process::Command::new(program).args(args).exec();
    Err(format!("cannot start {}: {err}", program.to_string_lossy()))
}

/// Mark every descriptor above stderr close-on-exec.
fn close_inherited_on_exec() -> Result<(), String> {
    if sys::close_range_on_exec(3).is_ok() {
        return Ok(());
    }
    // Kernels before 5.11: one descriptor at a time.
    let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map_err(|e| format!("cannot list the inherited descriptors: {e}"))?
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .filter(|fd| *fd > 2)
        .collect();
    for fd in fds {
        sys::close_on_exec(fd);
    }
    Ok(())
}

fn set_rlimits(r: &Rlimits) -> Result<(), String> {
    // The CPU soft limit sends SIGXCPU (which ends Python); the hard limit a
    // second later is the SIGKILL backstop.
    let limits = [
        (
            libc::RLIMIT_CPU,
            r.cpu_secs,
            r.cpu_secs.saturating_add(1),
            "CPU time",
        ),
        (
            libc::RLIMIT_AS,
            r.address_space,
            r.address_space,
            "address space",
        ),
        (libc::RLIMIT_FSIZE, r.file_size, r.file_size, "file size"),
        (
            libc::RLIMIT_NOFILE,
            r.open_files,
            r.open_files,
            "open files",
        ),
        (libc::RLIMIT_CORE, 0, 0, "core dumps"),
    ];
    let nproc = r.processes.map(|n| (libc::RLIMIT_NPROC, n, n, "processes"));
    for (resource, soft, hard, what) in limits.into_iter().chain(nproc) {
        // An ordinary user cannot raise a hard limit: never ask for more
        // than the current one.
        let hard = (hard as libc::rlim_t).min(sys::hard_rlimit(resource));
        sys::set_rlimit(resource, (soft as libc::rlim_t).min(hard), hard)
            .map_err(|e| format!("cannot limit {what}: {e}"))?;
    }
    Ok(())
}

fn drop_privileges(uid: u32) -> Result<(), String> {
    sys::switch_to(uid)
}

fn apply_landlock(plan: &LandlockPlan) -> Result<(), String> {
    let abi = ABI::V7;
    let err = |e: landlock::RulesetError| format!("Landlock: {e}");
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?
        .handle_access(AccessNet::from_all(abi))
        .map_err(err)?
        .scope(Scope::from_all(abi))
        .map_err(err)?
        .create()
        .map_err(err)?
        .add_rules(path_beneath_rules(&plan.read, AccessFs::from_read(abi)))
        .map_err(err)?
        .add_rules(path_beneath_rules(&plan.write, AccessFs::from_all(abi)))
        .map_err(err)?
        .restrict_self()
        .map_err(err)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("Landlock is not enforced by this kernel".into());
    }
    Ok(())
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
];

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
    let cond = |arg: u8, len: SeccompCmpArgLen, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, len, op, value).map_err(|e| format!("seccomp rule: {e}"))
    };
    let rule = |conds: Vec<SeccompCondition>| {
        SeccompRule::new(conds).map_err(|e| format!("seccomp rule: {e}"))
    };
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
    // Device nodes are never made (FIFOs still are).
    let mut mknod_rules = Vec::new();
    for kind in [libc::S_IFCHR, libc::S_IFBLK] {
        mknod_rules.push(rule(vec![cond(
            1,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(libc::S_IFMT as u64),
            kind as u64,
        )?])?);
    }
    #[cfg(target_arch = "x86_64")]
    denied.insert(libc::SYS_mknod, mknod_rules);
    #[cfg(not(target_arch = "x86_64"))]
    drop(mknod_rules);
    let mut mknodat_rules = Vec::new();
    for kind in [libc::S_IFCHR, libc::S_IFBLK] {
        mknodat_rules.push(rule(vec![cond(
            2,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(libc::S_IFMT as u64),
            kind as u64,
        )?])?);
    }
    denied.insert(libc::SYS_mknodat, mknodat_rules);
    denied.insert(
        libc::SYS_socket,
        vec![rule(vec![cond(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )?])?],
    );
    denied.insert(
        libc::SYS_socketpair,
        vec![rule(vec![cond(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )?])?],
    );
    // The request type differs between C libraries (u64 on glibc, i32 on musl).
    #[allow(clippy::unnecessary_cast)]
    let tty_ioctls = [libc::TIOCSTI as u64, libc::TIOCLINUX as u64];
    let mut ioctl_rules = Vec::new();
    for req in tty_ioctls {
        ioctl_rules.push(rule(vec![cond(
            1,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            req,
        )?])?);
    }
    denied.insert(libc::SYS_ioctl, ioctl_rules);
    let mut clone_rules = Vec::new();
    for &flag in NAMESPACE_FLAGS {
        clone_rules.push(rule(vec![cond(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )?])?);
    }
    denied.insert(libc::SYS_clone, clone_rules);

    let eperm = SeccompFilter::new(
        denied,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| format!("seccomp filter: {e}"))?;
    let mut clone3: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    clone3.insert(libc::SYS_clone3, vec![]);
    let mut programs = Vec::new();
    if reduced {
        // posix_fallocate then falls back to writing, which RLIMIT_FSIZE bounds.
        let mut fallocate: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        fallocate.insert(libc::SYS_fallocate, vec![]);
        let eopnotsupp = SeccompFilter::new(
            fallocate,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EOPNOTSUPP as u32),
            arch,
        )
        .map_err(|e| format!("seccomp filter: {e}"))?;
        programs
            .push(BpfProgram::try_from(eopnotsupp).map_err(|e| format!("seccomp filter: {e}"))?);
    }
    let enosys = SeccompFilter::new(
        clone3,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(|e| format!("seccomp filter: {e}"))?;
    for filter in [eperm, enosys] {
        programs.push(BpfProgram::try_from(filter).map_err(|e| format!("seccomp filter: {e}"))?);
    }
    Ok(programs)
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
