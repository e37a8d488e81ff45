//! What a run used: its CPU time (user + system) and its peak resident
//! memory (the RSS high-water mark), as the kernel counts them for the
//! program's process and the children it waited for.
//!
//! Measured by the program's own parent inside the sandbox with `wait4`
//! (never codeloop's `RUSAGE_CHILDREN`, which mixes runs, nor the helper's
//! rusage, whose high-water mark starts at codeloop's own memory when it
//! was forked from it): the namespace's init, or the helper's reporter
//! where there is no init of codeloop's (bubblewrap, the reduced sandbox).
//! The figures cross to codeloop after the wait status on the status pipe.
//! A fork server's job is measured the same way by the server (`os.wait4`
//! of the job's child); its high-water mark starts at the pages the child
//! shares with the warm interpreter, as a fresh interpreter's starts at
//! its own.

pub use codeloop_protocol::resources::Resources as Usage;

/// Bytes of a status report with figures: the raw wait status, then the
/// CPU time in microseconds and the peak RSS in KiB (native order).
pub(crate) const REPORT_LEN: usize = 4 + 8 + 8;

/// The figures of a `wait4` rusage.
pub(crate) fn of(ru: &libc::rusage) -> Usage {
    let us = |t: libc::timeval| (t.tv_sec.max(0) as u64) * 1_000_000 + t.tv_usec.max(0) as u64;
    let cpu_us = us(ru.ru_utime) + us(ru.ru_stime);
    Usage {
        cpu_ms: cpu_us / 1000,
        peak_rss_bytes: (ru.ru_maxrss.max(0) as u64) * 1024,
    }
}

/// The report a parent writes on the status pipe.
pub(crate) fn report(status: i32, usage: Option<Usage>) -> Vec<u8> {
    let mut out = status.to_ne_bytes().to_vec();
    if let Some(u) = usage {
        out.extend_from_slice(&(u.cpu_ms * 1000).to_ne_bytes());
        out.extend_from_slice(&(u.peak_rss_bytes / 1024).to_ne_bytes());
    }
    out
}

/// A report read back: the wait status, and the figures when they came.
pub(crate) fn parse_report(bytes: &[u8]) -> Option<(i32, Option<Usage>)> {
    let status = i32::from_ne_bytes(bytes.get(..4)?.try_into().ok()?);
    let usage = bytes.get(4..REPORT_LEN).and_then(|rest| {
        let cpu_us = u64::from_ne_bytes(rest.get(..8)?.try_into().ok()?);
        let kib = u64::from_ne_bytes(rest.get(8..16)?.try_into().ok()?);
        Some(Usage {
            cpu_ms: cpu_us / 1000,
            peak_rss_bytes: kib * 1024,
        })
    });
    Some((status, usage))
}

/// What a process and everything below it used so far, read from /proc:
/// for a run about to be killed from outside (its wall clock), whose own
/// parent will not live to measure it. CPU time summed, the largest peak.
pub(crate) fn of_tree(pid: i32) -> Option<Usage> {
    let ticks = super::sys::clock_ticks();
    let mut total: Option<Usage> = None;
    let mut stack = vec![pid];
    let mut seen = 0;
    while let Some(p) = stack.pop() {
        seen += 1;
        if seen > 4096 {
            break;
        }
        let dir = std::path::PathBuf::from(format!("/proc/{p}"));
        let Some(cpu_ticks) = std::fs::read_to_string(dir.join("stat"))
            .ok()
            .and_then(|stat| cpu_ticks_of(&stat))
        else {
            continue;
        };
        let peak_kib = super::procstatus::ProcStatus::read(&dir)
            .and_then(|s| s.number("VmHWM:"))
            .unwrap_or(0);
        let t = total.get_or_insert_default();
        t.cpu_ms += cpu_ticks * 1000 / ticks;
        t.peak_rss_bytes = t.peak_rss_bytes.max(peak_kib * 1024);
        if let Ok(tasks) = std::fs::read_dir(dir.join("task")) {
            for task in tasks.flatten() {
                if let Ok(kids) = std::fs::read_to_string(task.path().join("children")) {
                    stack.extend(
                        kids.split_whitespace()
                            .filter_map(|k| k.parse::<i32>().ok()),
                    );
                }
            }
        }
    }
    total
}

/// utime + stime + cutime + cstime of a `/proc/PID/stat` line, in ticks.
fn cpu_ticks_of(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Field 3 (the state) is the first after the name: utime is field 14.
    let at = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<i64>().ok());
    let sum = at(14)? + at(15)? + at(16)?.max(0) + at(17)?.max(0);
    Some(sum.max(0) as u64)
}

impl super::LimitHit {
    /// The limit in plain words with what the run used of it: the peak
    /// against a memory limit (how close it came), the CPU time of a run
    /// stopped for time (busy, or waiting).
    pub fn describe_with(&self, usage: Option<&Usage>) -> String {
        use codeloop_protocol::resources::{cpu_time, memory};
        let words = self.describe();
        match (self, usage) {
            (super::LimitHit::Memory(limit), Some(u)) => format!(
                "{words} (peak {} of {} limit)",
                memory(u.peak_rss_bytes),
                memory(*limit)
            ),
            (super::LimitHit::CpuTime(_) | super::LimitHit::WallTimeout(_), Some(u)) => {
                format!("{words} (CPU time {})", cpu_time(u.cpu_ms))
            }
            _ => words,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_carries_the_status_and_the_figures_and_an_old_one_only_the_status() {
        let u = Usage {
            cpu_ms: 1234,
            peak_rss_bytes: 100 << 20,
        };
        let r = report(9, Some(u));
        assert_eq!(r.len(), REPORT_LEN);
        assert_eq!(parse_report(&r), Some((9, Some(u))));
        assert_eq!(parse_report(&report(256, None)), Some((256, None)));
        assert_eq!(parse_report(&[1, 2]), None);
    }

    #[test]
    fn a_limit_says_what_the_run_used_of_it() {
        use crate::LimitHit;
        let u = Usage {
            cpu_ms: 3010,
            peak_rss_bytes: 498 << 20,
        };
        assert_eq!(
            LimitHit::Memory(512 << 20).describe_with(Some(&u)),
            "memory limit of 512 MiB (peak 498 MiB of 512 MiB limit)"
        );
        assert_eq!(
            LimitHit::CpuTime(3).describe_with(Some(&u)),
            "CPU time limit of 3 s (CPU time 3.01 s)"
        );
        assert_eq!(
            LimitHit::Memory(512 << 20).describe_with(None),
            "memory limit of 512 MiB"
        );
    }

    #[test]
    fn a_process_tree_is_measured_from_proc() {
        let here = of_tree(std::process::id() as i32).unwrap();
        assert!(here.peak_rss_bytes > 0);
        assert_eq!(
            cpu_ticks_of("12 (a (b) c) S 1 1 1 0 -1 0 0 0 0 0 5 7 2 1 20 0"),
            Some(15)
        );
    }
}
