//! Where each setting `codeloop config` prints comes from: its default,
//! the config file, an environment variable or a flag (flags win over the
//! environment, which wins over the file). Found again for the printing
//! from the same sources `Config::load` read, so the config itself carries
//! only values.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::ENVIRONMENT;

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
        // The first variable listed for a setting wins (CODELOOP_BASE_URL
        // over OPENAI_BASE_URL), as `apply_env` applies it last.
        let mut by_env = BTreeMap::new();
        for var in ENVIRONMENT.iter().filter(|v| env(v.name).is_some()) {
            let key = var.sets.split(" (").next().unwrap_or(var.sets);
            by_env.entry(key.to_string()).or_insert(var.name);
        }
        for (key, name) in by_env {
            origins.set.insert(key, Origin::Env(name));
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
