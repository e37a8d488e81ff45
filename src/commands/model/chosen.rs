//! The model servers the person chose: what a server a tape names is
//! checked against before `resume`, a fork or `open` sends it anything.
//!
//! A tape records the base URL its session ran on. A tape handed over
//! names whatever its author wrote there: their own server, listening for
//! the reader's API key and prompts. So a recorded server is gone on with
//! only when the person chose it: it is their config's (`[model] base_url`
//! after OPENAI_BASE_URL and CODELOOP_BASE_URL, a `[models.NAME]`
//! profile's, or its provider's own: OpenAI's, Ollama's), or they named it
//! before (`--base-url`, the config) and codeloop remembered it, as ssh
//! remembers hosts: `chosen-servers` in the data folder, private, one URL
//! a line. Any other is refused, named, with the flag that chooses it; it
//! is sent nothing, not even the model-list probe.

use std::path::Path;

use super::OLLAMA_URL;
use super::server::OPENAI_URL;
use crate::config::{Config, ModelConfig};
use crate::llm::openai::normalize_base_url;
use crate::session::session_fs::{Folder, PRIVATE_FILE};

/// The file in the data folder that keeps the servers named.
pub(crate) const FILE: &str = "chosen-servers";
/// At most this many are kept (the oldest go first).
const KEEP: usize = 200;
/// A list longer than this is not read further.
const CAP: u64 = 64 * 1024;

/// Whether `base_url` is a server the person chose: their config's or one
/// they named before.
pub(crate) fn is_chosen(config: &Config, base_url: &str) -> bool {
    let Ok(url) = normalize_base_url(base_url) else {
        return false;
    };
    configured(config).contains(&url) || remembered(&config.paths.data_dir).contains(&url)
}

/// The servers the config names, each as `normalize_base_url` writes it.
fn configured(config: &Config) -> Vec<String> {
    let of = |m: &ModelConfig| -> Option<String> {
        match (&m.base_url, m.provider.as_str()) {
            (Some(url), _) => Some(url.clone()),
            (None, "openai") => Some(OPENAI_URL.to_string()),
            (None, "ollama") => Some(OLLAMA_URL.to_string()),
            (None, _) => None,
        }
    };
    let mut named: Vec<Option<String>> = vec![of(&config.model)];
    for name in config.models.keys() {
        if let Ok(Some(profiled)) = config.profile_model(Some(name), None) {
            named.push(of(&profiled));
        }
    }
    named
        .into_iter()
        .flatten()
        .filter_map(|u| normalize_base_url(&u).ok())
        .collect()
}

/// The servers remembered in `data_dir` (none when the list is missing,
/// or is not a regular file: a link planted there is not read).
fn remembered(data_dir: &Path) -> Vec<String> {
    use std::io::Read;
    let Ok(file) = Folder::open(data_dir).and_then(|d| d.open_file(FILE)) else {
        return Vec::new();
    };
    let mut text = String::new();
    if file.take(CAP).read_to_string(&mut text).is_err() {
        return Vec::new();
    }
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Remember `base_url`, a server the person named, in the data folder (made
/// private when missing); a list that cannot be written is left as it is
/// (a resume from it then asks for `--base-url`).
pub(crate) fn remember(config: &Config, base_url: &str) {
    let Ok(url) = normalize_base_url(base_url) else {
        return;
    };
    let data_dir = &config.paths.data_dir;
    let mut kept = remembered(data_dir);
    if kept.contains(&url) {
        return;
    }
    kept.push(url);
    let from = kept.len().saturating_sub(KEEP);
    let mut text = String::from(
        "# The model servers named to codeloop (--base-url, the config): a session's\n# tape that names one of these goes on there on resume; any other server a tape\n# names must be named again. One base URL a line.\n",
    );
    for u in &kept[from..] {
        text.push_str(u);
        text.push('\n');
    }
    let _ = Folder::create(data_dir).and_then(|d| d.write(FILE, text.as_bytes(), PRIVATE_FILE));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_in(dir: &Path, toml: &str) -> Config {
        let mut c = Config::from_toml(toml).unwrap();
        c.paths.data_dir = dir.to_path_buf();
        c
    }

    #[test]
    fn a_server_is_chosen_by_the_config_or_by_having_been_named_and_no_other_is() {
        let dir = tempfile::tempdir().unwrap();
        let config = config_in(
            dir.path(),
            "[model]\nbase_url = \"http://127.0.0.1:8000/v1/\"\n[models.local]\nbase_url = \"http://127.0.0.1:8001/v1\"\n",
        );
        for yes in [
            "http://127.0.0.1:8000/v1",
            "http://127.0.0.1:8000/v1/chat/completions",
            "http://127.0.0.1:8001/v1",
        ] {
            assert!(is_chosen(&config, yes), "{yes}");
        }
        for no in [
            "http://127.0.0.1:9999/v1",
            "http://localhost:8000/v1",
            "https://api.openai.com/v1",
            "not a url",
        ] {
            assert!(!is_chosen(&config, no), "{no}");
        }
        // A provider's own server, for [model] and for a profile.
        let hosted = config_in(dir.path(), "[model]\nprovider = \"openai\"\n");
        assert!(is_chosen(&hosted, "https://api.openai.com/v1"));
        let local = config_in(dir.path(), "[models.o]\nprovider = \"ollama\"\n");
        assert!(is_chosen(&local, "http://localhost:11434/v1"));
        assert!(!is_chosen(&local, "https://api.openai.com/v1"));
        remember(&config, "http://127.0.0.1:9999/v1/");
        remember(&config, "http://127.0.0.1:9999/v1");
        assert!(is_chosen(&config, "http://127.0.0.1:9999/v1"));
        let list = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
        assert_eq!(list.matches("9999").count(), 1, "{list}");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_list_planted_as_a_link_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "http://127.0.0.1:9999/v1\n").unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::os::unix::fs::symlink(&elsewhere, data.join(FILE)).unwrap();
        let config = config_in(&data, "");
        assert!(!is_chosen(&config, "http://127.0.0.1:9999/v1"));
        remember(&config, "http://127.0.0.1:7777/v1");
        assert_eq!(
            std::fs::read_to_string(&elsewhere).unwrap(),
            "http://127.0.0.1:9999/v1\n",
            "written through the link"
        );
    }
}
