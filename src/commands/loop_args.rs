//! What the loop does beside writing, running and repairing, asked for on
//! the command line (`run`, `bench` and the workbench): `--review` and
//! `--review-repairs` (the review before running), `--candidates N`
//! (functional consensus), `--tests data|code` and `--prefill` (how a
//! small model is asked). A flag wins over the config and every profile,
//! as flags do.

use crate::config::{Config, TestsFormat};

#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct LoopArgs {
    /// Review each code version with one model call before it runs (its verdict is shown; advisory) [default: the profile's or [run]'s review]
    #[arg(long)]
    pub(crate) review: bool,
    /// Send code whose review finds something serious to a repair without a run (implies --review) [default: the profile's or [run]'s review_repairs]
    #[arg(long)]
    pub(crate) review_repairs: bool,
    /// Write each function's first code N times and keep the candidate whose outputs on its tests' inputs agree with the most others (1 = off) [default: the profile's or [run]'s candidates, 1]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=crate::config::MAX_CANDIDATES as i64))]
    pub(crate) candidates: Option<u32>,
    /// How each function's tests are asked for: code (a test file the model writes, begun for it where the server can go on from a start) or data (cases it gives under a JSON schema, made into a test file); each falls back to the other [default: the profile's or [run]'s tests, code]
    #[arg(long, value_name = "FORMAT", value_parser = parse_tests)]
    pub(crate) tests: Option<TestsFormat>,
    /// Start each code reply at the function's `def` line, and each tests reply at a test function calling it, where the server can go on from a start (llama.cpp, vLLM); off by default: on SmolLM2-135M it did not help [default: the profile's or [run]'s prefill, off]
    #[arg(long, conflicts_with = "no_prefill")]
    pub(crate) prefill: bool,
    /// Never start a reply for the model, whatever the config or a profile says
    #[arg(long)]
    pub(crate) no_prefill: bool,
}

fn parse_tests(text: &str) -> Result<TestsFormat, String> {
    match text {
        "data" => Ok(TestsFormat::Data),
        "code" => Ok(TestsFormat::Code),
        other => Err(format!("\"{other}\" is not code or data")),
    }
}

/// What a session's engine is asked to do beside the loop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Extras {
    pub(crate) review: bool,
    pub(crate) review_repairs: bool,
    pub(crate) candidates: u32,
    pub(crate) tests: TestsFormat,
    pub(crate) prefill: bool,
    pub(crate) first_temperature: Option<f32>,
}

impl LoopArgs {
    /// `config` with the flags applied: `[run]` and every profile say so.
    pub fn apply(self, mut config: Config) -> Config {
        if self.review || self.review_repairs {
            config.run.review = true;
            for p in config.models.values_mut() {
                p.review = Some(true);
            }
        }
        if self.review_repairs {
            config.run.review_repairs = true;
            for p in config.models.values_mut() {
                p.review_repairs = Some(true);
            }
        }
        if let Some(n) = self.candidates {
            config.run.candidates = n;
            for p in config.models.values_mut() {
                p.candidates = Some(n);
            }
        }
        if let Some(tests) = self.tests {
            config.run.tests = tests;
            for p in config.models.values_mut() {
                p.tests = Some(tests);
            }
        }
        if self.prefill {
            config.run.prefill = true;
            for p in config.models.values_mut() {
                p.prefill = Some(true);
            }
        }
        if self.no_prefill {
            config.run.prefill = false;
            for p in config.models.values_mut() {
                p.prefill = Some(false);
            }
        }
        config
    }

    /// The extras for a session on the profile `profile` (or the model
    /// named `model`, when a profile is named so), flags applied.
    pub(crate) fn extras(
        self,
        config: &Config,
        profile: Option<&str>,
        model: Option<&str>,
    ) -> Extras {
        extras_of(&self.apply(config.clone()), profile, model)
    }
}

/// The extras the config (already with any flags applied) gives a session.
pub(crate) fn extras_of(config: &Config, profile: Option<&str>, model: Option<&str>) -> Extras {
    let (review, review_repairs) = config.review(profile, model);
    let (tests, prefill) = config.small_model(profile, model);
    Extras {
        review,
        review_repairs,
        candidates: config.candidates(profile, model),
        tests,
        prefill,
        first_temperature: config.first_temperature(profile, model),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ModelProfile;

    #[test]
    fn a_profile_says_unless_a_flag_says_otherwise() {
        let mut config = Config::default();
        config.models.insert(
            "careful".into(),
            ModelProfile {
                review: Some(true),
                candidates: Some(3),
                ..ModelProfile::default()
            },
        );
        config.models.insert(
            "quick".into(),
            ModelProfile {
                review: Some(false),
                ..ModelProfile::default()
            },
        );
        assert_eq!(config.review(Some("careful"), None), (true, false));
        assert_eq!(config.candidates(Some("careful"), None), 3);
        assert_eq!(config.review(None, Some("quick")), (false, false));
        assert_eq!(config.candidates(None, Some("quick")), 1);
        assert_eq!(config.review(None, None), (false, false));
        let flags = LoopArgs {
            review: false,
            review_repairs: true,
            candidates: Some(2),
            tests: Some(TestsFormat::Code),
            prefill: false,
            no_prefill: true,
        };
        assert_eq!(
            flags.extras(&config, Some("quick"), None),
            Extras {
                review: true,
                review_repairs: true,
                candidates: 2,
                tests: TestsFormat::Code,
                prefill: false,
                first_temperature: Some(0.0),
            }
        );
        assert_eq!(flags.extras(&config, None, None).candidates, 2);
        // A temperature named anywhere holds for every call.
        if let Some(quick) = config.models.get_mut("quick") {
            quick.temperature = Some(0.7);
        }
        assert_eq!(
            flags.extras(&config, Some("quick"), None).first_temperature,
            None
        );
        config.model.temperature = Some(0.3);
        assert_eq!(flags.extras(&config, None, None).first_temperature, None);
    }
}
