//! Every number a server states, held to what a real server could mean:
//! a context window or a token count of more than `MAX_TOKENS` is a lie
//! and taken as not said; requests at once are at least one and at most
//! `MAX_SLOTS`; a wait it asks for is a `Duration` however long it says
//! (never a panic). What a lying server says can then cost nothing more
//! than a refused call.

use std::time::Duration;

use serde_json::Value;

/// The largest context window or token count believed (2^30 tokens).
pub(super) const MAX_TOKENS: u64 = 1 << 30;
/// The most requests at once believed of a server (more are this many).
pub(super) const MAX_SLOTS: u64 = 256;

/// A token count or window as stated: None when absent, not a whole
/// number, or past `MAX_TOKENS`.
pub(super) fn tokens(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_u64).and_then(plausible)
}

/// A token count parsed from text, held to the same bound.
pub(super) fn plausible(n: u64) -> Option<u64> {
    (n <= MAX_TOKENS).then_some(n)
}

/// Requests at once as stated, between 1 and `MAX_SLOTS`.
pub(super) fn slots(v: Option<&Value>) -> Option<usize> {
    let n = v.and_then(Value::as_u64)?;
    Some(n.clamp(1, MAX_SLOTS) as usize)
}

/// A wait of `secs` seconds as stated: None when not a number of seconds
/// at all; the longest `Duration` when longer than one can hold.
pub(super) fn seconds(secs: f64) -> Option<Duration> {
    if !(secs.is_finite() && secs >= 0.0) {
        return None;
    }
    Some(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_past_any_real_server_are_not_believed() {
        assert_eq!(tokens(Some(&json!(8192))), Some(8192));
        assert_eq!(tokens(Some(&json!(u64::MAX))), None);
        assert_eq!(tokens(Some(&json!(-1))), None);
        assert_eq!(tokens(Some(&json!("8192"))), None);
        assert_eq!(slots(Some(&json!(u64::MAX))), Some(256));
        assert_eq!(slots(Some(&json!(0))), Some(1));
        assert_eq!(slots(Some(&json!(4))), Some(4));
        assert_eq!(seconds(1e300), Some(Duration::MAX));
        assert_eq!(seconds(2.5), Some(Duration::from_millis(2500)));
        assert_eq!(seconds(f64::NAN), None);
        assert_eq!(seconds(-1.0), None);
    }
}
