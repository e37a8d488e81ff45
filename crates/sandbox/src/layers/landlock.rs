//! Landlock: the file system read-only outside the working directory and
//! the interpreter's paths (and /proc, the devices, /tmp and /dev/shm as
//! each mode allows); from ABI 4 no TCP bind or connect; from ABI 6
//! signals and abstract Unix sockets scoped to the run. Applied by the
//! helper (the `landlock` crate).
//!
//! Also the fork server's nested domain, built here and handed to
//! `forkserver.py` as data (`job_ruleset`): the rights handled, the
//! scopes, the rules (path and rights) and the three system call numbers.
//! The server's child applies exactly that (it cannot call Rust: it is a
//! forked Python), with no rule or number of its own.

use std::path::{Path, PathBuf};

use futures_util::future::BoxFuture;
use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};
use serde::{Deserialize, Serialize};

use super::{
    Child, Layer, LayerImpl, LayerReport, RunPlan, Stage, helper_missing, read_step, step,
};
use crate::probes::{ProbeResult, marker_probe, run};
use crate::sandbox::{CPU_INFO_DIR, SYSTEM_READ_DIRS};
use crate::{Sandbox, SandboxOptions};

pub(crate) struct Landlock;

/// What the helper's ruleset allows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Plan {
    /// Readable (and executable) beneath these.
    pub read: Vec<PathBuf>,
    /// Anything beneath these.
    pub write: Vec<PathBuf>,
}

const WRITE_OUTSIDE: &str = r#"import sys
escaped = []
for path in sys.argv[1:]:
    try:
        with open(path, "w") as f:
            f.write("codeloop doctor probe")
        escaped.append(path)
    except OSError as e:
        pass
print(("ESCAPED wrote " + ", ".join(escaped)) if escaped else "CONTAINED: every write outside the working directory failed")
"#;

impl LayerImpl for Landlock {
    fn can_be_left_out(&self) -> bool {
        true
    }

    fn probe(&self, sandbox: &mut Sandbox, _options: &SandboxOptions) -> Result<(), String> {
        if let Some(missing) = helper_missing(sandbox) {
            Err(missing)
        } else if sandbox.landlock_abi < 1 {
            Err("the kernel does not offer Landlock".into())
        } else {
            Ok(())
        }
    }

    fn report(&self, sandbox: &Sandbox) -> LayerReport {
        let abi = sandbox.landlock_abi;
        match sandbox.probed(Layer::Landlock) {
            Ok(()) => {
                let mut what = vec![
                    "filesystem read-only outside the working directory and the interpreter's paths",
                ];
                if abi >= 4 {
                    what.push("no TCP bind or connect");
                }
                if abi >= 6 {
                    what.push("signals and abstract Unix sockets scoped to the run");
                }
                LayerReport {
                    name: "landlock".into(),
                    active: true,
                    detail: format!("ABI {abi}: {}", what.join("; ")),
                    advice: (abi < 6)
                        .then(|| "a kernel of 6.12 or later adds TCP and signal scoping".into()),
                }
            }
            Err(why) => LayerReport {
                name: "landlock".into(),
                active: false,
                detail: why.to_string(),
                advice: Some(if sandbox.helper.is_none() {
                    "run the codeloop binary itself (it re-executes itself as the helper)".into()
                } else {
                    "use a kernel of 5.13 or later with Landlock enabled (lsm=landlock,...)".into()
                }),
            },
        }
    }

    fn stage(&self) -> Stage {
        Stage::Confine
    }

    fn plan(&self, sandbox: &Sandbox, run: &RunPlan) -> Option<serde_json::Value> {
        if sandbox.uses(Layer::Landlock) {
            step(&plan(sandbox, run.root))
        } else {
            None
        }
    }

    fn apply(&self, step: &serde_json::Value, _child: &mut Child) -> Result<(), String> {
        apply_landlock(&read_step(Layer::Landlock, step)?)
    }

    fn doctor<'a>(&'a self, sandbox: &'a Sandbox) -> BoxFuture<'a, Vec<ProbeResult>> {
        Box::pin(async move { vec![write_outside(sandbox).await] })
    }
}

/// Read: the system, the interpreter, five devices, and /proc (the run's
/// own with namespaces; without them only a few host-wide files, not other
/// processes). Write: the working directory, /dev/null, the private /tmp,
/// and /dev/shm only where it is the sandbox's own tmpfs or the run's uid
/// owns nothing else there; where it is the host's and the run keeps the
/// user's uid, /dev/shm is not even read (the user's own 0600 files are
/// there).
fn plan(sandbox: &Sandbox, root: &Path) -> Plan {
    let mut read: Vec<PathBuf> = SYSTEM_READ_DIRS.iter().map(PathBuf::from).collect();
    read.push(PathBuf::from(CPU_INFO_DIR));
    read.extend(
        ["null", "zero", "full", "random", "urandom"].map(|d| PathBuf::from("/dev").join(d)),
    );
    if sandbox.has_namespaces() {
        read.push(PathBuf::from("/proc"));
    } else {
        read.extend(
            ["/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/self"].map(PathBuf::from),
        );
    }
    read.extend(sandbox.interp.paths.iter().cloned());
    let mut write = vec![root.to_path_buf(), PathBuf::from("/dev/null")];
    if sandbox.has_namespaces() {
        // The sandbox's own /tmp, within the disk quota.
        write.push(PathBuf::from("/tmp"));
    }
    if sandbox.has_namespaces() || sandbox.drop_uid() {
        write.push(PathBuf::from("/dev/shm"));
    }
    Plan { read, write }
}

fn apply_landlock(plan: &Plan) -> Result<(), String> {
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

async fn write_outside(sandbox: &Sandbox) -> ProbeResult {
    let dir = match tempfile::Builder::new()
        .prefix("codeloop-doctor-")
        .tempdir()
    {
        Ok(d) => d,
        Err(e) => {
            return ProbeResult {
                name: "write outside the working directory".into(),
                hostile: true,
                ok: false,
                detail: format!("cannot make a target directory: {e}"),
            };
        }
    };
    // World-writable, so only the sandbox (not file permissions) can stop it.
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777));
    let target = dir.path().join("written-by-probe");
    // Named by this process, so two doctors at once never read each other's
    // escapes (or remove each other's evidence).
    let me = std::process::id();
    let home_target = std::env::var_os("HOME")
        .map(|h| std::path::PathBuf::from(h).join(format!(".codeloop-doctor-probe-{me}")));
    let etc_target = std::path::PathBuf::from(format!("/etc/codeloop-doctor-probe-{me}"));
    let mut args = vec![
        target.display().to_string(),
        etc_target.display().to_string(),
    ];
    if let Some(h) = &home_target {
        args.push(h.display().to_string());
    }
    // Leftovers of an earlier, unsandboxed try would read as an escape.
    let _ = std::fs::remove_file(&etc_target);
    if let Some(h) = &home_target {
        let _ = std::fs::remove_file(h);
    }
    let outcome = run(sandbox, WRITE_OUTSIDE, args).await;
    let mut host_ok = !target.exists();
    for written in [Some(etc_target), home_target].into_iter().flatten() {
        if written.exists() {
            host_ok = false;
            let _ = std::fs::remove_file(&written);
        }
    }
    marker_probe("write outside the working directory", outcome, host_ok)
}

/// A Landlock ruleset as `landlock_create_ruleset`, `landlock_add_rule`
/// (`LANDLOCK_RULE_PATH_BENEATH`) and `landlock_restrict_self` take it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct RulesetSpec {
    /// `handled_access_fs`.
    pub handled_fs: u64,
    /// `scoped` (ABI 6 on; 0 before).
    pub scoped: u64,
    /// The size of `struct landlock_ruleset_attr` to pass: 8 bytes (the
    /// file system rights only) before ABI 6, 24 from it.
    pub attr_size: usize,
    /// Paths and the rights granted beneath each (a path that cannot be
    /// opened when the rules are made is left out).
    pub rules: Vec<(PathBuf, u64)>,
    /// The system call numbers: create_ruleset, add_rule, restrict_self.
    pub syscalls: [i64; 3],
    /// The rule type of each rule: `LANDLOCK_RULE_PATH_BENEATH`.
    pub rule_type: u32,
}

/// `enum landlock_rule_type`'s path rule (linux/landlock.h).
const LANDLOCK_RULE_PATH_BENEATH: u32 = 1;

/// A fork server job's nested domain: writes only beneath `jobdir`, to
/// /dev/null, and to /dev/shm where it is the sandbox's own (wiped after
/// each job: multiprocessing's semaphores live there); no signals or
/// abstract Unix sockets outside the job's child. `None` where the kernel
/// has no Landlock (`abi` < 1).
pub(crate) fn job_ruleset(abi: i32, jobdir: &Path, private_shm: bool) -> Option<RulesetSpec> {
    let abi_level = ABI::from(abi);
    if abi_level == ABI::Unsupported {
        return None;
    }
    // The write rights up to ABI 3 (REFER from 2, TRUNCATE from 3); the
    // device ioctls of ABI 5 are left unhandled, as the outer domain's
    // files (stdout, /dev/null) are used with them.
    let handled: BitFlags<AccessFs> = AccessFs::from_write(abi_level.min(ABI::V3));
    let file_write = (AccessFs::WriteFile | AccessFs::Truncate) & handled;
    let (scoped, attr_size) = if abi >= 6 {
        (Scope::from_all(ABI::V6).bits(), 24)
    } else {
        (0, 8)
    };
    let mut rules = vec![
        (jobdir.to_path_buf(), handled.bits()),
        (PathBuf::from("/dev/null"), file_write.bits()),
    ];
    if private_shm {
        rules.push((PathBuf::from("/dev/shm"), handled.bits()));
    }
    Some(RulesetSpec {
        handled_fs: handled.bits(),
        scoped,
        attr_size,
        rules,
        syscalls: [
            libc::SYS_landlock_create_ruleset,
            libc::SYS_landlock_add_rule,
            libc::SYS_landlock_restrict_self,
        ],
        rule_type: LANDLOCK_RULE_PATH_BENEATH,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rights `forkserver.py` used to hard-code, by ABI.
    fn python_rights(abi: i32) -> u64 {
        let mut write: u64 = [1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
            .iter()
            .map(|b| 1u64 << b)
            .sum();
        if abi < 3 {
            write &= !(1 << 14);
        }
        if abi < 2 {
            write &= !(1 << 13);
        }
        write
    }

    #[test]
    fn the_job_ruleset_is_the_one_the_server_applied_before() {
        assert_eq!(job_ruleset(0, Path::new("/j"), true), None);
        for abi in 1..=8 {
            let spec = job_ruleset(abi, Path::new("/jobs/job"), abi % 2 == 0).unwrap();
            let write = python_rights(abi);
            assert_eq!(spec.handled_fs, write, "ABI {abi}");
            assert_eq!(spec.scoped, if abi >= 6 { 3 } else { 0 });
            assert_eq!(spec.attr_size, if abi >= 6 { 24 } else { 8 });
            let file_write = (1 << 1) | if abi >= 3 { 1 << 14 } else { 0 };
            let mut rules = vec![
                (PathBuf::from("/jobs/job"), write),
                (PathBuf::from("/dev/null"), file_write),
            ];
            if abi % 2 == 0 {
                rules.push((PathBuf::from("/dev/shm"), write));
            }
            assert_eq!(spec.rules, rules);
            assert_eq!(spec.syscalls, [444, 445, 446]);
            assert_eq!(spec.rule_type, 1);
        }
    }
}
