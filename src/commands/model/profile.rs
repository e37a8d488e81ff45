//! A model profile (`[models.NAME]`), chosen by `--profile NAME`, `[model]
//! profile`, or a `--model` / `[model] model` that names one, laid over the
//! config's `[model]` settings it gives.

use std::borrow::Cow;

use super::ModelArgs;
use crate::config::Config;

/// The config with the chosen profile laid over its `[model]`, and the
/// `--model` flag that still names the model (None when it named the
/// profile instead).
pub(super) fn profiled<'c>(
    config: &'c Config,
    args: &ModelArgs,
) -> anyhow::Result<(Cow<'c, Config>, Option<String>)> {
    let named = args
        .model
        .as_deref()
        .or(Some(config.model.model.as_str()).filter(|m| !m.is_empty()));
    Ok(
        match config
            .profile_model(args.profile.as_deref(), named)
            .map_err(anyhow::Error::msg)?
        {
            Some(model) => {
                // A --model that named the profile is not also the model's name.
                let by_name = args.profile.is_none()
                    && config.model.profile.is_none()
                    && args.model.as_deref() == model.profile.as_deref();
                let mut profiled = config.clone();
                profiled.model = model;
                let flag = if by_name { None } else { args.model.clone() };
                (Cow::Owned(profiled), flag)
            }
            None => (Cow::Borrowed(config), args.model.clone()),
        },
    )
}
