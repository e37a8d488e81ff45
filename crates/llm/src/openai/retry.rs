//! When to ask again, and how long to wait first.
//!
//! One count of failed attempts serves every transient failure alike: HTTP 429
//! and 5xx, a connection refused or reset once the server had answered, an
//! answer that broke off before its head or before any of the reply. A stream
//! that broke after part of the reply is asked again once more on top (its
//! text is lost, so a second break is an error, not a loop).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, RETRY_AFTER};

use super::OpenAiOptions;

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// Wait this long, then ask again.
    Wait(Duration),
    /// No retry is left (or the reply's deadline would pass): give up after
    /// this many attempts.
    GiveUp { attempts: u32 },
    /// The server asked for a wait longer than codeloop allows.
    TooLong { asked: Duration },
}

/// The retry budget of one call.
#[derive(Debug)]
pub(super) struct Retries {
    failed: u32,
    max: u32,
    base: Duration,
    max_wait: Duration,
    deadline: Duration,
    started: Instant,
    /// The one extra attempt after a stream broke mid-reply is spent.
    cut_retry_spent: bool,
}

impl Retries {
    pub(super) fn new(options: &OpenAiOptions, started: Instant) -> Retries {
        Retries {
            failed: 0,
            max: options.retries,
            base: options.backoff_base,
            max_wait: options.max_retry_wait,
            deadline: options.reply_deadline,
            started,
            cut_retry_spent: false,
        }
    }

    /// Attempts made so far that failed.
    pub(super) fn failed(&self) -> u32 {
        self.failed
    }

    /// After a transient failure; `asked` is the server's Retry-After.
    pub(super) fn after_failure(&mut self, asked: Option<Duration>) -> Next {
        self.failed += 1;
        if self.failed > self.max {
            return Next::GiveUp {
                attempts: self.failed,
            };
        }
        let wait = match asked {
            Some(asked) if asked > self.max_wait => return Next::TooLong { asked },
            // A little jitter on top, so clients told the same time do not
            // all come back at once.
            Some(asked) => asked + jitter(asked.min(Duration::from_secs(10)) / 10),
            None => backoff(self.base, self.failed - 1, self.max_wait),
        };
        if self.started.elapsed() + wait > self.deadline {
            return Next::GiveUp {
                attempts: self.failed,
            };
        }
        Next::Wait(wait)
    }

    /// After a stream that broke once part of the reply had come: one more
    /// attempt, right away, the first time; after that, give up.
    pub(super) fn after_cut_reply(&mut self) -> Next {
        self.failed += 1;
        if self.cut_retry_spent || self.started.elapsed() > self.deadline {
            return Next::GiveUp {
                attempts: self.failed,
            };
        }
        self.cut_retry_spent = true;
        Next::Wait(Duration::ZERO)
    }
}

/// How long the server asked us to wait: `retry-after-ms` (OpenAI), else
/// `Retry-After` in seconds or as an HTTP date.
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_at(headers, SystemTime::now())
}

fn retry_after_at(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(wait) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(|ms| super::numbers::seconds(ms / 1000.0))
    {
        return Some(wait);
    }
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return super::numbers::seconds(secs);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    // A date in the past means now.
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Seconds for a message, rounded up so a short limit never reads "0 s".
pub(super) fn whole_secs(d: Duration) -> u64 {
    d.as_secs_f64().ceil() as u64
}

/// Exponential backoff with jitter: half the delay fixed, half random.
fn backoff(base: Duration, retry: u32, max: Duration) -> Duration {
    let delay = base.saturating_mul(1u32 << retry.min(16)).min(max);
    delay / 2 + jitter(delay / 2)
}

/// A random duration in [0, max).
fn jitter(max: Duration) -> Duration {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    let fraction = (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64;
    max.mul_f64(fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_in_seconds_milliseconds_and_dates() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        let mut headers = HeaderMap::new();
        headers.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        // In the past: retry now.
        assert_eq!(retry_after(&headers), Some(Duration::ZERO));
        let now = UNIX_EPOCH + Duration::from_secs(1_445_412_480 - 90);
        assert_eq!(retry_after_at(&headers, now), Some(Duration::from_secs(90)));
        headers.insert(RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn backoff_doubles_within_bounds() {
        let base = Duration::from_millis(100);
        let max = Duration::from_secs(1);
        for retry in 0..20 {
            let d = backoff(base, retry, max);
            let full = base.saturating_mul(1 << retry.min(16)).min(max);
            assert!(d >= full / 2 && d <= full, "retry {retry}: {d:?}");
        }
    }

    #[test]
    fn a_cut_reply_is_asked_again_once_and_counts_as_an_attempt() {
        let mut options = OpenAiOptions::new("http://127.0.0.1:9/v1", "m");
        options.retries = 1;
        let mut r = Retries::new(&options, Instant::now());
        assert_eq!(r.after_cut_reply(), Next::Wait(Duration::ZERO));
        assert_eq!(r.after_cut_reply(), Next::GiveUp { attempts: 2 });
        let mut r = Retries::new(&options, Instant::now());
        assert!(matches!(r.after_failure(None), Next::Wait(_)));
        assert_eq!(r.after_failure(None), Next::GiveUp { attempts: 2 });
        assert_eq!(r.failed(), 2);
    }
}
