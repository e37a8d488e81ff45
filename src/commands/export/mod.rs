//! `codeloop export SESSION`: the Markdown report, one self-contained HTML
//! page, or the program and its tests, all from the state folded from the
//! tape, so any session exports, finished or not.

mod consensus;
mod coverage;
mod graph;
pub(crate) mod html;
mod inputs;
mod lineage;
mod pictures;
mod player;
mod review;
mod steering;

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::ui::load_tape;
use crate::config::Config;
use crate::engine::runs;
use crate::session::{State, report, session_fs};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// The Markdown report
    Md,
    /// One self-contained page: the plan graph, each iteration as a diff, failures and reflections
    Html,
    /// The program and its tests (a folder, or one runnable file when PATH ends in .py)
    Py,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session: an id, a unique prefix of one, `last`, its folder, its tape, or a bundled demo
    #[arg(value_name = "SESSION")]
    pub(crate) session: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Md)]
    pub(crate) format: Format,
    /// Where to write [default: codeloop-ID.md, codeloop-ID.html, codeloop-ID-player.html or the folder codeloop-ID/ here]
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    pub(crate) output: Option<PathBuf>,
    /// With `--format html`: a page that replays the session as review does (a timeline, every pane at the cursor, a link to any moment), one file with its script
    #[arg(long)]
    pub(crate) player: bool,
    /// Name the tape and the input files on the HTML page by their full
    /// paths on this machine (by default, by their file names: a page is
    /// sent to others)
    #[arg(long)]
    pub(crate) full_paths: bool,
}

pub async fn run(args: Args, config: Config) -> anyhow::Result<i32> {
    let (contents, source) = load_tape(&args.session, &config.sessions_dir())?;
    if let Some(damage) = contents.damage_report() {
        eprintln!("codeloop: {source}: {damage}; exporting the rest");
    }
    let state = State::from_records(&contents.records);
    // A page is sent to others: it names this machine's files by their
    // names alone, unless asked.
    let naming = if args.full_paths {
        html::Naming::FullPaths
    } else {
        html::Naming::Names
    };
    if args.player {
        if args.format != Format::Html {
            anyhow::bail!(
                "--player makes an HTML page: add `--format html` (or leave `--player` out)"
            );
        }
        let path = args.output.clone().unwrap_or_else(|| {
            PathBuf::from(format!("{}-player.html", file_stem(&state.session_id)))
        });
        write_file(
            &path,
            &player::page(&contents.records, &naming.name(&source)),
        )?;
        println!("{}", path.display());
        return Ok(0);
    }
    let path = args
        .output
        .clone()
        .unwrap_or_else(|| default_path(&state, args.format));
    if args.format == Format::Html {
        // The lineage comes from the sessions beside this one (the
        // sessions folder, for a session in it): a session handed over
        // and exported from elsewhere draws none of the reader's own.
        let beside = Path::new(&source)
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_else(|| config.sessions_dir());
        let written = write_html(&state, &contents.records, &source, &path, &beside, naming)?;
        for page in written {
            println!("{}", page.display());
        }
        return Ok(0);
    }
    write(&state, &source, args.format, &path)?;
    println!("{}", path.display());
    Ok(0)
}

/// Write `state` as `format` to `path`; `source` names where its tape came
/// from. A session in the sessions folder that is a fork or has forks gets
/// its lineage on its HTML page, and its branches' pages beside it.
pub(crate) fn write(
    state: &State,
    source: &str,
    format: Format,
    path: &Path,
) -> anyhow::Result<()> {
    match format {
        Format::Md => write_file(path, &report::markdown(state)),
        Format::Html => {
            // The tape's folder is a session's, under the sessions folder.
            let tape = Path::new(source);
            let records = crate::session::read_tape(tape)
                .map(|c| c.records)
                .unwrap_or_default();
            let sessions = tape
                .parent()
                .and_then(Path::parent)
                .unwrap_or(Path::new(""));
            write_html(state, &records, source, path, sessions, html::Naming::Names).map(|_| ())
        }
        Format::Py => write_python(state, path),
    }
}

/// The HTML page of `state` (folded from `records`, read from `source`)
/// at `path`; when it is a fork or has forks in `sessions_dir`, with its
/// lineage, and the page of each other branch beside it. The pages written.
fn write_html(
    state: &State,
    records: &[crate::session::Record],
    source: &str,
    path: &Path,
    sessions_dir: &Path,
    naming: html::Naming,
) -> anyhow::Result<Vec<PathBuf>> {
    let tape = Path::new(source);
    // This session is `state` (its folder, renamed when handed over, is
    // listed under another id: not a branch of its own).
    let sessions: Vec<_> = crate::session::index::list(sessions_dir)
        .map(|l| l.sessions)
        .unwrap_or_default()
        .into_iter()
        .filter(|s| Some(s.dir.as_path()) != tape.parent())
        .collect();
    let tape = tape.is_file().then_some(tape);
    let Some(tree) = lineage::collect(state, records, tape, &sessions) else {
        write_file(path, &html::page_with(state, source, "", naming))?;
        return Ok(vec![path.to_path_buf()]);
    };
    let here = state.session_id.clone();
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let asked = Some((here.clone(), file));
    write_file(
        path,
        &html::page_with(
            state,
            source,
            &lineage::section(&tree, &here, &asked),
            naming,
        ),
    )?;
    let mut written = vec![path.to_path_buf()];
    let beside = path.parent().unwrap_or(Path::new(""));
    for (_, b) in tree.branches.iter().filter(|(_, b)| b.id != here) {
        let Some(branch) = &b.state else { continue };
        let page = beside.join(lineage::page(b));
        let from = b
            .tape
            .as_deref()
            .map(|t| t.display().to_string())
            .unwrap_or_default();
        write_file(
            &page,
            &html::page_with(
                branch,
                &from,
                &lineage::section(&tree, &b.id, &asked),
                naming,
            ),
        )?;
        written.push(page);
    }
    Ok(written)
}

/// `codeloop-ID.md`, `codeloop-ID.html` or `codeloop-ID/`, in the current folder.
pub(crate) fn default_path(state: &State, format: Format) -> PathBuf {
    let stem = file_stem(&state.session_id);
    match format {
        Format::Md => PathBuf::from(format!("{stem}.md")),
        Format::Html => PathBuf::from(format!("{stem}.html")),
        Format::Py => PathBuf::from(stem),
    }
}

/// `codeloop-ID`, the id kept to letters, digits, `-` and `_`.
pub(crate) fn file_stem(session_id: &str) -> String {
    let id: String = session_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if id.is_empty() {
        "codeloop-session".to_string()
    } else {
        format!("codeloop-{id}")
    }
}

/// Write the file the person named (a folder they named is made when
/// missing, private); the file itself is never written through a link or
/// into a FIFO planted there (`session_fs::write_named`).
fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    session_fs::write_named(path, text.as_bytes(), session_fs::PRIVATE_FILE)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The program as it was assembled, or as the nodes' latest code assembles now.
fn program_of(state: &State) -> anyhow::Result<String> {
    if let Some(program) = &state.program {
        return Ok(program.code.clone());
    }
    runs::assemble(state).map_err(|why| {
        anyhow::anyhow!(
            "this session has no program to export yet ({why}); `--format md` or `--format html` export any session"
        )
    })
}

/// A path ending in `.py` gets one runnable file (the program, every test,
/// and a runner); anything else a folder like the engine's `out/`, with
/// the session's input files beside them (its tests read them there).
fn write_python(state: &State, path: &Path) -> anyhow::Result<()> {
    let program = program_of(state)?;
    if path.extension().is_some_and(|e| e == "py") {
        return write_file(path, &single_file(state, &program));
    }
    // Every name joined to the folder is one plain name (a node called
    // `../../x` was refused when the tape was read; this is the second look).
    let folder = session_fs::Folder::create(path)
        .with_context(|| format!("cannot create the folder {}", path.display()))?;
    let put = |file: &str, bytes: &[u8]| {
        folder
            .write(file, bytes, session_fs::PRIVATE_FILE)
            .with_context(|| format!("cannot write {file} into {}", path.display()))
    };
    put(&format!("{}.py", runs::PROGRAM), program.as_bytes())?;
    for (file, text) in runs::program_tests(state) {
        put(&file, text.as_bytes())?;
    }
    for input in &state.inputs {
        // Only the file the tape describes (a tape handed over may name
        // one of the reader's own files).
        let copied = crate::session::tape_check::input_matches(input)
            .map_err(anyhow::Error::msg)
            .and_then(|()| std::fs::read(&input.source_path).map_err(anyhow::Error::from))
            .and_then(|bytes| put(&input.name, &bytes));
        copied.with_context(|| {
            format!(
                "the program and its tests are in {}, but the input file {} could not be copied beside them from {} (they read it): copy it there yourself",
                path.display(),
                input.name,
                input.source_path
            )
        })?;
    }
    Ok(())
}

/// Python that runs every test function defined since the last call, once,
/// under its node's name; test names may repeat across nodes.
const COLLECT_PY: &str = r#"
_TESTS = []


def _collect(node):
    seen = [f for _, _, f in _TESTS]
    for name, f in list(globals().items()):
        if name.startswith("test_") and callable(f) and not any(f is g for g in seen):
            _TESTS.append((node, name, f))
"#;

const RUN_PY: &str = r#"
if __name__ == "__main__":
    import sys
    import traceback

    failed = 0
    for node, name, test in _TESTS:
        try:
            test()
            print(f"PASS {node}: {name}")
        except Exception:
            failed += 1
            print(f"FAIL {node}: {name}")
            traceback.print_exc()
    print(f"{len(_TESTS) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
"#;

/// The program, then each node's tests, then a runner: `python3 FILE` runs
/// every test and ends with `N passed, N failed`.
fn single_file(state: &State, program: &str) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "# {}\n# Exported by codeloop from session {}: the program, its tests, and a runner.\n",
        state.task.lines().next().unwrap_or_default(),
        state.session_id
    ));
    out.push_str(program.trim_end());
    out.push_str("\n\n");
    out.push_str(COLLECT_PY);
    for n in state.nodes_in_order() {
        if let Some(tests) = &n.tests {
            out.push_str(&format!("\n\n# --- tests of {} ---\n", n.spec.name));
            out.push_str(tests.trim_end());
            out.push_str(&format!("\n\n\n_collect({:?})\n", n.spec.name));
        }
    }
    out.push('\n');
    out.push_str(RUN_PY);
    out
}
