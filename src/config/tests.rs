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
fn the_readme_names_every_variable_codeloop_reads() {
    let readme = include_str!("../../README.md");
    for var in ENVIRONMENT.iter().chain(OTHER_ENVIRONMENT) {
        assert!(readme.contains(&format!("`{}`", var.name)), "{}", var.name);
    }
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

#[test]
fn the_printed_config_says_where_each_setting_comes_from() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        "[run]\nworkers = 5\ntimeout_secs = 20\n[imports]\nblock = [\"os\"]\n[models.local]\nmodel = \"m\"\n",
    )
    .unwrap();
    let env = |n: &str| match n {
        "CODELOOP_WORKERS" => Some("3".to_string()),
        "OPENAI_BASE_URL" | "CODELOOP_BASE_URL" => Some("http://x/v1".to_string()),
        _ => None,
    };
    let mut config = Config::load(Some(&path)).unwrap();
    config.apply_env(env).unwrap();
    let mut origins = Origins::find(Some(&path), env);
    config.ui.graphics = "kitty".into();
    origins.flag("[ui] graphics", "--graphics");
    let printed = config.printed(Some(&origins));
    let file = path.display();
    for line in [
        "workers = 3  # from CODELOOP_WORKERS".to_string(),
        format!("timeout_secs = 20  # from {file}"),
        format!("block = [\"os\"]  # from {file}"),
        "base_url = \"http://x/v1\"  # from CODELOOP_BASE_URL".to_string(),
        "max_iterations = 4  # default".to_string(),
        "model = \"\"  # default; empty: the first model the server lists".to_string(),
        "graphics = \"kitty\"  # from --graphics".to_string(),
    ] {
        assert!(printed.lines().any(|l| l == line), "{line}\n---\n{printed}");
    }
    // A profile's settings are the file's: no note beside each.
    assert!(printed.contains("model = \"m\"\n"), "{printed}");
    assert_eq!(Config::from_toml(&printed).unwrap(), config);
}

#[test]
fn the_loop_table_sets_the_repair_policy_and_names_a_wrong_key_or_value() {
    let c = Config::from_toml("[loop]\nfresh_after = 5\nfresh_start = false\n").unwrap();
    let p = c.repair.policy(true, false);
    assert_eq!(p.fresh_after, 5);
    assert!(!p.fresh_start);
    assert!(p.review);
    assert_eq!(p.program_repairs, 2, "unnamed: today's");
    assert_eq!(
        Config::default().repair.policy(false, false),
        codeloop_engine::RepairPolicy::default()
    );
    let err = Config::from_toml("[loop]\nfresh_afterr = 2\n").unwrap_err();
    assert!(err.contains("fresh_afterr"), "{err}");
    let err = load_text("[loop]\nfresh_after = 0\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("[loop] fresh_after"), "{err}");
}

#[test]
fn the_readmes_loop_table_is_a_valid_config_of_todays_defaults() {
    let readme = include_str!("../../README.md");
    let start = readme
        .find("```toml\n[loop]\n")
        .expect("README.md shows the [loop] table");
    let block = &readme[start + "```toml\n".len()..];
    let block = &block[..block.find("```").unwrap()];
    let c = Config::from_toml(block).unwrap_or_else(|e| panic!("{e}\n{block}"));
    assert_eq!(c.repair, LoopConfig::default(), "{block}");
}
