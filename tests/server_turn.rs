//! A server that serves one request at a time has one turn for every
//! codeloop process of the user, kept by a lock file (issue 33). It was a
//! predictable file in the shared temporary folder: another user could
//! plant a FIFO there (codeloop hung, silently), hold its lock (a silent
//! wait), or point a symlink at one of the victim's files (created
//! empty). Now it lives in a folder of the user's own (the runtime
//! folder, else the cache folder, made 0700), is opened without following
//! a link or waiting, and a wait for the turn is said. Tried as root and as
//! an ordinary user (`runuser`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use codeloop_testkit::fault_server;
use codeloop_testkit::ordinary_user;
use fault_server::FaultServer;

/// Who runs codeloop: this process's user, or the ordinary one.
struct Runner {
    bin: PathBuf,
    python: Option<&'static str>,
    uid: Option<u32>,
}

impl Runner {
    fn command(&self) -> Command {
        match self.uid {
            None => Command::new(&self.bin),
            Some(_) => {
                let mut c = Command::new("runuser");
                c.args(["-u", ordinary_user::USER, "--"]).arg(&self.bin);
                c
            }
        }
    }

    fn user_name(&self) -> &str {
        if self.uid.is_some() {
            ordinary_user::USER
        } else {
            "root"
        }
    }
}

/// A home of the runner's own (its cache folder is where the lock goes).
fn home_for(runner: &Runner) -> tempfile::TempDir {
    let home = ordinary_user::scratch("turn-home");
    if let Some(uid) = runner.uid {
        std::os::unix::fs::chown(home.path(), Some(uid), Some(uid)).unwrap();
    }
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    home
}

/// `codeloop run` against `server` as `runner`, with `home`; its stderr
/// lines go to `lines` as they come.
fn start_run(
    runner: &Runner,
    server: &FaultServer,
    home: &Path,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut c = runner.command();
    c.args(["run", "Add two numbers", "--base-url", &server.base_url])
        .args(["--model", "m", "--no-cache"])
        .arg("--out")
        .arg(home.join("out"))
        // runuser sets HOME to the user's own: the cache folder is named.
        .env_remove("XDG_RUNTIME_DIR")
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("HOME", home)
        .env("USER", runner.user_name())
        .env("CODELOOP_DATA_DIR", home.join("data"))
        .env("CODELOOP_CONFIG", home.join("none.toml"))
        .current_dir(home)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(python) = runner.python {
        c.env("CODELOOP_PYTHON", python);
    }
    let mut child = c.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

/// The lines until the run ends (failing after 90 s: it hung).
fn until_end(mut child: std::process::Child, lines: std::sync::mpsc::Receiver<String>) -> String {
    let started = Instant::now();
    let mut said = String::new();
    loop {
        while let Ok(l) = lines.try_recv() {
            said.push_str(&l);
            said.push('\n');
        }
        if child.try_wait().unwrap().is_some() {
            while let Ok(l) = lines.recv_timeout(Duration::from_millis(200)) {
                said.push_str(&l);
                said.push('\n');
            }
            return said;
        }
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("codeloop hung: {said}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Where the lock of `base_url` was before: the shared temporary folder,
/// named from the URL and $USER, so anyone could know it.
fn old_lock_path(base_url: &str, user: &str) -> PathBuf {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    base_url.hash(&mut hasher);
    user.hash(&mut hasher);
    std::env::temp_dir().join(format!("codeloop-server-{:016x}.lock", hasher.finish()))
}

/// Where it is now, for a user whose cache folder is `home`'s and who has
/// no runtime folder.
fn lock_path(home: &Path, base_url: &str) -> PathBuf {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    base_url.hash(&mut hasher);
    home.join(".cache/codeloop/locks")
        .join(format!("server-{:016x}.lock", hasher.finish()))
}

async fn each_plant_is_harmless(runner: Runner) {
    let server = FaultServer::start("I cannot help with that.").await;
    // Another user's FIFO where the lock was: opening it waited forever.
    let old = old_lock_path(&server.base_url, runner.user_name());
    let _ = std::fs::remove_file(&old);
    assert!(Command::new("mkfifo").arg(&old).status().unwrap().success());
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o666)).unwrap();
    let home = home_for(&runner);
    let (child, lines) = start_run(&runner, &server, home.path());
    let said = tokio::task::spawn_blocking(move || until_end(child, lines))
        .await
        .unwrap();
    let _ = std::fs::remove_file(&old);
    assert!(said.contains("result:"), "{said}");
    let lock = lock_path(home.path(), &server.base_url);
    let meta = std::fs::metadata(lock.parent().unwrap()).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o700, "{lock:?}");
    assert!(
        lock.is_file(),
        "the lock is in the user's own folder: {lock:?}"
    );

    // The lock held by another process of the user: the wait is said, and
    // the run goes on once the turn is given back.
    let held = std::fs::OpenOptions::new().write(true).open(&lock).unwrap();
    held.lock().unwrap();
    let (child, lines) = start_run(&runner, &server, home.path());
    let said_wait = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let mut said = String::new();
        while started.elapsed() < Duration::from_secs(60) {
            if let Ok(l) = lines.recv_timeout(Duration::from_millis(100)) {
                said.push_str(&l);
                said.push('\n');
                if l.contains("waiting for the server's turn") {
                    return (said, Some((child, lines)));
                }
            }
        }
        (said, None)
    })
    .await
    .unwrap();
    let (said, rest) = said_wait;
    let (child, lines) = rest.unwrap_or_else(|| panic!("no wait was said: {said}"));
    assert!(
        said.contains("another codeloop process is using it"),
        "{said}"
    );
    drop(held);
    let said = tokio::task::spawn_blocking(move || until_end(child, lines))
        .await
        .unwrap();
    assert!(said.contains("result:"), "{said}");

    // A link in its place (to a file of the user's): not followed, the
    // file not made, and the turn kept within the process, said so.
    std::fs::remove_file(&lock).unwrap();
    let victim = home.path().join("victim.txt");
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    let (child, lines) = start_run(&runner, &server, home.path());
    let said = tokio::task::spawn_blocking(move || until_end(child, lines))
        .await
        .unwrap();
    assert!(said.contains("result:"), "{said}");
    assert!(!victim.exists(), "the link was followed");
    assert!(
        said.contains("the server's turn is kept within this process only"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn planted_fifos_held_locks_and_links_are_harmless() {
    each_plant_is_harmless(Runner {
        bin: PathBuf::from(env!("CARGO_BIN_EXE_codeloop")),
        python: None,
        uid: None,
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
// The guard is the ordinary user's turn: held on purpose for the whole test,
// across its awaits, so no other test uses that user meanwhile.
#[allow(clippy::await_holding_lock)]
async fn planted_fifos_held_locks_and_links_are_harmless_for_an_ordinary_user() {
    let Some((_turn, python, dir, bin)) =
        ordinary_user::ordinary_user("turn", std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")))
    else {
        return;
    };
    let _ = dir;
    each_plant_is_harmless(Runner {
        bin,
        python: Some(python),
        uid: Some(ordinary_user::user_uid()),
    })
    .await;
}
