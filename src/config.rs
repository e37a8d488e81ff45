//! One `Config` from the config file (TOML), the environment and flags, in
//! that order of precedence (flags win). Paths come from `directories`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Environment variable that names another config file.
pub(crate) const CONFIG_ENV: &str = "CODELOOP_CONFIG";

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub model: ModelConfig,
    /// Model profiles, `[models.NAME]`: one is chosen with `--profile NAME`,
    /// `profile = "NAME"` in `[model]`, or a model name (`--model NAME`,
    /// `model = "NAME"`) that is a profile's name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) models: BTreeMap<String, ModelProfile>,
    pub run: RunConfig,
    /// `[imports]`: the import policy of generated code.
    pub imports: ImportsConfig,
    pub ui: UiConfig,
    /// Where sessions, the cache and logs live. Not read from the file's
    /// `[paths]` unless set there; defaults come from `directories`.
    pub paths: Paths,
    /// What every sandbox of this process is probed with: never in the
    /// file; `main` sets it from the environment
    /// (`SandboxOptions::from_env`), then `--sandbox` or `[run] sandbox`,
    /// the interpreter chosen and `[imports]`.
    #[serde(skip)]
    pub sandbox: crate::exec::SandboxOptions,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// "auto" (an OpenAI-compatible server if one is configured or Ollama
    /// answers on localhost, else the bundled demo model), "openai", "demo".
    pub provider: String,
    /// Base URL of an OpenAI-compatible server, e.g. http://localhost:11434/v1.
    pub(crate) base_url: Option<String>,
    pub(crate) model: String,
    /// Name of the environment variable holding the API key (the key itself
    /// never goes in the config file or on the tape).
    pub(crate) api_key_env: String,
    /// Seconds to wait for a reply before giving up.
    pub(crate) request_timeout_secs: u64,
    /// Retries on 429 and 5xx.
    pub(crate) retries: u32,
    pub(crate) temperature: Option<f32>,
    /// The longest reply, in tokens (none: the server's default).
    pub(crate) max_tokens: Option<u32>,
    /// The model's context window in tokens, when the server does not tell
    /// it (or tells it wrong); none: asked of the server.
    pub(crate) context: Option<u64>,
    /// The most model calls in flight at once, whatever the workers; none:
    /// what the server tells (llama.cpp's slots; one for llama-cpp-python
    /// and an unknown server on this machine; no limit for hosted APIs).
    pub(crate) parallel: Option<usize>,
    /// The `[models.NAME]` profile to use.
    pub(crate) profile: Option<String>,
}

/// A named model setup, `[models.NAME]`: each setting given here replaces
/// the one in `[model]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct ModelProfile {
    /// "openai", "ollama", "auto" (default: "auto", which uses `base_url`).
    pub(crate) provider: Option<String>,
    pub(crate) base_url: Option<String>,
    /// The model's name on that server (default: the profile's name).
    pub(crate) model: Option<String>,
    /// The environment variable holding the API key.
    pub(crate) api_key_env: Option<String>,
    pub(crate) context: Option<u64>,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) temperature: Option<f32>,
    pub(crate) parallel: Option<usize>,
    /// The Python generated code runs with under this profile (a venv's
    /// `bin/python`); none: `[run] interpreter`.
    pub(crate) interpreter: Option<PathBuf>,
    /// Review each code version before it runs (`[run] review` otherwise).
    pub(crate) review: Option<bool>,
    /// A review's serious finding sends the code to a repair unrun
    /// (`[run] review_repairs` otherwise).
    pub(crate) review_repairs: Option<bool>,
    /// Candidates of a function's first code, voted on (`[run] candidates` otherwise).
    pub(crate) candidates: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunConfig {
    pub(crate) max_iterations: u32,
    pub(crate) workers: usize,
    /// Wall-clock limit of one program run, seconds.
    pub(crate) timeout_secs: u64,
    /// Memory limit of one program run, MiB.
    pub(crate) memory_mb: u64,
    /// Token budget of a session (0 = none).
    pub(crate) token_budget: u64,
    pub(crate) step_mode: bool,
    /// Review each code version with one model call before it runs (a
    /// profile's `review` wins; also --review).
    pub(crate) review: bool,
    /// A review's serious finding sends the code to a repair without a run
    /// (a profile's `review_repairs` wins; also --review-repairs).
    pub(crate) review_repairs: bool,
    /// Candidates of each function's first code, the one agreeing with the
    /// most others on its tests' inputs kept; 1 = off (a profile's
    /// `candidates` wins; also --candidates).
    pub(crate) candidates: u32,
    /// Sandbox mode: "full" (refuse to run generated code where a layer is
    /// missing) or "reduced" (run it anyway, with a warning on every run).
    /// Also --sandbox and CODELOOP_SANDBOX.
    pub sandbox: String,
    /// The Python generated code runs with: a venv's `bin/python` (its
    /// packages become importable, read-only); none: $CODELOOP_PYTHON,
    /// else the python3 on PATH. Also --python.
    pub(crate) interpreter: Option<PathBuf>,
}

/// `[imports]`: which modules generated code may import. The static check
/// names a blocked import (a note, or where enforced a failure sent to
/// repair); where enforced the sandbox also refuses it at import time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ImportsConfig {
    /// Modules allowed though a package above them is blocked, or taken
    /// off the block list (e.g. ["shutil"]).
    pub(crate) allow: Vec<String>,
    /// Modules (and their submodules) blocked.
    pub(crate) block: Vec<String>,
    /// Refuse blocked imports (check and sandbox); false: only note them.
    pub(crate) enforce: bool,
}

impl Default for ImportsConfig {
    fn default() -> Self {
        let p = crate::exec::ImportPolicy::default();
        ImportsConfig {
            allow: p.allow,
            block: p.block,
            enforce: p.enforce,
        }
    }
}

impl ImportsConfig {
    /// The policy the sandbox holds runs to.
    pub fn policy(&self) -> crate::exec::ImportPolicy {
        crate::exec::ImportPolicy {
            allow: self.allow.clone(),
            block: self.block.clone(),
            enforce: self.enforce,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UiConfig {
    /// A theme name from themes/ (or the config dir's themes/).
    pub(crate) theme: String,
    /// Ring the terminal (BEL, and a desktop notification where supported)
    /// when the engine pauses for approval or a session ends.
    pub(crate) notify: bool,
    /// How pictures are drawn: "auto" (detected), "kitty", "sixel",
    /// "iterm2" or "halfblocks".
    pub graphics: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Paths {
    /// Sessions live here, one folder each.
    pub data_dir: PathBuf,
    /// config.toml, prompt overrides (prompts/), user themes (themes/).
    pub config_dir: PathBuf,
    pub cache_dir: PathBuf,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            provider: "auto".into(),
            base_url: None,
            model: String::new(),
            api_key_env: "OPENAI_API_KEY".into(),
            request_timeout_secs: 120,
            retries: 3,
            temperature: None,
            max_tokens: None,
            context: None,
            parallel: None,
            profile: None,
        }
    }
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            max_iterations: 4,
            workers: 2,
            timeout_secs: 10,
            memory_mb: 1024,
            token_budget: 0,
            step_mode: false,
            review: false,
            review_repairs: false,
            candidates: 1,
            sandbox: "full".into(),
            interpreter: None,
        }
    }
}

impl Default for UiConfig {
    fn default() -> Self {
        UiConfig {
            theme: "dark".into(),
            notify: true,
            graphics: "auto".into(),
        }
    }
}

impl Default for Paths {
    fn default() -> Self {
        match directories::ProjectDirs::from("dev", "codeloop", "codeloop") {
            Some(dirs) => Paths {
                data_dir: dirs.data_dir().to_path_buf(),
                config_dir: dirs.config_dir().to_path_buf(),
                cache_dir: dirs.cache_dir().to_path_buf(),
            },
            // No home directory: keep everything beside the working directory.
            None => Paths {
                data_dir: PathBuf::from(".codeloop/data"),
                config_dir: PathBuf::from(".codeloop/config"),
                cache_dir: PathBuf::from(".codeloop/cache"),
            },
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the config file {path} is not valid, at line {line}, column {column}: {message}\nFix that line; or start without the file (`codeloop --config /dev/null ...`, or CODELOOP_CONFIG=/dev/null), where `codeloop --config /dev/null config` prints a valid one with every setting."
    )]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error(
        "the config file {path} is not valid: {key} = {value}: {message}\nFix that setting; or start without the file (`codeloop --config /dev/null ...`, or CODELOOP_CONFIG=/dev/null)."
    )]
    Value {
        path: PathBuf,
        key: &'static str,
        value: String,
        message: &'static str,
    },
    #[error("{name}={value} is not valid: {message}")]
    Env {
        name: String,
        value: String,
        message: String,
    },
}

impl Config {
    /// The config file's path: $CODELOOP_CONFIG, else config.toml in the config dir.
    pub(crate) fn default_file() -> PathBuf {
        match std::env::var_os(CONFIG_ENV) {
            Some(p) => PathBuf::from(p),
            None => Paths::default().config_dir.join("config.toml"),
        }
    }

    /// Load the file (a missing file is the defaults), then the environment.
    pub fn load(file: Option<&Path>) -> Result<Config, ConfigError> {
        let path = file
            .map(Path::to_path_buf)
            .unwrap_or_else(Config::default_file);
        let mut config = match std::fs::read_to_string(&path) {
            Ok(text) => {
                let config: Config = toml::from_str(&text).map_err(|e| {
                    let (line, column) = line_and_column(&text, e.span().map_or(0, |s| s.start));
                    ConfigError::Parse {
                        path: path.clone(),
                        line,
                        column,
                        message: e.message().to_string(),
                    }
                })?;
                if let Some((key, value, message)) = config.invalid_value() {
                    return Err(ConfigError::Value {
                        path,
                        key,
                        value,
                        message,
                    });
                }
                config
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && file.is_none() => {
                Config::default()
            }
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        config.apply_env(|name| std::env::var(name).ok())?;
        Ok(config)
    }

    /// The first setting whose value no run could use, as the flag for it
    /// would refuse it: (its key, its value, what it must be).
    pub(crate) fn invalid_value(&self) -> Option<(&'static str, String, &'static str)> {
        let r = &self.run;
        let checks: [(&'static str, String, bool, &'static str); 8] = [
            (
                "[run] timeout_secs",
                r.timeout_secs.to_string(),
                (1..=MAX_TIMEOUT_SECS).contains(&r.timeout_secs),
                "a run's wall-clock limit must be 1 to 86400 seconds, e.g. 10",
            ),
            (
                "[run] memory_mb",
                r.memory_mb.to_string(),
                r.memory_mb >= 1,
                "a run's memory limit must be a positive number of MiB, e.g. 1024",
            ),
            (
                "[run] workers",
                r.workers.to_string(),
                r.workers >= 1,
                "at least 1 function must be worked on at a time, e.g. 2",
            ),
            (
                "[run] max_iterations",
                r.max_iterations.to_string(),
                r.max_iterations >= 1,
                "a function needs at least 1 code version, e.g. 4",
            ),
            (
                "[run] candidates",
                r.candidates.to_string(),
                (1..=MAX_CANDIDATES).contains(&r.candidates),
                "the candidates of a function's first code are 1 (no vote) to 8, e.g. 3",
            ),
            (
                "[run] sandbox",
                format!("{:?}", r.sandbox),
                matches!(r.sandbox.as_str(), "full" | "reduced"),
                "the sandbox is \"full\" or \"reduced\"",
            ),
            (
                "[ui] graphics",
                format!("{:?}", self.ui.graphics),
                self.ui
                    .graphics
                    .parse::<crate::tui::graphics::Setting>()
                    .is_ok(),
                "the graphics protocol is \"auto\", \"kitty\", \"sixel\", \"iterm2\" or \"halfblocks\"",
            ),
            (
                "[model] request_timeout_secs",
                self.model.request_timeout_secs.to_string(),
                self.model.request_timeout_secs >= 1,
                "a model request needs at least 1 second, e.g. 120",
            ),
        ];
        if let Some(found) = checks
            .into_iter()
            .find(|(_, _, ok, _)| !ok)
            .map(|(key, value, _, message)| (key, value, message))
        {
            return Some(found);
        }
        self.invalid_import_or_interpreter()
    }

    /// A module name in `[imports]` that is no module name, or an
    /// interpreter setting that is empty.
    fn invalid_import_or_interpreter(&self) -> Option<(&'static str, String, &'static str)> {
        let bad = |list: &[String]| {
            list.iter()
                .find(|m| !crate::exec::ImportPolicy::valid_module_name(m))
                .map(|m| format!("{m:?}"))
        };
        if let Some(v) = bad(&self.imports.allow) {
            return Some((
                "[imports] allow",
                v,
                "each entry is a module name, e.g. \"os.path\"",
            ));
        }
        if let Some(v) = bad(&self.imports.block) {
            return Some((
                "[imports] block",
                v,
                "each entry is a module name, e.g. \"socket\"",
            ));
        }
        if self
            .run
            .interpreter
            .as_ref()
            .is_some_and(|p| p.as_os_str().is_empty())
        {
            return Some((
                "[run] interpreter",
                "\"\"".into(),
                "the interpreter is a path to a python, e.g. \"/home/me/venv/bin/python\" (or leave it out)",
            ));
        }
        None
    }

    /// The interpreter generated code runs with, where one is chosen:
    /// `flag` (--python), else the chosen profile's `interpreter` (the
    /// profile as `profile_model` chooses it), else `[run] interpreter`.
    pub fn interpreter(
        &self,
        flag: Option<&Path>,
        profile: Option<&str>,
        model_name: Option<&str>,
    ) -> Option<PathBuf> {
        if let Some(p) = flag {
            return Some(p.to_path_buf());
        }
        let chosen = profile
            .or(self.model.profile.as_deref())
            .or(model_name.filter(|n| self.models.contains_key(*n)));
        chosen
            .and_then(|name| self.models.get(name))
            .and_then(|p| p.interpreter.clone())
            .or_else(|| self.run.interpreter.clone())
    }

    #[cfg(test)]
    pub(crate) fn from_toml(text: &str) -> Result<Config, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

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

    /// The config as TOML, every setting shown (for `codeloop config`):
    /// those left unset commented out with an example, and the environment
    /// variables that set them named. It parses back to the same config.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string_pretty(self).unwrap_or_default();
        let mut out = String::from(HEADER);
        for var in ENVIRONMENT {
            out.push_str(&format!("#   {:<24} {}\n", var.name, var.sets));
        }
        out.push('\n');
        let mut in_model = false;
        let mut in_run = false;
        for line in body.lines() {
            if in_run && (line.is_empty() || line.starts_with('[')) {
                if self.run.interpreter.is_none() {
                    out.push_str("# interpreter = \"/home/me/venv/bin/python\"  # the Python runs use; none: CODELOOP_PYTHON, else python3 (README: Use your own packages)\n");
                }
                in_run = false;
            }
            if line.starts_with('[') {
                in_model = line == "[model]";
                in_run = line == "[run]";
            }
            if in_model && line.is_empty() {
                out.push_str(&self.unset_model_lines());
                in_model = false;
            }
            out.push_str(line);
            if in_model && line == "model = \"\"" {
                out.push_str("  # empty: the first model the server lists");
            }
            out.push('\n');
        }
        if in_model {
            out.push_str(&self.unset_model_lines());
        }
        out
    }

    /// The `[model]` settings left unset, as commented lines with an example.
    fn unset_model_lines(&self) -> String {
        let m = &self.model;
        let unset = [
            (
                m.base_url.is_none(),
                "base_url = \"http://localhost:11434/v1\"",
                "an OpenAI-compatible server (README: Use your own model)",
            ),
            (
                m.temperature.is_none(),
                "temperature = 0.2",
                "none: the server's default",
            ),
            (
                m.max_tokens.is_none(),
                "max_tokens = 4096",
                "the longest reply; none: the server's default",
            ),
            (
                m.context.is_none(),
                "context = 32768",
                "the context window, where the server does not tell it",
            ),
            (
                m.profile.is_none(),
                "profile = \"local\"",
                "a [models.NAME] profile to use",
            ),
        ];
        unset
            .iter()
            .filter(|(is_unset, ..)| *is_unset)
            .map(|(_, example, why)| format!("# {example}  # {why}\n"))
            .collect()
    }

    /// Where new sessions are created.
    pub(crate) fn sessions_dir(&self) -> PathBuf {
        self.paths.data_dir.join("sessions")
    }
}

/// A run's wall-clock limit at most, in seconds (a day), as `--timeout`.
pub(crate) const MAX_TIMEOUT_SECS: u64 = 86_400;

/// The most candidates of a function's first code (`--candidates`, `candidates`).
pub(crate) const MAX_CANDIDATES: u32 = 8;

/// 1-based line and column of a byte offset.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
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

/// What `codeloop config` prints first.
const HEADER: &str = "\
# codeloop's settings as they are now: the config file, then the environment,
# then flags (flags win). Settings left unset are commented out, with an
# example. Save this as the config file (its place: CODELOOP_CONFIG, else
# config.toml in the config_dir below) and change what you need. The API key
# is read from the variable api_key_env names, never from this file.
# The environment variables that set them:
";

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_file_keeps_the_other_defaults() {
        let c = Config::from_toml("[model]\nbase_url = \"http://127.0.0.1:8000/v1\"\n").unwrap();
        assert_eq!(
            c.model.base_url.as_deref(),
            Some("http://127.0.0.1:8000/v1")
        );
        assert_eq!(c.run, RunConfig::default());
    }

    #[test]
    fn an_unknown_key_is_an_error_that_names_it() {
        let err = Config::from_toml("[run]\nmax_iteration = 3\n").unwrap_err();
        assert!(err.contains("max_iteration"), "{err}");
    }

    #[test]
    fn environment_overrides_the_file_and_bad_numbers_are_named() {
        let mut c = Config::default();
        c.apply_env(|n| (n == "CODELOOP_WORKERS").then(|| "3".to_string()))
            .unwrap();
        assert_eq!(c.run.workers, 3);
        let err = c
            .apply_env(|n| (n == "CODELOOP_TIMEOUT").then(|| "ten".to_string()))
            .unwrap_err();
        assert!(err.to_string().contains("CODELOOP_TIMEOUT=ten"), "{err}");
    }

    fn load_text(text: &str) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        Config::load(Some(&path))
    }

    #[test]
    fn values_no_run_could_use_are_refused_with_their_key() {
        let err = load_text("[run]\nmemory_mb = 0\n").unwrap_err().to_string();
        assert!(err.contains("[run] memory_mb = 0"), "{err}");
        assert!(err.contains("positive number of MiB"), "{err}");
        let err = load_text("[run]\ncandidates = 500\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("[run] candidates = 500"), "{err}");
        for (text, key) in [
            ("[run]\ntimeout_secs = 0\n", "[run] timeout_secs = 0"),
            ("[run]\nworkers = 0\n", "[run] workers = 0"),
            ("[run]\nsandbox = \"none\"\n", "[run] sandbox = \"none\""),
            (
                "[ui]\ngraphics = \"sixels\"\n",
                "[ui] graphics = \"sixels\"",
            ),
        ] {
            let err = load_text(text).unwrap_err().to_string();
            assert!(err.contains(key), "{err}");
        }
        assert!(load_text("[run]\nmemory_mb = 512\n").is_ok());
        let mut c = Config::default();
        let err = c
            .apply_env(|n| (n == "CODELOOP_TIMEOUT").then(|| "0".to_string()))
            .unwrap_err();
        assert!(err.to_string().contains("CODELOOP_TIMEOUT=0"), "{err}");
    }

    #[test]
    fn the_graphics_protocol_is_read_from_the_file_and_the_environment_and_checked() {
        let c = load_text("[ui]\ngraphics = \"sixel\"\n").unwrap();
        assert_eq!(c.ui.graphics, "sixel");
        assert_eq!(Config::default().ui.graphics, "auto");
        let err = load_text("[ui]\ngraphics = \"kitty2\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("[ui] graphics = \"kitty2\""), "{err}");
        assert!(err.contains("\"iterm2\" or \"halfblocks\""), "{err}");
        let mut c = Config::default();
        c.apply_env(|n| (n == "CODELOOP_GRAPHICS").then(|| "iterm2".to_string()))
            .unwrap();
        assert_eq!(c.ui.graphics, "iterm2");
        let err = c
            .apply_env(|n| (n == "CODELOOP_GRAPHICS").then(|| "png".to_string()))
            .unwrap_err();
        assert!(err.to_string().contains("CODELOOP_GRAPHICS=png"), "{err}");
    }

    #[test]
    fn a_syntax_error_names_its_line_and_column_and_how_to_start_without_the_file() {
        let err = load_text("[model]\nmodel = \"x\"\n\n[run]\nworkers = = 3\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("at line 5, column 11"), "{err}");
        assert!(err.contains("--config /dev/null"), "{err}");
        assert!(!err.contains("`codeloop config` prints"), "{err}");
    }

    #[test]
    fn printed_config_parses_back() {
        let c = Config::default();
        assert_eq!(Config::from_toml(&c.to_toml()).unwrap(), c);
    }

    /// The keys a printed config names, set or commented out.
    fn keys(printed: &str) -> std::collections::BTreeSet<String> {
        printed
            .lines()
            .map(|l| l.trim_start_matches("# "))
            .filter(|l| !l.starts_with('#') && !l.starts_with(' '))
            .filter_map(|l| l.split_once(" = ").map(|(k, _)| k.trim().to_string()))
            .collect()
    }

    #[test]
    fn the_printed_config_names_every_key_commented_where_unset() {
        let printed = Config::default().to_toml();
        assert!(
            printed.contains("\n# base_url = \"http://localhost:11434/v1\""),
            "{printed}"
        );
        // Every key a config with everything set prints, the defaults name.
        let mut full = Config::default();
        full.model.base_url = Some("http://x/v1".into());
        full.model.temperature = Some(0.1);
        full.model.max_tokens = Some(1);
        full.model.context = Some(1);
        full.model.profile = Some("p".into());
        full.run.interpreter = Some("/venv/bin/python".into());
        let all = keys(&toml::to_string_pretty(&full).unwrap());
        assert_eq!(keys(&printed), all, "{printed}");
        assert_eq!(Config::from_toml(&full.to_toml()).unwrap(), full);
        assert!(!full.to_toml().contains("# base_url"), "set: not commented");
    }

    #[test]
    fn every_environment_variable_printed_is_read() {
        let printed = Config::default().to_toml();
        for var in ENVIRONMENT {
            assert!(printed.contains(var.name), "{} unnamed", var.name);
            let value = match var.name {
                "CODELOOP_MAX_TOKENS"
                | "CODELOOP_MAX_ITERATIONS"
                | "CODELOOP_WORKERS"
                | "CODELOOP_TIMEOUT" => "7",
                "CODELOOP_GRAPHICS" => "kitty",
                _ => "x",
            };
            let mut c = Config::default();
            c.apply_env(|n| (n == var.name).then(|| value.to_string()))
                .unwrap();
            assert_ne!(c, Config::default(), "{} changes nothing", var.name);
        }
    }

    const PROFILES: &str = r#"
[model]
model = "local"
max_tokens = 2048

[models.local]
base_url = "http://127.0.0.1:11434/v1"
model = "qwen2.5-coder:7b"
context = 16384

[models.hosted]
base_url = "https://api.openai.com/v1"
model = "gpt-4o-mini"
api_key_env = "OPENAI_API_KEY"
max_tokens = 4096
temperature = 0.2
"#;

    #[test]
    fn profiles_are_chosen_by_flag_setting_or_model_name_and_printed() {
        let c = Config::from_toml(PROFILES).unwrap();
        let local = c.profile_model(None, Some("local")).unwrap().unwrap();
        assert_eq!(local.model, "qwen2.5-coder:7b");
        assert_eq!(local.context, Some(16384));
        assert_eq!(local.max_tokens, Some(2048), "kept from [model]");
        let hosted = c
            .profile_model(Some("hosted"), Some("local"))
            .unwrap()
            .unwrap();
        assert_eq!(
            hosted.base_url.as_deref(),
            Some("https://api.openai.com/v1")
        );
        assert_eq!(
            (hosted.max_tokens, hosted.temperature),
            (Some(4096), Some(0.2))
        );
        assert_eq!(c.profile_model(None, Some("qwen")).unwrap(), None);
        let err = c.profile_model(Some("nope"), None).unwrap_err();
        assert!(
            err.contains("\"nope\"") && err.contains("hosted, local"),
            "{err}"
        );
        let printed = c.to_toml();
        assert!(printed.contains("[models.hosted]"), "{printed}");
        assert_eq!(Config::from_toml(&printed).unwrap(), c);
    }

    #[test]
    fn imports_and_the_interpreter_are_read_and_checked() {
        let c = Config::from_toml(
            "[imports]\nblock = [\"os\"]\nallow = [\"os.path\"]\nenforce = true\n[run]\ninterpreter = \"/v/bin/python\"\n[models.data]\ninterpreter = \"/d/bin/python\"\n",
        )
        .unwrap();
        let p = c.imports.policy();
        assert!(p.enforce && p.blocks("os") && !p.blocks("os.path"));
        assert_eq!(c.invalid_value(), None);
        let path = |s: &str| Some(PathBuf::from(s));
        assert_eq!(c.interpreter(None, None, None), path("/v/bin/python"));
        assert_eq!(
            c.interpreter(None, Some("data"), None),
            path("/d/bin/python")
        );
        assert_eq!(
            c.interpreter(None, None, Some("data")),
            path("/d/bin/python")
        );
        assert_eq!(
            c.interpreter(Some(Path::new("/f/python")), Some("data"), None),
            path("/f/python")
        );
        let bad = Config::from_toml("[imports]\nblock = [\"not a module\"]\n").unwrap();
        assert_eq!(
            bad.invalid_value().map(|(k, v, _)| (k, v)),
            Some(("[imports] block", "\"not a module\"".to_string()))
        );
        // The default: today's advisory list, not enforced.
        let d = Config::default().imports.policy();
        assert!(!d.enforce && d.blocks("socket"));
    }
}
