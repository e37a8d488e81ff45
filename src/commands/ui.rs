//! The TUI entry points: the workbench (default), `open` and `replay`.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::config::Config;
use crate::session::{TapeContents, parse_tape, read_tape};
use crate::tui::app::DemoEntry;
use crate::tui::event_loop::{self, Hooks};
use crate::tui::{App, Info, Theme};

/// How the workbench starts.
#[derive(Debug, Clone)]
pub enum UiMode {
    /// The live workbench; optionally with a task to start at once.
    Live { task: Option<String> },
    /// Review a saved tape read-only.
    Open { tape: PathBuf },
    /// Play a recorded tape back.
    Replay {
        tape: PathBuf,
        speed: f64,
        live: bool,
        paused: bool,
    },
}

pub async fn run(mode: UiMode, config: Config) -> anyhow::Result<i32> {
    let theme = Theme::load(&config.ui.theme, &config.paths.config_dir.join("themes"))?;
    let demos: Vec<DemoEntry> = crate::demos::all()
        .iter()
        .map(|d| DemoEntry {
            name: d.name.to_string(),
            title: d.title.to_string(),
        })
        .collect();
    let mut hooks = Hooks::default();
    let mut app = match mode {
        UiMode::Open { tape } => {
            let (contents, source) = load_tape(&tape)?;
            App::review(contents, info(source, demos), theme)
        }
        UiMode::Replay {
            tape,
            speed,
            live,
            paused,
        } => {
            let (contents, source) = load_tape(&tape)?;
            if live {
                anyhow::bail!(
                    "replay --live needs the engine's re-run, which this build does not have yet"
                );
            }
            App::replay(contents, info(source, demos), theme, speed, paused, live)
        }
        UiMode::Live { task } => {
            let mut app = App::live(
                Info {
                    model_label: "no model configured".into(),
                    source: config.sessions_dir().display().to_string(),
                    demos,
                    ..Info::default()
                },
                theme,
            );
            if let Some(task) = task {
                app.task.insert_str(&task);
            }
            hooks.starter = Some(Box::new(|_request| {
                anyhow::bail!("live sessions need the engine, which this build does not have yet")
            }));
            app
        }
    };
    let (mut terminal, guard) = crate::tui::terminal::enter()?;
    let input = crossterm::event::EventStream::new();
    let result = event_loop::run(&mut terminal, &mut app, input, None, hooks).await;
    drop(guard);
    result?;
    Ok(0)
}

fn info(source: String, demos: Vec<DemoEntry>) -> Info {
    Info {
        source,
        demos,
        ..Info::default()
    }
}

/// A tape file, a session folder (its tape.jsonl), or a bundled demo's name.
pub fn load_tape(arg: &Path) -> anyhow::Result<(TapeContents, String)> {
    if arg.is_dir() {
        let file = arg.join("tape.jsonl");
        if !file.is_file() {
            anyhow::bail!(
                "{} is a folder without a tape.jsonl: give a session folder or a tape file",
                arg.display()
            );
        }
        let contents = read_tape(&file)?;
        return Ok((contents, file.display().to_string()));
    }
    if arg.exists() {
        let contents = read_tape(arg)?;
        return Ok((contents, arg.display().to_string()));
    }
    let name = arg.to_string_lossy();
    if let Some(demo) = crate::demos::find(&name) {
        let label = PathBuf::from(format!("demo:{}", demo.name));
        let contents = parse_tape(demo.tape.as_bytes(), &label)
            .with_context(|| format!("the bundled demo `{}` has a broken tape", demo.name))?;
        return Ok((contents, format!("bundled demo `{}`", demo.name)));
    }
    let names: Vec<&str> = crate::demos::all().iter().map(|d| d.name).collect();
    anyhow::bail!(
        "{} is neither a tape file, a session folder, nor a bundled demo{}",
        arg.display(),
        if names.is_empty() {
            String::new()
        } else {
            format!(" (demos: {})", names.join(", "))
        }
    )
}
