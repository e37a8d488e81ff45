//! Model profiles (`[models.NAME]`): the `[model]` settings with one
//! applied, and what a profile says of review and candidates.

use super::*;

impl Config {
    /// The `[model]` settings with a profile applied: `explicit` (from
    /// `--profile`) if given, else `[model] profile`, else the profile named
    /// like `model_name` (`--model` or `[model] model`) if there is one.
    /// None when no profile is chosen; an error names a profile that is not
    /// there, with the ones that are.
    pub(crate) fn profile_model(
        &self,
        explicit: Option<&str>,
        model_name: Option<&str>,
    ) -> Result<Option<ModelConfig>, String> {
        let chosen = explicit.or(self.model.profile.as_deref());
        let name = match chosen {
            Some(name) => name,
            None => match model_name.filter(|n| self.models.contains_key(*n)) {
                Some(name) => name,
                None => return Ok(None),
            },
        };
        let Some(profile) = self.models.get(name) else {
            let known: Vec<&str> = self.models.keys().map(String::as_str).collect();
            return Err(if known.is_empty() {
                format!(
                    "there is no model profile \"{name}\": the config has no [models.NAME] sections (`codeloop config` shows the config file's place)"
                )
            } else {
                format!(
                    "there is no model profile \"{name}\"; the config's profiles are: {}",
                    known.join(", ")
                )
            });
        };
        let mut model = self.model.clone();
        model.profile = Some(name.to_string());
        model.provider = profile.provider.clone().unwrap_or_else(|| "auto".into());
        if profile.base_url.is_some() {
            model.base_url = profile.base_url.clone();
        }
        model.model = profile.model.clone().unwrap_or_else(|| name.to_string());
        if let Some(v) = &profile.api_key_env {
            model.api_key_env = v.clone();
        }
        model.context = profile.context.or(model.context);
        model.max_tokens = profile.max_tokens.or(model.max_tokens);
        model.temperature = profile.temperature.or(model.temperature);
        model.parallel = profile.parallel.or(model.parallel);
        Ok(Some(model))
    }

    /// Whether code is reviewed before it runs, and whether a serious
    /// finding sends it to a repair unrun: the chosen profile's `review` and
    /// `review_repairs` (chosen as in `profile_model`), else `[run]`'s.
    pub(crate) fn review(&self, explicit: Option<&str>, model_name: Option<&str>) -> (bool, bool) {
        let profile = self.chosen_profile(explicit, model_name);
        (
            profile.and_then(|p| p.review).unwrap_or(self.run.review),
            profile
                .and_then(|p| p.review_repairs)
                .unwrap_or(self.run.review_repairs),
        )
    }

    /// The candidates of a function's first code: the chosen profile's
    /// `candidates`, else `[run]`'s (1 to `MAX_CANDIDATES`: each is a model
    /// call, and the flag takes no more).
    pub(crate) fn candidates(&self, explicit: Option<&str>, model_name: Option<&str>) -> u32 {
        self.chosen_profile(explicit, model_name)
            .and_then(|p| p.candidates)
            .unwrap_or(self.run.candidates)
            .clamp(1, MAX_CANDIDATES)
    }

    /// How a function's tests are asked for, and whether a code call's
    /// answer starts with the function's head: the chosen profile's
    /// `tests` and `prefill`, else `[run]`'s.
    pub(crate) fn small_model(
        &self,
        explicit: Option<&str>,
        model_name: Option<&str>,
    ) -> (TestsFormat, bool) {
        let profile = self.chosen_profile(explicit, model_name);
        (
            profile.and_then(|p| p.tests).unwrap_or(self.run.tests),
            profile.and_then(|p| p.prefill).unwrap_or(self.run.prefill),
        )
    }

    /// The temperature of a function's first code and tests: 0 (the
    /// model's likeliest answer) unless the chosen profile or `[model]`
    /// names a temperature, which then holds for every call.
    pub(crate) fn first_temperature(
        &self,
        explicit: Option<&str>,
        model_name: Option<&str>,
    ) -> Option<f32> {
        let profile = self.chosen_profile(explicit, model_name);
        let named = profile
            .and_then(|p| p.temperature)
            .or(self.model.temperature);
        named.is_none().then_some(0.0)
    }

    /// The profile chosen as `profile_model` chooses it, if there is one.
    fn chosen_profile(
        &self,
        explicit: Option<&str>,
        model_name: Option<&str>,
    ) -> Option<&ModelProfile> {
        let chosen = explicit
            .or(self.model.profile.as_deref())
            .or(model_name.filter(|n| self.models.contains_key(*n)));
        chosen.and_then(|name| self.models.get(name))
    }
}
