//! Namespaces without an external binary: the helper itself unshares the
//! mount, pid, net, ipc, uts and cgroup namespaces (and a user namespace
//! when codeloop is not root), builds a root of its own (the system
//! directories and the interpreter read-only, a fresh /dev with five devices,
//! a fresh /proc) and one tmpfs of the disk quota's size that holds the
//! working directory, /tmp and /dev/shm, so the quota holds at the syscall.
//!
//! Three processes: the helper stays outside the new pid namespace, waits,
//! and copies the collected files back to the host's working directory; its
//! child is the namespace's init (it reaps orphans and ends the namespace,
//! and so every process in it, when the program ends); the grandchild goes
//! on to set limits, Landlock and seccomp and becomes the interpreter.
//! This is what bubblewrap does for us elsewhere; compiled in, it needs no
//! package and no setuid binary.

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::sys::{self, Forked};
use crate::usage::{REPORT_LEN, Usage, of as usage_of, parse_report, report};

/// What the helper builds before the program starts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct NamespacePlan {
    /// Also create a user namespace (codeloop is not root).
    pub user: bool,
    /// Host paths made visible, read-only, at the same place.
    pub read_only: Vec<PathBuf>,
    /// Size of the one tmpfs that holds the working directory, /tmp and /dev/shm.
    pub disk_bytes: u64,
    /// Its inode limit: the run's files and directories (`Limits::max_files`).
    pub max_files: u64,
    /// Files copied back to the host's working directory after the run.
    pub collect: Vec<String>,
    /// The uid (and gid) the run drops to, which must own the working directory.
    pub owner: Option<u32>,
    /// Also copy back the image files the program left (`images.rs`).
    #[serde(default)]
    pub collect_images: bool,
}

/// Each collected file is copied back up to this size.
const COLLECT_CAP: u64 = 1 << 20;
/// Where the old root and the new one are assembled (a tmpfs mounted there
/// in the new mount namespace only; the host's stays as it is).
const BASE: &str = "/tmp";
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

fn cstr(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("{} has a NUL byte", p.display()))
}

fn mount(
    src: Option<&Path>,
    dst: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> Result<(), String> {
    let src_c = src.map(cstr).transpose()?;
    let dst_c = cstr(dst)?;
    let fs_c = fstype.map(|f| CString::new(f).unwrap_or_default());
    let data_c = data.map(|d| CString::new(d).unwrap_or_default());
    sys::mount(
        src_c.as_deref(),
        &dst_c,
        fs_c.as_deref(),
        flags,
        data_c.as_deref(),
    )
    .map_err(|e| format!("cannot mount {}: {e}", dst.display()))
}

fn write_file(path: &str, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {path}: {e}"))
}

/// Enter the namespaces and build the root. Returns only in the process
/// that is to become the program; the helper ends as the program ended:
/// with its exit status, or killed by the same signal. (The init cannot
/// die of a signal sent from inside its namespace, and an exit status has
/// 8 bits: it hands the program's raw wait status to the helper through a
/// pipe, so `sys.exit(137)` never reads as a SIGKILL.)
///
/// With `report_fd`, the program's wait status and figures (`Usage`) are
/// written there too, for codeloop.
pub(crate) fn enter(
    workdir: &Path,
    plan: &NamespacePlan,
    report_fd: Option<i32>,
) -> Result<(), String> {
    let (uid, gid) = (sys::uid(), sys::gid());
    die_with_parent();
    let host_dir = std::fs::File::open(workdir)
        .map_err(|e| format!("cannot open {}: {e}", workdir.display()))?;
    let mut flags = libc::CLONE_NEWNS
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWNET
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWCGROUP;
    if plan.user {
        flags |= libc::CLONE_NEWUSER;
    }
    sys::unshare(flags).map_err(|e| format!("cannot create namespaces: {e}"))?;
    if plan.user {
        write_file("/proc/self/setgroups", "deny")?;
        write_file("/proc/self/uid_map", &format!("{uid} {uid} 1\n"))?;
        write_file("/proc/self/gid_map", &format!("{gid} {gid} 1\n"))?;
    }
    sys::set_hostname(b"sandbox");
    let (status_read, status_write) = status_pipe()?;
    // The new pid namespace's first process builds the root: /proc must be
    // mounted by a process inside it, and (in a user namespace) while the
    // host's /proc is still in view.
    match sys::fork().map_err(|e| format!("cannot fork: {e}"))? {
        Forked::Child => {
            drop(status_read);
            if let Some(fd) = report_fd {
                // The init and the program have no use for codeloop's end.
                sys::close(fd);
            }
            init(workdir, plan, status_write)
        }
        Forked::Parent(child) => {
            drop(status_write);
            let (init_status, _) = wait_for(child);
            let (program_status, usage) = read_status(status_read).unwrap_or((init_status, None));
            if let Some(mut out) = report_fd.and_then(sys::adopt_fd) {
                let _ = out.write_all(&report(program_status, usage));
            }
            // pivot_root moved this process's root too: `workdir` is the
            // run's tmpfs here.
            let mut names: Vec<(String, u64)> = plan
                .collect
                .iter()
                .map(|n| (n.clone(), COLLECT_CAP))
                .collect();
            if plan.collect_images {
                names.extend(
                    crate::images::image_names(workdir)
                        .into_iter()
                        .map(|n| (n, crate::images::IMAGE_CAP)),
                );
            }
            copy_out(&host_dir, workdir, &names);
            end_as(program_status)
        }
    }
}

/// Fork: the child returns to become the program; this process waits for
/// it, writes its raw wait status to `fd`, and exits with its status.
pub(crate) fn report_status(fd: i32) -> Result<(), String> {
    match sys::fork().map_err(|e| format!("cannot fork: {e}"))? {
        Forked::Child => {
            // The child has no use for the status descriptor.
            sys::close(fd);
            Ok(())
        }
        Forked::Parent(program) => {
            // Without a pid namespace nothing else ends the program if
            // codeloop dies: this process goes with codeloop, and the
            // program (its death signal set later) with this process.
            die_with_parent();
            let (raw, usage) = wait_for(program);
            if let Some(mut out) = sys::adopt_fd(fd) {
                let _ = out.write_all(&report(raw, usage));
            }
            std::process::exit(exit_code(raw))
        }
    }
}

/// A close-on-exec pipe: the program never holds the init's end.
pub(crate) fn status_pipe() -> Result<(std::fs::File, std::fs::File), String> {
    sys::pipe_cloexec().map_err(|e| format!("cannot make the status pipe: {e}"))
}

/// The wait status (and the figures, where they came) written on `pipe`.
pub(crate) fn read_status(mut pipe: std::fs::File) -> Option<(i32, Option<Usage>)> {
    let mut raw = [0u8; REPORT_LEN];
    let mut got = 0;
    while got < REPORT_LEN {
        match pipe.read(&mut raw[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    parse_report(&raw[..got])
}

/// Exit as a process with this wait status did: the same exit status, or
/// the same signal (raised on itself, with no core dump).
fn end_as(status: i32) -> ! {
    if libc::WIFSIGNALED(status) {
        sys::die_of_signal(libc::WTERMSIG(status))
    }
    std::process::exit(exit_code(status))
}

/// A wait status as an exit code (128 + signal when it was killed).
fn exit_code(status: i32) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

/// The pid namespace's init: build the root, start the program, reap
/// whatever it leaves, hand its wait status to the helper, and exit (which
/// ends every process left).
fn init(workdir: &Path, plan: &NamespacePlan, status: std::fs::File) -> Result<(), String> {
    die_with_parent();
    mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )?;
    build_root(workdir, plan)?;
    match sys::fork().map_err(|e| format!("cannot fork: {e}"))? {
        Forked::Child => Ok(()),
        Forked::Parent(program) => {
            let (raw, usage) = wait_for(program);
            let mut status = status;
            let _ = status.write_all(&report(raw, usage));
            std::process::exit(exit_code(raw))
        }
    }
}

fn die_with_parent() {
    sys::die_with_parent();
}

/// Reap children until `pid` ends; its raw wait status, and what it used
/// (with the children it waited for).
fn wait_for(pid: libc::pid_t) -> (i32, Option<Usage>) {
    loop {
        match sys::wait_any() {
            Ok((r, status, ru))
                if r == pid && (libc::WIFEXITED(status) || libc::WIFSIGNALED(status)) =>
            {
                return (status, Some(usage_of(&ru)));
            }
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            // No child left to wait for: as an exit with status 1.
            Err(_) => return (1 << 8, None),
        }
    }
}

fn mkdirs(path: &Path, mode: u32) -> Result<(), String> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))
}

/// `/newroot` + an absolute path.
fn inside(root: &Path, p: &Path) -> PathBuf {
    let mut out = root.to_path_buf();
    out.extend(p.components().filter(|c| matches!(c, Component::Normal(_))));
    out
}

fn bind(src: &Path, dst: &Path, read_only: bool) -> Result<(), String> {
    mount(Some(src), dst, None, libc::MS_BIND | libc::MS_REC, None)?;
    // A remount must keep the flags the kernel locked on the source (inside
    // a user namespace it is refused otherwise).
    let dst_c = cstr(dst)?;
    let f_flag =
        sys::mount_flags(&dst_c).map_err(|e| format!("cannot stat {}: {e}", dst.display()))?;
    let mut flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_NOSUID;
    for (st_flag, ms_flag) in [
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if f_flag & st_flag != 0 {
            flags |= ms_flag;
        }
    }
    if read_only {
        flags |= libc::MS_RDONLY;
    }
    mount(None, dst, None, flags, None)
}

fn build_root(workdir: &Path, plan: &NamespacePlan) -> Result<(), String> {
    enter_assembly_area()?;
    let old = Path::new("/oldroot");
    let new = Path::new("/newroot");
    let disk = Path::new("/disk");
    tmpfs(new, "mode=0755,size=4m")?;
    let work = scratch_disk(disk, plan)?;
    // /tmp first: what is bound later (the interpreter, the working
    // directory) may live under it and must stay visible on top of it.
    mkdirs(&new.join("tmp"), 0o755)?;
    bind(&disk.join("tmp"), &new.join("tmp"), false)?;
    for p in &plan.read_only {
        bind_read_only(&inside(old, p), &inside(new, p))?;
    }
    build_dev(old, new, disk)?;
    mkdirs(&new.join("proc"), 0o555)?;
    mount(
        Some(Path::new("proc")),
        &new.join("proc"),
        Some("proc"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        None,
    )?;
    let work_dst = inside(new, workdir);
    mkdirs(&work_dst, 0o755)?;
    copy_tree(&inside(old, workdir), &work, plan.owner)?;
    bind(&work, &work_dst, false)?;
    enter_new_root(new)
}

/// A small tmpfs to assemble the new root in, made the root (the host's
/// is then at /oldroot), with /newroot and /disk in it.
fn enter_assembly_area() -> Result<(), String> {
    let base = Path::new(BASE);
    tmpfs(base, "mode=0755,size=1m")?;
    std::env::set_current_dir(base).map_err(|e| format!("cannot enter {BASE}: {e}"))?;
    for d in ["newroot", "oldroot", "disk"] {
        mkdirs(&base.join(d), 0o755)?;
    }
    pivot_root(".", "oldroot")?;
    std::env::set_current_dir("/").map_err(|e| format!("cannot enter /: {e}"))
}

fn tmpfs(at: &Path, options: &str) -> Result<(), String> {
    mount(
        Some(Path::new("tmpfs")),
        at,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(options),
    )
}

/// The run's own disk, of the quota's size and file count: its working
/// directory (returned), /tmp and /dev/shm.
fn scratch_disk(disk: &Path, plan: &NamespacePlan) -> Result<PathBuf, String> {
    tmpfs(
        disk,
        &format!(
            "mode=0755,size={},nr_inodes={}",
            plan.disk_bytes.max(1 << 20),
            // Its root, work, tmp and shm, and the files copied in.
            plan.max_files.saturating_add(crate::OWN_ENTRIES)
        ),
    )?;
    let work = disk.join("work");
    mkdirs(&work, 0o700)?;
    for d in ["tmp", "shm"] {
        mkdirs(&disk.join(d), 0o755)?;
        std::fs::set_permissions(disk.join(d), std::fs::Permissions::from_mode(0o1777))
            .map_err(|e| format!("cannot set up /{d}: {e}"))?;
    }
    Ok(work)
}

/// The host's `src` at `dst` in the new root, read-only (a symlink is
/// made again as one; what does not exist is left out).
fn bind_read_only(src: &Path, dst: &Path) -> Result<(), String> {
    let Ok(meta) = std::fs::symlink_metadata(src) else {
        return Ok(());
    };
    if let Some(parent) = dst.parent() {
        mkdirs(parent, 0o755)?;
    }
    if meta.file_type().is_symlink() {
        if let Ok(target) = std::fs::read_link(src) {
            let _ = std::os::unix::fs::symlink(target, dst);
        }
        return Ok(());
    }
    if meta.is_dir() {
        mkdirs(dst, 0o755)?;
    } else if !dst.exists() {
        std::fs::File::create(dst).map_err(|e| format!("cannot create {}: {e}", dst.display()))?;
    }
    bind(src, dst, true)
}

/// Leave the host's root and the assembly area behind for the new root,
/// then make it read-only: nothing outside the working directory, /tmp
/// and /dev/shm is writable.
fn enter_new_root(new: &Path) -> Result<(), String> {
    sys::unmount_detach(c"/oldroot").map_err(|e| format!("cannot detach the host's root: {e}"))?;
    std::env::set_current_dir(new).map_err(|e| format!("cannot enter the new root: {e}"))?;
    pivot_root(".", ".")?;
    sys::unmount_detach(c".").map_err(|e| format!("cannot detach the assembly area: {e}"))?;
    std::env::set_current_dir("/").map_err(|e| format!("cannot enter /: {e}"))?;
    mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
        None,
    )?;
    mount(
        None,
        Path::new("/dev"),
        None,
        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NOEXEC,
        None,
    )
}

/// A /dev with null, zero, full, random and urandom, the fd links and a
/// private /dev/shm: no terminal, no disks, no other device.
fn build_dev(old: &Path, new: &Path, disk: &Path) -> Result<(), String> {
    let dev = new.join("dev");
    mkdirs(&dev, 0o755)?;
    mount(
        Some(Path::new("tmpfs")),
        &dev,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some("mode=0755,size=64k"),
    )?;
    for name in DEVICES {
        let dst = dev.join(name);
        std::fs::File::create(&dst).map_err(|e| format!("cannot create {}: {e}", dst.display()))?;
        mount(
            Some(&old.join("dev").join(name)),
            &dst,
            None,
            libc::MS_BIND,
            None,
        )?;
    }
    for (link, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        std::os::unix::fs::symlink(target, dev.join(link))
            .map_err(|e| format!("cannot link /dev/{link}: {e}"))?;
    }
    mkdirs(&dev.join("shm"), 0o755)?;
    bind(&disk.join("shm"), &dev.join("shm"), false)
}

fn pivot_root(new_root: &str, put_old: &str) -> Result<(), String> {
    let (n, o) = (
        CString::new(new_root).unwrap_or_default(),
        CString::new(put_old).unwrap_or_default(),
    );
    sys::pivot_root(&n, &o).map_err(|e| format!("cannot change the root: {e}"))
}

/// Copy the prepared working directory into the quota's tmpfs (regular
/// files and directories only), owned by the run's uid.
fn copy_tree(src: &Path, dst: &Path, owner: Option<u32>) -> Result<(), String> {
    let chown = |p: &Path| match owner {
        Some(id) => std::os::unix::fs::lchown(p, Some(id), Some(id))
            .map_err(|e| format!("cannot hand {} to the run: {e}", p.display())),
        None => Ok(()),
    };
    chown(dst)?;
    let entries =
        std::fs::read_dir(src).map_err(|e| format!("cannot read {}: {e}", src.display()))?;
    for entry in entries.flatten() {
        let (from, to) = (entry.path(), dst.join(entry.file_name()));
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            mkdirs(&to, 0o755)?;
            copy_tree(&from, &to, owner)?;
        } else if ft.is_file() {
            std::fs::copy(&from, &to)
                .map_err(|e| format!("cannot copy {}: {e}", from.display()))?;
            chown(&to)?;
        }
    }
    Ok(())
}

/// Copy the collected files from the run's working directory (now only in
/// this mount namespace) back to the host's: regular files only, never
/// through a symlink (every process of the run has ended by now).
fn copy_out(host_dir: &std::fs::File, workdir: &Path, names: &[(String, u64)]) {
    for (name, cap) in names {
        let rel = Path::new(name);
        if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            continue;
        }
        let mut path = workdir.to_path_buf();
        let mut through_symlink = false;
        for c in rel.components() {
            path.push(c);
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
                through_symlink = true;
                break;
            }
        }
        if through_symlink {
            continue;
        }
        let Ok(file) = std::fs::File::open(&path) else {
            continue;
        };
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            continue;
        }
        let mut data = Vec::new();
        if file.metadata().is_ok_and(|m| m.len() > *cap) {
            continue;
        }
        if file.take(*cap).read_to_end(&mut data).is_err() {
            continue;
        }
        let Ok(name_c) = CString::new(name.as_bytes()) else {
            continue;
        };
        let Ok(mut out) = sys::open_at(
            host_dir,
            &name_c,
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600,
        ) else {
            continue;
        };
        let _ = out.write_all(&data);
    }
}
