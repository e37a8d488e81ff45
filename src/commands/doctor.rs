//! `codeloop doctor`: probe every sandbox layer on this machine, run hostile
//! and harmless programs through the sandbox, and say what is contained.

use anyhow::Context;

use crate::config::Config;
use codeloop_sandbox::{Layer, Sandbox, probes};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only report the layers; do not run the probe programs.
    #[arg(long)]
    pub(crate) layers_only: bool,
    /// Leave a layer out (namespaces, landlock or seccomp), to see what the others contain alone.
    #[arg(long, value_name = "LAYER")]
    pub(crate) without: Vec<Layer>,
}

pub async fn run(args: Args, config: Config) -> anyhow::Result<i32> {
    let mut options = config.sandbox.clone();
    for layer in args.without {
        options.leave_out(layer);
    }
    // Whether generated code may run here is said on the mode line.
    let reduced_chosen = options.allow_reduced;
    // The probes run in whatever this machine gives.
    options.allow_reduced = true;
    // The probes test the sandbox's layers, the wall, not the import
    // policy (which a hostile probe would meet first): it is said apart.
    let policy = options.import_policy.clone();
    options.import_policy.enforce = false;
    // The memory bomb meets the limit runs get.
    let memory = config.run.memory_mb.saturating_mul(1 << 20);
    let sandbox = tokio::task::spawn_blocking(move || Sandbox::probe(&options))
        .await
        .context("the sandbox probe did not finish")?
        .with_run_memory(memory);
    println!("codeloop doctor: the sandbox on this machine\n");
    say_python(&sandbox).await;
    println!("{}", super::python::describe_policy(&policy));
    let root = codeloop_sandbox::is_root();
    println!(
        "running as   {}",
        if root { "root" } else { "an ordinary user" }
    );
    println!(
        "{}",
        graphics_line(config.ui.graphics.parse().unwrap_or_default())
    );
    say_mode(&sandbox, reduced_chosen);
    let inactive = say_layers(&sandbox);
    if sandbox.interpreter_problem().is_some() {
        println!("\nNo probes run: codeloop cannot run Python here.");
        return Ok(1);
    }
    if args.layers_only {
        return Ok(if inactive == 0 { 0 } else { 1 });
    }
    let failures = run_probes(&sandbox).await;
    println!();
    if failures == 0 && inactive == 0 {
        println!("Every layer is active and every probe behaved.");
        Ok(0)
    } else {
        println!(
            "{inactive} layer(s) inactive, {failures} probe(s) misbehaved: see the advice above."
        );
        Ok(1)
    }
}

/// The interpreter, and its packages when it runs.
async fn say_python(sandbox: &Sandbox) {
    match sandbox.interpreter_problem() {
        None => println!(
            "interpreter  {} (Python {})",
            sandbox.interpreter.display(),
            sandbox.interpreter_version()
        ),
        Some(p) => println!("interpreter  MISSING: {p}"),
    }
    if sandbox.interpreter_problem().is_none() {
        let probe = sandbox.clone();
        match tokio::task::spawn_blocking(move || probe.python_environment()).await {
            Ok(Ok(env)) => {
                // Package names come from the interpreter's site-packages.
                for line in super::python::describe_environment(&env) {
                    println!("{}", crate::protocol::sanitize::for_terminal(&line));
                }
            }
            Ok(Err(e)) => println!("packages     UNKNOWN: {e}"),
            Err(e) => println!("packages     UNKNOWN: the probe did not finish: {e}"),
        }
    }
}

/// The sandbox's mode, what it misses, and whether runs are refused.
fn say_mode(sandbox: &Sandbox, reduced_chosen: bool) {
    let missing = sandbox.missing_layers();
    println!(
        "mode         {}{}{}\n",
        sandbox.mode().name(),
        if missing.is_empty() {
            String::new()
        } else {
            format!(" (missing: {})", missing.join(", "))
        },
        if sandbox.mode() == codeloop_sandbox::SandboxMode::Full || reduced_chosen {
            ""
        } else {
            "; runs are refused unless --sandbox reduced is chosen"
        }
    );
}

/// Each layer, active or not, with its advice; how many are not.
fn say_layers(sandbox: &Sandbox) -> usize {
    println!("layers:");
    let mut inactive = 0;
    for layer in sandbox.layer_reports() {
        let mark = if layer.active { "active  " } else { "INACTIVE" };
        println!("  {mark}  {:<11} {}", layer.name, layer.detail);
        if let Some(advice) = &layer.advice {
            println!("            {:<11} advice: {advice}", "");
        }
        if !layer.active {
            inactive += 1;
        }
    }
    inactive
}

/// The hostile and harmless programs, each with its verdict; how many
/// misbehaved.
async fn run_probes(sandbox: &Sandbox) -> usize {
    println!("\nprobes (hostile programs must be contained, harmless ones must work):");
    let mut results = probes::run_all(sandbox).await;
    results.extend(probes::run_fork_server(sandbox).await);
    let mut failures = 0;
    for r in &results {
        let verdict = match (r.hostile, r.ok) {
            (true, true) => "contained",
            (true, false) => "NOT CONTAINED",
            (false, true) => "works",
            (false, false) => "BROKEN",
        };
        if !r.ok {
            failures += 1;
        }
        println!("  {verdict:<13}  {:<38} {}", r.name, r.detail);
    }
    failures
}

/// What the workbench would draw pictures with here, and why.
fn graphics_line(setting: crate::tui::graphics::Setting) -> String {
    format!("pictures     {}", crate::tui::graphics::detect(setting))
}
