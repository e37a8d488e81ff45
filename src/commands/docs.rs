//! What an install puts beside the binary: shell completions
//! (`codeloop completions bash|zsh|fish|elvish|powershell`, clap_complete)
//! and man pages (`codeloop man`, clap_mangen), both made from the command
//! line's own definition, so they never disagree with `--help`. Neither
//! reads the config: they work before anything is set up.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// `codeloop completions SHELL`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `codeloop man [--dir DIR]`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write codeloop.1 and a page per subcommand (codeloop-run.1, ...)
    /// into DIR, e.g. ~/.local/share/man/man1 [default: codeloop.1 to stdout].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The completion script for `shell`, to stdout.
pub fn completions(args: &CompletionsArgs, mut command: clap::Command) -> anyhow::Result<i32> {
    // Made whole first: clap_complete panics on a write that fails.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "codeloop", &mut script);
    to_stdout(&script).context("cannot write the completion script")?;
    Ok(0)
}

/// The man page to stdout, or every page into `--dir`.
pub fn man(args: &ManArgs, command: clap::Command) -> anyhow::Result<i32> {
    match &args.dir {
        Some(dir) => {
            write_pages(command, dir)?;
            println!("wrote the man pages into {}", dir.display());
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command)
                .render(&mut page)
                .context("cannot make the man page")?;
            to_stdout(&page).context("cannot write the man page")?;
        }
    }
    Ok(0)
}

/// Write to stdout; a reader that stopped reading (`| head`) is no error.
fn to_stdout(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Each page as `clap_mangen::generate_to` names it, but written through
/// `session_fs`: a page's name in DIR that is a link (to a file of the
/// person's) or a FIFO (which would hang the write) planted in a shared
/// folder is refused, never followed nor waited on; each page is written
/// whole and renamed into place, readable by all (0644: man pages are).
fn write_pages(command: clap::Command, dir: &Path) -> anyhow::Result<()> {
    fn pages(command: clap::Command, out: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
        for sub in command
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .cloned()
        {
            pages(sub, out)?;
        }
        let man = clap_mangen::Man::new(command);
        let mut page = Vec::new();
        man.render(&mut page)?;
        out.push((man.get_filename(), page));
        Ok(())
    }
    let folder = crate::session::session_fs::Folder::create(dir)
        .with_context(|| format!("cannot create the folder {}", dir.display()))?;
    let mut command = command.disable_help_subcommand(true);
    command.build();
    let mut all = Vec::new();
    pages(command, &mut all).context("cannot make the man pages")?;
    for (name, page) in all {
        folder
            .write(&name, &page, 0o644)
            .with_context(|| format!("cannot write the man pages into {}", dir.display()))?;
    }
    Ok(())
}
