//! `--review` and `--review-repairs` (on `run`, `bench` and the workbench):
//! the review before running, asked for on the command line. A flag wins
//! over the config and every profile, as flags do.

use crate::config::Config;

#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct ReviewArgs {
    /// Review each code version with one model call before it runs (its verdict is shown; advisory) [default: the profile's or [run]'s review]
    #[arg(long)]
    pub review: bool,
    /// Send code whose review finds something serious to a repair without a run (implies --review) [default: the profile's or [run]'s review_repairs]
    #[arg(long)]
    pub review_repairs: bool,
}

impl ReviewArgs {
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
        config
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
        assert_eq!(config.review(None, Some("quick")), (false, false));
        assert_eq!(config.review(None, None), (false, false));
        let flagged = ReviewArgs {
            review: false,
            review_repairs: true,
        }
        .apply(config);
        assert_eq!(flagged.review(Some("quick"), None), (true, true));
        assert_eq!(flagged.review(None, None), (true, true));
    }
}
