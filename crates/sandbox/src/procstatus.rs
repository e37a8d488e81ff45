//! A process's `/proc/PID/status`, read for what the sandbox asks of the
//! processes on the machine: whose they are, how many threads, and whether
//! they can still run code.

use std::path::Path;

/// The text of one `/proc/PID/status`.
pub struct ProcStatus(String);

impl ProcStatus {
    /// The status of the process whose `/proc` directory is `dir`; None
    /// when it is gone (or not a process).
    pub fn read(dir: &Path) -> Option<ProcStatus> {
        std::fs::read_to_string(dir.join("status"))
            .ok()
            .map(ProcStatus)
    }

    /// The value of the field `name` (with its colon: "Uid:"), trimmed; ""
    /// when there is none.
    pub fn field(&self, name: &str) -> &str {
        self.0
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .unwrap_or_default()
    }

    /// The first number of the field `name` (the real uid of "Uid:").
    pub fn number(&self, name: &str) -> Option<u64> {
        self.field(name).split_whitespace().next()?.parse().ok()
    }

    /// Whether it can still run code: not a zombie, not dead, and not
    /// already sent SIGKILL (on a busy machine a killed process may be
    /// listed for a moment longer).
    pub fn can_still_run(&self) -> bool {
        let pending = ["SigPnd:", "ShdPnd:"]
            .iter()
            .map(|f| u64::from_str_radix(self.field(f), 16).unwrap_or(0))
            .fold(0, |a, b| a | b);
        let state = self.field("State:");
        !state.starts_with('Z') && !state.starts_with('X') && pending & (1 << 8) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::ProcStatus;

    fn status(state: &str, sigpnd: &str) -> ProcStatus {
        ProcStatus(format!(
            "Name:\tpython3\nState:\t{state}\nUid:\t1001\t1001\t1001\t1001\nThreads:\t3\nSigPnd:\t{sigpnd}\nShdPnd:\t0000000000000000\n"
        ))
    }

    #[test]
    fn a_running_process_can_run_and_a_zombie_or_a_killed_one_cannot() {
        let running = status("R (running)", "0000000000000000");
        assert!(running.can_still_run());
        assert_eq!(running.number("Uid:"), Some(1001));
        assert_eq!(running.number("Threads:"), Some(3));
        assert_eq!(running.field("Name:"), "python3");
        assert_eq!(running.field("Missing:"), "");
        assert!(!status("Z (zombie)", "0000000000000000").can_still_run());
        assert!(!status("X (dead)", "0000000000000000").can_still_run());
        // SIGKILL (9) pending: bit 8.
        assert!(!status("S (sleeping)", "0000000000000100").can_still_run());
    }
}
