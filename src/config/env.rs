//! The environment's part of the config: every CODELOOP_* variable (and
//! OpenAI's own), read over the file's values, each checked like its flag.

use super::*;

impl Config {
    /// Apply CODELOOP_* variables (and OPENAI_BASE_URL / OPENAI_MODEL, as other tools do).
    pub(crate) fn apply_env(
        &mut self,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<(), ConfigError> {
        if let Some(v) = get("OPENAI_BASE_URL") {
            self.model.base_url = Some(v);
        }
        if let Some(v) = get("OPENAI_MODEL") {
            self.model.model = v;
        }
        if let Some(v) = get("CODELOOP_BASE_URL") {
            self.model.base_url = Some(v);
        }
        if let Some(v) = get("CODELOOP_MODEL") {
            self.model.model = v;
        }
        if let Some(v) = get("CODELOOP_PROVIDER") {
            self.model.provider = v;
        }
        if let Some(v) = get("CODELOOP_PROFILE") {
            self.model.profile = Some(v);
        }
        if let Some(v) = get("CODELOOP_MAX_TOKENS") {
            self.model.max_tokens = Some(parse_env("CODELOOP_MAX_TOKENS", &v)?);
        }
        if let Some(v) = get("CODELOOP_THEME") {
            self.ui.theme = v;
        }
        if let Some(v) = get("CODELOOP_GRAPHICS") {
            if let Err(message) = v.parse::<crate::tui::graphics::Setting>() {
                return Err(ConfigError::Env {
                    name: "CODELOOP_GRAPHICS".into(),
                    value: v,
                    message,
                });
            }
            self.ui.graphics = v.trim().to_string();
        }
        if let Some(v) = get("CODELOOP_DATA_DIR") {
            self.paths.data_dir = PathBuf::from(v);
        }
        if let Some(v) = get("CODELOOP_CACHE_DIR") {
            self.paths.cache_dir = PathBuf::from(v);
        }
        if let Some(v) = get("CODELOOP_MAX_ITERATIONS") {
            self.run.max_iterations = parse_env_at_least("CODELOOP_MAX_ITERATIONS", &v, 1)?;
        }
        if let Some(v) = get("CODELOOP_WORKERS") {
            self.run.workers = parse_env_at_least("CODELOOP_WORKERS", &v, 1)?;
        }
        if let Some(v) = get("CODELOOP_TIMEOUT") {
            self.run.timeout_secs = parse_env_at_least("CODELOOP_TIMEOUT", &v, 1)?;
            if self.run.timeout_secs > MAX_TIMEOUT_SECS {
                return Err(ConfigError::Env {
                    name: "CODELOOP_TIMEOUT".into(),
                    value: v,
                    message: "a run's wall-clock limit must be 1 to 86400 seconds".into(),
                });
            }
        }
        if let Some(v) = get("CODELOOP_SANDBOX") {
            self.run.sandbox = v;
        }
        Ok(())
    }
}

fn parse_env_at_least<T>(name: &str, value: &str, least: T) -> Result<T, ConfigError>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display,
    T::Err: std::fmt::Display,
{
    let v: T = parse_env(name, value)?;
    if v < least {
        return Err(ConfigError::Env {
            name: name.into(),
            value: value.into(),
            message: format!("it must be at least {least}"),
        });
    }
    Ok(v)
}

/// An environment variable `apply_env` reads, and what it sets.
pub(crate) struct EnvVar {
    pub(crate) name: &'static str,
    pub(crate) sets: &'static str,
}

/// Every variable `apply_env` reads (a test holds the two together).
pub(crate) const ENVIRONMENT: &[EnvVar] = &[
    EnvVar {
        name: "CODELOOP_BASE_URL",
        sets: "[model] base_url (wins over OPENAI_BASE_URL)",
    },
    EnvVar {
        name: "OPENAI_BASE_URL",
        sets: "[model] base_url",
    },
    EnvVar {
        name: "CODELOOP_MODEL",
        sets: "[model] model (wins over OPENAI_MODEL)",
    },
    EnvVar {
        name: "OPENAI_MODEL",
        sets: "[model] model",
    },
    EnvVar {
        name: "CODELOOP_PROVIDER",
        sets: "[model] provider",
    },
    EnvVar {
        name: "CODELOOP_PROFILE",
        sets: "[model] profile",
    },
    EnvVar {
        name: "CODELOOP_MAX_TOKENS",
        sets: "[model] max_tokens",
    },
    EnvVar {
        name: "CODELOOP_MAX_ITERATIONS",
        sets: "[run] max_iterations",
    },
    EnvVar {
        name: "CODELOOP_WORKERS",
        sets: "[run] workers",
    },
    EnvVar {
        name: "CODELOOP_TIMEOUT",
        sets: "[run] timeout_secs",
    },
    EnvVar {
        name: "CODELOOP_SANDBOX",
        sets: "[run] sandbox",
    },
    EnvVar {
        name: "CODELOOP_THEME",
        sets: "[ui] theme",
    },
    EnvVar {
        name: "CODELOOP_GRAPHICS",
        sets: "[ui] graphics",
    },
    EnvVar {
        name: "CODELOOP_DATA_DIR",
        sets: "[paths] data_dir",
    },
    EnvVar {
        name: "CODELOOP_CACHE_DIR",
        sets: "[paths] cache_dir",
    },
];

/// The variables read elsewhere than `apply_env`: what `codeloop config`
/// lists after those (each is read where it is used).
pub(crate) const OTHER_ENVIRONMENT: &[EnvVar] = &[
    EnvVar {
        name: "CODELOOP_CONFIG",
        sets: "the config file's place",
    },
    EnvVar {
        name: "CODELOOP_PYTHON",
        sets: "the interpreter, under --python and [run] interpreter",
    },
    EnvVar {
        name: "CODELOOP_SANDBOX_WITHOUT",
        sets: "sandbox layers left out, comma-separated (as --without)",
    },
    EnvVar {
        name: "CODELOOP_SANDBOX_HELPER",
        sets: "another sandbox helper binary",
    },
    EnvVar {
        name: "OPENAI_API_KEY",
        sets: "the API key (or the variable api_key_env names)",
    },
];

fn parse_env<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, ConfigError>
where
    T::Err: std::fmt::Display,
{
    value.trim().parse().map_err(|e: T::Err| ConfigError::Env {
        name: name.into(),
        value: value.into(),
        message: e.to_string(),
    })
}
