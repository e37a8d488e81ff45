//! Real sessions for the tests of `sessions` and `export`: the bundled demos
//! run headless by the real binary into a data folder of their own.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// One recorded session.
#[derive(Debug, Clone)]
pub struct Session {
    pub demo: String,
    pub id: String,
    pub dir: PathBuf,
    pub exit_code: i32,
}

/// A data folder and the sessions recorded into it, oldest first.
#[derive(Debug)]
pub struct Recorded {
    pub data_dir: PathBuf,
    pub sessions: Vec<Session>,
}

impl Recorded {
    pub fn sessions_dir(&self) -> PathBuf {
        self.data_dir.join("sessions")
    }

    pub fn by_demo(&self, demo: &str) -> &Session {
        self.sessions
            .iter()
            .find(|s| s.demo == demo)
            .unwrap_or_else(|| panic!("no session of {demo}"))
    }
}

/// `codeloop ARGS` against a data folder; its config file does not exist, so
/// only the defaults and the data folder apply.
pub fn codeloop(data_dir: &Path, args: &[&str]) -> Output {
    codeloop_in(data_dir, data_dir, args)
}

/// The same, run in the folder `cwd`.
pub fn codeloop_in(data_dir: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(args)
        .current_dir(cwd)
        .env("CODELOOP_DATA_DIR", data_dir)
        .env("CODELOOP_CONFIG", data_dir.join("no-config.toml"))
        .env("COLUMNS", "100")
        .output()
        .expect("run codeloop")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The session folders under `sessions_dir`.
fn folders(sessions_dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(sessions_dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// Run each demo (with extra `run` arguments) into `data_dir`, one after the other.
pub fn record(data_dir: &Path, runs: &[(&str, &[&str])]) -> Recorded {
    let sessions_dir = data_dir.join("sessions");
    let mut sessions = Vec::new();
    for (demo, extra) in runs {
        let before = folders(&sessions_dir);
        let mut args = vec!["run", "--demo", demo, "--pace", "0", "--timeout", "5"];
        args.extend_from_slice(extra);
        let out = codeloop(data_dir, &args);
        let dir = folders(&sessions_dir)
            .into_iter()
            .find(|d| !before.contains(d))
            .unwrap_or_else(|| panic!("{demo} made no session folder: {}", stderr(&out)));
        sessions.push(Session {
            demo: demo.to_string(),
            id: dir.file_name().unwrap().to_string_lossy().into_owned(),
            dir,
            exit_code: out.status.code().unwrap_or(-1),
        });
    }
    Recorded {
        data_dir: data_dir.to_path_buf(),
        sessions,
    }
}

/// The four demos, then roman again with one iteration allowed (so it fails),
/// recorded once per test binary under the target's temporary folder and
/// shared read-only by its tests.
pub fn demos(binary: &str) -> &'static Recorded {
    static RECORDED: OnceLock<Recorded> = OnceLock::new();
    RECORDED.get_or_init(|| {
        let data_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(binary);
        let _ = std::fs::remove_dir_all(&data_dir);
        std::fs::create_dir_all(&data_dir).unwrap();
        record(
            &data_dir,
            &[
                ("wordfreq", &[]),
                ("csvmeans", &[]),
                ("collatz", &[]),
                ("roman", &[]),
                ("roman", &["--max-iterations", "1"]),
            ],
        )
    })
}

/// A copy of a session folder into `data_dir`'s sessions, for a test that changes it.
pub fn copy_session(from: &Path, data_dir: &Path) -> PathBuf {
    let to = data_dir.join("sessions").join(from.file_name().unwrap());
    std::fs::create_dir_all(&to).unwrap();
    std::fs::copy(from.join("tape.jsonl"), to.join("tape.jsonl")).unwrap();
    to
}
