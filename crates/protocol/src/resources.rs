//! What one run used: its CPU time and its peak memory, and the one way to
//! print them (the Output pane, History, `run`, `bench`, the exports).

use serde::{Deserialize, Serialize};

/// CPU time (user + system) and peak resident memory of one run's program,
/// with the processes it waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Resources {
    /// User + system CPU time, in milliseconds.
    pub cpu_ms: u64,
    /// Peak resident set size (the high-water mark), in bytes.
    pub peak_rss_bytes: u64,
}

impl Resources {
    /// `CPU 0.42 s · peak 38 MiB`.
    pub fn short(&self) -> String {
        format!(
            "CPU {} · peak {}",
            cpu_time(self.cpu_ms),
            memory(self.peak_rss_bytes)
        )
    }

    /// The sum of several runs' CPU time and the largest of their peaks.
    pub fn total<'a>(runs: impl IntoIterator<Item = &'a Resources>) -> Option<Resources> {
        runs.into_iter().fold(None, |acc: Option<Resources>, r| {
            Some(match acc {
                None => *r,
                Some(a) => Resources {
                    cpu_ms: a.cpu_ms + r.cpu_ms,
                    peak_rss_bytes: a.peak_rss_bytes.max(r.peak_rss_bytes),
                },
            })
        })
    }
}

/// A CPU time in words: `12 ms`, `0.42 s`, `12.3 s`, `95 s`.
pub fn cpu_time(ms: u64) -> String {
    if ms < 100 {
        format!("{ms} ms")
    } else if ms < 10_000 {
        format!("{:.2} s", ms as f64 / 1000.0)
    } else if ms < 100_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{} s", ms / 1000)
    }
}

/// A memory size in words: `900 KiB`, `8.2 MiB`, `38 MiB`, `1.50 GiB`.
pub fn memory(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if b < KIB * KIB {
        format!("{} KiB", (b / KIB).round() as u64)
    } else if b < 10.0 * KIB * KIB {
        format!("{:.1} MiB", b / (KIB * KIB))
    } else if b < KIB * KIB * KIB {
        format!("{} MiB", (b / (KIB * KIB)).round() as u64)
    } else {
        format!("{:.2} GiB", b / (KIB * KIB * KIB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_in_plain_words() {
        let r = Resources {
            cpu_ms: 420,
            peak_rss_bytes: 38 << 20,
        };
        assert_eq!(r.short(), "CPU 0.42 s · peak 38 MiB");
        assert_eq!(memory(8 << 20), "8.0 MiB");
        assert_eq!(cpu_time(7), "7 ms");
        assert_eq!(cpu_time(123_456), "123 s");
        assert_eq!(memory(900 << 10), "900 KiB");
        assert_eq!(memory(498 << 20), "498 MiB");
        assert_eq!(memory(3 << 29), "1.50 GiB");
        let t = Resources::total(&[
            r,
            Resources {
                cpu_ms: 80,
                peak_rss_bytes: 100 << 20,
            },
        ]);
        assert_eq!(
            t,
            Some(Resources {
                cpu_ms: 500,
                peak_rss_bytes: 100 << 20
            })
        );
        assert_eq!(Resources::total(&[]), None);
    }
}
