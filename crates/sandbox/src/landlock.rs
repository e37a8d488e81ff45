//! The fork server's nested Landlock domain, built here and handed to
//! `forkserver.py` as data: the rights handled, the scopes, the rules
//! (path and rights) and the three system call numbers. The server's
//! child applies exactly that (it cannot call Rust: it is a forked
//! Python), with no rule or number of its own.

use std::path::{Path, PathBuf};

use landlock::{ABI, Access, AccessFs, BitFlags, Scope};
use serde::Serialize;

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
}

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
        }
    }
}
