//! The repair policy: what the loop does after a failure, as one value.
//! Set from the config's `[loop]` table and the flags, recorded whole on
//! the tape at the session's (and each segment's) start (`ConfigSummary`),
//! and read back by resume and fork, so a continued session decides as the
//! original did. A tape older than the policy reads with today's defaults.

use serde::{Deserialize, Serialize};

/// The loop's knobs after a failure. Every field has a serde default: a
/// tape (or a config) that names only some of them keeps today's others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RepairPolicy {
    /// Start fresh from the spec after `fresh_after` failed versions;
    /// off: repair every time (another approach when a failure repeats).
    pub fresh_start: bool,
    /// Failed code versions since the last fresh start (the first try
    /// counted as one) that bring the next fresh start.
    pub fresh_after: u32,
    /// Calls of a fresh start at most: the first, and those asked again
    /// because the reply repeated a version already tried.
    pub fresh_asks: u32,
    /// The temperature of a fresh start when the model's settings name
    /// none: a new sample, not the likeliest answer the first try was.
    pub fresh_temperature: f32,
    /// How much hotter each fresh start asked again after a repeat is.
    pub repeat_heat: f32,
    /// The temperature of a repair asking for a different approach.
    pub different_approach_temperature: f32,
    /// Repairs of the assembled program's failure at most.
    pub program_repairs: u32,
    /// Show the runtime values at a failure in the repair prompt.
    pub runtime_values: bool,
    /// Review each code version the model writes before it runs.
    pub review: bool,
    /// A review's serious finding sends the code to a repair without a run.
    pub review_repairs: bool,
    /// The first code call is shown the node's tests when the model wrote
    /// them; off: it sees the task and the function only (the tests still
    /// judge it), so a wrong test the model wrote cannot lead its first
    /// code astray. Tests the person or the task gave are shown either way.
    /// Off by default (on the coder model its first try passed 13 of
    /// HumanEval's first 15 so, 10 with the tests shown: BENCHMARKS.md);
    /// a tape that names no such field ran with it on, and reads so.
    #[serde(default = "older_tapes_showed_them")]
    pub first_code_sees_model_tests: bool,
    /// Code-or-test blame: a test of the model's is set aside as suspect
    /// when this many versions in a row failed it alone, the same way (the
    /// same error and value), every other test passing; the version is
    /// judged again without it. Never the task's examples, a given test or
    /// the person's. 0: never. A tape that names no such field ran without
    /// it, and reads so.
    #[serde(default = "older_tapes_blamed_no_test")]
    pub suspect_test_after: u32,
}

impl Default for RepairPolicy {
    fn default() -> Self {
        RepairPolicy {
            fresh_start: true,
            fresh_after: 3,
            fresh_asks: 3,
            fresh_temperature: 0.8,
            repeat_heat: 0.2,
            different_approach_temperature: 0.8,
            program_repairs: 2,
            runtime_values: true,
            review: false,
            review_repairs: false,
            first_code_sees_model_tests: false,
            suspect_test_after: 2,
        }
    }
}

/// What a recorded policy that names no `first_code_sees_model_tests` ran
/// with: the first code was shown the model's tests until the field came.
fn older_tapes_showed_them() -> bool {
    true
}

/// What a recorded policy that names no `suspect_test_after` ran with:
/// no test was ever set aside until the field came.
fn older_tapes_blamed_no_test() -> u32 {
    0
}

impl RepairPolicy {
    /// The policy of a tape that recorded none: today's defaults, but for
    /// what such a session did that today's default no longer does (its
    /// first code was shown the model's tests), so a resumed or forked
    /// session decides as the original did.
    pub fn of_older_tapes() -> Self {
        RepairPolicy {
            first_code_sees_model_tests: older_tapes_showed_them(),
            suspect_test_after: older_tapes_blamed_no_test(),
            ..RepairPolicy::default()
        }
    }

    /// The policy in a line, as `run` and History show it.
    pub fn summary(&self) -> String {
        let fresh = if self.fresh_start {
            format!("fresh start after {} failed versions", self.fresh_after)
        } else {
            "no fresh starts".to_string()
        };
        let review = match (self.review, self.review_repairs) {
            (false, _) => "no review",
            (true, false) => "review",
            (true, true) => "review (repairs)",
        };
        let first = if self.first_code_sees_model_tests {
            ", first code shown the model's tests"
        } else {
            ""
        };
        let blame = match self.suspect_test_after {
            0 => String::new(),
            n => format!(", a model test set aside when {n} versions written apart fail it alike"),
        };
        format!(
            "{fresh}, {} program repairs, runtime values {}, {review}{first}{blame}",
            self.program_repairs,
            if self.runtime_values { "on" } else { "off" },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_naming_some_fields_keeps_the_defaults_of_the_others() {
        let p: RepairPolicy = serde_json::from_str(
            r#"{"fresh_after": 5, "first_code_sees_model_tests": false, "suspect_test_after": 2}"#,
        )
        .unwrap();
        assert_eq!(p.fresh_after, 5);
        assert_eq!(
            p,
            RepairPolicy {
                fresh_after: 5,
                ..RepairPolicy::default()
            }
        );
    }

    #[test]
    fn a_recorded_policy_from_before_the_first_code_field_showed_the_model_its_tests() {
        let p: RepairPolicy = serde_json::from_str(r#"{"fresh_after": 3}"#).unwrap();
        assert!(p.first_code_sees_model_tests);
        assert!(RepairPolicy::of_older_tapes().first_code_sees_model_tests);
        assert!(!RepairPolicy::default().first_code_sees_model_tests);
        assert_eq!(
            p.suspect_test_after, 0,
            "no test was set aside before the field"
        );
        assert_eq!(RepairPolicy::default().suspect_test_after, 2);
        assert_eq!(
            RepairPolicy::of_older_tapes(),
            RepairPolicy {
                first_code_sees_model_tests: true,
                suspect_test_after: 0,
                ..RepairPolicy::default()
            }
        );
    }
}
