//! The subcommands of the `codeloop` binary. Each file owns its clap `Args`
//! and an entry point `run(args, config) -> anyhow::Result<i32>` (the exit code).

pub mod bench;
pub mod doctor;
pub mod eval;
pub mod exec;
pub mod export;
pub mod model;
pub mod resume;
pub mod run;
pub mod sessions;
pub mod ui;
