//! `codeloop exec`.

use crate::config::Config;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub async fn run(_args: Args, _config: Config) -> anyhow::Result<i32> {
    anyhow::bail!("`codeloop exec` is not built yet")
}
