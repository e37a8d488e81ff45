//! One `Config` from the config file (TOML), the environment and flags, in
//! that order of precedence (flags win). Paths come from `directories`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub(crate) use codeloop_engine::TestsFormat;

mod env;
mod origins;
mod profiles;
mod validate;

pub(crate) use env::{ENVIRONMENT, OTHER_ENVIRONMENT};
pub(crate) use origins::{Origins, source_of};

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
    /// `[loop]`: what the loop does after a failure (the repair policy).
    #[serde(rename = "loop")]
    pub(crate) repair: LoopConfig,
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
    pub sandbox: codeloop_sandbox::SandboxOptions,
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
    /// How a function's tests are asked for (`[run] tests` otherwise).
    pub(crate) tests: Option<TestsFormat>,
    /// A code call's answer starts with the function's head (`[run] prefill` otherwise).
    pub(crate) prefill: Option<bool>,
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
    /// How each function's tests are asked for: "code" (a test file the
    /// model writes, begun for it where the server can go on from a start;
    /// the default) or "data" (cases under a JSON schema, rendered into a
    /// test file); each falls back to the other when a reply is unusable
    /// (a profile's `tests` wins; also --tests).
    pub(crate) tests: TestsFormat,
    /// A code call's answer starts with the function's `def` line, and a
    /// tests call's with a test function calling it, where the server can
    /// go on from a start (llama.cpp, vLLM), so the model writes only the
    /// rest (a profile's `prefill` wins; also --prefill and --no-prefill).
    /// Off by default: measured on SmolLM2-135M behind llama-server (the
    /// easy set's first ten, at most 2 versions each), 2 of 10 passed with
    /// it and 4 of 10 without.
    pub(crate) prefill: bool,
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
        let p = codeloop_sandbox::ImportPolicy::default();
        ImportsConfig {
            allow: p.allow,
            block: p.block,
            enforce: p.enforce,
        }
    }
}

impl ImportsConfig {
    /// The policy the sandbox holds runs to.
    pub fn policy(&self) -> codeloop_sandbox::ImportPolicy {
        codeloop_sandbox::ImportPolicy {
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

/// `[loop]`: the repair policy's fields a config sets (`RepairPolicy`);
/// review is `[run]`'s and the profiles'. Also --no-fresh-start,
/// --fresh-after N and --no-runtime-values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoopConfig {
    /// Start fresh from the spec after `fresh_after` failed versions.
    pub(crate) fresh_start: bool,
    /// Failed code versions since the last fresh start that bring the next.
    pub(crate) fresh_after: u32,
    /// Calls of a fresh start at most (asked again after a repeat).
    pub(crate) fresh_asks: u32,
    /// A fresh start's temperature where the model's settings name none.
    pub(crate) fresh_temperature: f32,
    /// How much hotter each fresh start asked again is.
    pub(crate) repeat_heat: f32,
    /// The temperature of a repair asking for a different approach.
    pub(crate) different_approach_temperature: f32,
    /// Repairs of the assembled program's failure at most.
    pub(crate) program_repairs: u32,
    /// Show the runtime values at a failure in the repair prompt.
    pub(crate) runtime_values: bool,
    /// The first code call is shown the tests the model wrote.
    pub(crate) first_code_sees_model_tests: bool,
    /// Versions in a row that failed one test of the model's alone, the
    /// same way, before it is set aside as suspect (0: never).
    pub(crate) suspect_test_after: u32,
}

impl Default for LoopConfig {
    fn default() -> Self {
        let p = codeloop_engine::RepairPolicy::default();
        LoopConfig {
            fresh_start: p.fresh_start,
            fresh_after: p.fresh_after,
            fresh_asks: p.fresh_asks,
            fresh_temperature: p.fresh_temperature,
            repeat_heat: p.repeat_heat,
            different_approach_temperature: p.different_approach_temperature,
            program_repairs: p.program_repairs,
            runtime_values: p.runtime_values,
            first_code_sees_model_tests: p.first_code_sees_model_tests,
            suspect_test_after: p.suspect_test_after,
        }
    }
}

impl LoopConfig {
    /// The policy this table sets, with review as resolved elsewhere.
    pub(crate) fn policy(
        &self,
        review: bool,
        review_repairs: bool,
    ) -> codeloop_engine::RepairPolicy {
        codeloop_engine::RepairPolicy {
            fresh_start: self.fresh_start,
            fresh_after: self.fresh_after.max(1),
            fresh_asks: self.fresh_asks.max(1),
            fresh_temperature: self.fresh_temperature,
            repeat_heat: self.repeat_heat,
            different_approach_temperature: self.different_approach_temperature,
            program_repairs: self.program_repairs,
            runtime_values: self.runtime_values,
            review,
            review_repairs,
            first_code_sees_model_tests: self.first_code_sees_model_tests,
            suspect_test_after: self.suspect_test_after,
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
            tests: TestsFormat::Code,
            prefill: false,
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

    /// The config as TOML, every setting shown (for `codeloop config`):
    /// those left unset commented out with an example, and the environment
    /// variables that set them named. It parses back to the same config.
    pub fn to_toml(&self) -> String {
        self.printed(None)
    }

    /// What `codeloop config` prints: `to_toml` with the global flags
    /// taken as they are (`--graphics` is in the config already) and,
    /// after each setting, where it came from (`# default`, `# from
    /// CODELOOP_WORKERS`, ...), `file` being the `--config` given.
    pub fn printed_as_taken(mut self, file: Option<&Path>, flags: GlobalFlags) -> String {
        let mut origins = Origins::find(file, |n| std::env::var(n).ok());
        if flags.graphics {
            origins.flag("[ui] graphics", "--graphics");
        }
        if let Some(mode) = flags.sandbox {
            self.run.sandbox = mode;
            origins.flag("[run] sandbox", "--sandbox");
        }
        if let Some(python) = flags.python {
            self.run.interpreter = Some(python);
            origins.flag("[run] interpreter", "--python");
        }
        self.printed(Some(&origins))
    }

    fn printed(&self, origins: Option<&Origins>) -> String {
        let body = toml::to_string_pretty(self).unwrap_or_default();
        let mut out = String::from(HEADER);
        if origins.is_some() {
            out.push_str(ORIGINS_HEADER);
        }
        out.push_str(ENVIRONMENT_HEADER);
        for var in ENVIRONMENT.iter().chain(OTHER_ENVIRONMENT) {
            out.push_str(&format!("#   {:<24} {}\n", var.name, var.sets));
        }
        out.push('\n');
        let mut in_model = false;
        let mut in_run = false;
        let mut section = String::new();
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
                section = line.to_string();
            }
            if in_model && line.is_empty() {
                out.push_str(&self.unset_model_lines());
                in_model = false;
            }
            out.push_str(line);
            let mut notes = Vec::new();
            if let Some(origins) = origins
                && !section.starts_with("[models.")
                && let Some((key, _)) = line.split_once(" = ")
            {
                notes.push(origins.of(&format!("{section} {key}")));
            }
            if in_model && line == "model = \"\"" {
                notes.push("empty: the first model the server lists".into());
            }
            if !notes.is_empty() {
                out.push_str(&format!("  # {}", notes.join("; ")));
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

/// The flags of every command that set a setting, as `codeloop config` is given them.
#[derive(Debug, Default)]
pub struct GlobalFlags {
    /// `--graphics` was given (and put in the config).
    pub graphics: bool,
    pub sandbox: Option<String>,
    pub python: Option<PathBuf>,
}

/// What `codeloop config` prints first.
const HEADER: &str = "\
# codeloop's settings as they are now: the config file, then the environment,
# then flags (flags win). Settings left unset are commented out, with an
# example. Save this as the config file (its place: CODELOOP_CONFIG, else
# config.toml in the config_dir below) and change what you need. The API key
# is read from the variable api_key_env names, never from this file.
";

/// What `codeloop config` says of the notes after each setting.
const ORIGINS_HEADER: &str = "\
# After each setting, where it comes from: its default, the config file, an
# environment variable or a flag.
";

/// Before the environment variables' list.
const ENVIRONMENT_HEADER: &str = "# The environment variables that set them:\n";

#[cfg(test)]
mod tests;
