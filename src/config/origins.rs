//! Where each setting `codeloop config` prints comes from: its default,
//! the config file, an environment variable or a flag (flags win over the
//! environment, which wins over the file). Found again for the printing
//! from the same sources `Config::load` read, so the config itself carries
//! only values.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::ENVIRONMENT;

/// Where the setting `key` (`[section] key`) that is not a flag came
/// from, in words for what to change: the variable that set it, else the
/// config file (or a profile in it).
pub(crate) fn source_of(key: &str, env: impl Fn(&str) -> Option<String>) -> String {
    match variable_for(key, &env) {
        Some(name) => name.to_string(),
        None => {
            let name = key.rsplit(' ').next().unwrap_or(key);
            format!(
                "{name} in {} (or in its profile)",
                super::Config::default_file().display()
            )
        }
    }
}

/// The setting a variable sets (`[model] base_url`).
fn setting_of(var: &super::env::EnvVar) -> &'static str {
    var.sets.split(" (").next().unwrap_or(var.sets)
}

/// The variable that set `key`, of those `env` has: the first listed for
/// it wins (CODELOOP_BASE_URL over OPENAI_BASE_URL), as `apply_env`
/// applies it last.
fn variable_for(key: &str, env: &impl Fn(&str) -> Option<String>) -> Option<&'static str> {
    ENVIRONMENT
        .iter()
        .find(|v| setting_of(v) == key && env(v.name).is_some())
        .map(|v| v.name)
}

/// Where one setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    File,
    Env(&'static str),
    Flag(&'static str),
}

/// Where each setting that is not its default came from, by its key as
/// `[section] key`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Origins {
    /// The config file read, if it was.
    file: Option<PathBuf>,
    set: BTreeMap<String, Origin>,
}

impl Origins {
    /// The settings of the file at `path` (as `Config::load` would find
    /// it: None for the default place) and of the environment `env` reads.
    pub(crate) fn find(path: Option<&Path>, env: impl Fn(&str) -> Option<String>) -> Origins {
        let path = path
            .map(Path::to_path_buf)
            .unwrap_or_else(super::Config::default_file);
        let mut origins = Origins::default();
        if let Ok(text) = std::fs::read_to_string(&path) {
            let table: toml::Table = toml::from_str(&text).unwrap_or_default();
            for (section, keys) in &table {
                let Some(keys) = keys.as_table().filter(|_| section != "models") else {
                    continue;
                };
                for key in keys.keys() {
                    origins
                        .set
                        .insert(format!("[{section}] {key}"), Origin::File);
                }
            }
            origins.file = Some(path);
        }
        for var in ENVIRONMENT {
            let key = setting_of(var);
            if let Some(name) = variable_for(key, &env) {
                origins.set.insert(key.to_string(), Origin::Env(name));
            }
        }
        origins
    }

    /// The setting `key` (`[section] key`) was given by `flag`.
    pub(crate) fn flag(&mut self, key: &str, flag: &'static str) {
        self.set.insert(key.to_string(), Origin::Flag(flag));
    }

    /// Where `key` came from, in words.
    pub(crate) fn of(&self, key: &str) -> String {
        match self.set.get(key) {
            None => "default".to_string(),
            Some(Origin::File) => match &self.file {
                Some(f) => format!("from {}", f.display()),
                None => "from the config file".to_string(),
            },
            Some(Origin::Env(name)) => format!("from {name}"),
            Some(Origin::Flag(flag)) => format!("from {flag}"),
        }
    }
}
