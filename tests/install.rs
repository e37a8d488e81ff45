//! codeloop as `cargo install` leaves it: the binary alone, copied into a
//! folder of its own, runs a bundled demo and replays it from another
//! folder with a clean home, while the source tree is out of its reach (a
//! tmpfs mounted over it in a mount namespace of its own, where the tests
//! run as root): nothing it needs is read from the tree at run time. As
//! root and as an ordinary user. `cargo install` itself (minutes of
//! building) is tried by hand: README's install section. Then the shell
//! completions, completed by a real bash, and the man pages, read by man.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::ordinary_user;
use codeloop_testkit::tmux_server;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The source tree, which the binary must not need.
const TREE: &str = env!("CARGO_MANIFEST_DIR");
const PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

/// Where the binary runs and whose it is.
struct Place {
    bin: PathBuf,
    home: PathBuf,
    work: PathBuf,
    python: String,
    /// Run as this user (with runuser), else as the test.
    user: Option<&'static str>,
}

/// `args` for `place`'s binary, with the source tree hidden where that can
/// be done (as root, with unshare); the words say whether it was.
fn argv(place: &Place, args: &[&str]) -> (Vec<String>, &'static str) {
    let mut argv: Vec<String> = Vec::new();
    let hidden = is_root() && Command::new("unshare").arg("--version").output().is_ok();
    if hidden {
        // In a mount namespace of its own, a tmpfs over the tree; the
        // command fails (97, 98) rather than run with the tree in reach.
        argv.extend(
            [
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                "mount -t tmpfs -o size=1m codeloop-hidden \"$0\" || exit 97; test ! -e \"$0/Cargo.toml\" || exit 98; exec \"$@\"",
                TREE,
            ]
            .map(String::from),
        );
    }
    if let Some(user) = place.user {
        // runuser sets HOME to the user's own: the clean one is set again.
        argv.extend(["runuser", "-u", user, "--", "env"].map(String::from));
        argv.push(format!("HOME={}", place.home.display()));
    }
    argv.push(place.bin.display().to_string());
    argv.extend(args.iter().map(|a| a.to_string()));
    let said = if hidden {
        "the source tree hidden"
    } else {
        "the source tree NOT hidden (not root, or no unshare)"
    };
    (argv, said)
}

/// The environment a fresh login has: nothing of the test's.
fn clean_env(place: &Place) -> Vec<(&'static str, String)> {
    vec![
        ("PATH", PATH.to_string()),
        ("HOME", place.home.display().to_string()),
        ("CODELOOP_PYTHON", place.python.clone()),
        ("TERM", "xterm-256color".to_string()),
        ("LANG", "C.UTF-8".to_string()),
    ]
}

fn run(place: &Place, args: &[&str]) -> (Output, &'static str) {
    let (argv, said) = argv(place, args);
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .env_clear()
        .envs(clean_env(place))
        .current_dir(&place.work)
        .output()
        .unwrap();
    (out, said)
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The headless demo, then the replay in a real terminal.
fn demo_and_replay(place: &Place, tag: &str) {
    let (out, said) = run(place, &["run", "--demo", "roman", "--pace", "0"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{tag}: run --demo roman, {said}: {}", out.status);
    assert!(
        out.status.success(),
        "{tag} ({said}): {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(
        stderr.contains("expected 1994, got 2216"),
        "{tag}: the demo's real failure\n{stderr}"
    );
    // Its session is under the clean home, where a fresh install keeps them.
    let sessions = place.home.join(".local/share/codeloop/sessions");
    assert!(
        std::fs::read_dir(&sessions).is_ok_and(|mut d| d.next().is_some()),
        "{tag}: no session under {}",
        sessions.display()
    );

    // The bundled demo's own tape, replayed from the binary alone.
    let name = format!("codeloop-install-{tag}-{}", std::process::id());
    let status = place.work.join("replay.status");
    let (argv, said) = argv(place, &["replay", "roman", "--speed", "100"]);
    let mut tmux = tmux_server::new_session(&name, (120, 36));
    tmux.env_clear()
        .envs(clean_env(place))
        .args(["-c", &place.work.display().to_string()])
        .args([
            "sh",
            "-c",
            "\"$0\" \"$@\"; echo $? > \"$CODELOOP_STATUS\"; sleep 60",
        ])
        .args(&argv)
        .env("CODELOOP_STATUS", &status);
    // tmux passes its client's environment to a server it starts.
    assert!(tmux.status().unwrap().success(), "tmux new-session failed");
    let screen = || {
        let out = Command::new("tmux")
            .args(["-L", &name, "capture-pane", "-p", "-t", &name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let started = Instant::now();
    let shown = loop {
        let s = screen();
        if s.contains("replay finished") {
            break s;
        }
        if started.elapsed() > Duration::from_secs(60) {
            tmux_server::stop(&name);
            panic!("{tag} ({said}): the replay did not finish in a minute; the screen:\n{s}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    println!("{tag}: replay roman, {said}: finished");
    assert!(shown.contains("roman"), "{shown}");
    Command::new("tmux")
        .args(["-L", &name, "send-keys", "-t", &name, "q"])
        .status()
        .unwrap();
    let started = Instant::now();
    while !status.exists() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let code = std::fs::read_to_string(&status).unwrap_or_default();
    tmux_server::stop(&name);
    assert_eq!(
        code.trim(),
        "0",
        "{tag} ({said}): the replay's exit status; the screen:\n{shown}"
    );
}

fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A folder of its own holding only the binary, as root (or whoever runs the tests).
#[test]
fn the_binary_alone_runs_and_replays_a_demo_from_anywhere() {
    if !tmux_available() {
        println!("SKIPPED: tmux is not installed (scripts/test.sh installs it)");
        return;
    }
    let Some(python) = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        println!("SKIPPED: no system python3");
        return;
    };
    let installed = tempfile::tempdir().unwrap();
    let bin = installed.path().join("bin/codeloop");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    codeloop_testkit::copy_binary::copy_binary(
        std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")),
        &bin,
    );
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let place = Place {
        bin,
        home: home.path().to_path_buf(),
        work: work.path().to_path_buf(),
        python: python.to_string(),
        user: None,
    };
    demo_and_replay(&place, "root");
}

#[test]
fn an_ordinary_user_runs_and_replays_a_demo_with_the_binary_alone() {
    if !tmux_available() {
        println!("SKIPPED: tmux is not installed (scripts/test.sh installs it)");
        return;
    }
    let Some((_turn, python, dir, bin)) = ordinary_user::ordinary_user(
        "install",
        std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")),
    ) else {
        return;
    };
    let uid = ordinary_user::user_uid();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    for d in [&home, &work] {
        std::fs::create_dir_all(d).unwrap();
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::chown(d, Some(uid), None).unwrap();
    }
    let place = Place {
        bin,
        home,
        work,
        python: python.to_string(),
        user: Some(ordinary_user::USER),
    };
    demo_and_replay(&place, "user");
}

/// The binary's own completion script, loaded by a real bash, completes
/// the subcommands and their flags.
#[test]
fn bash_completes_the_subcommands_from_the_generated_script() {
    let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("codeloop.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    // As bash runs a completion function (complete -F): the words so far,
    // the cursor's word; the command, the word and the one before as $1-$3.
    let complete = |words: &str, cword: usize| {
        let probe = format!(
            "source '{}'; COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; _codeloop codeloop \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        );
        let out = Command::new("bash")
            .args(["--norc", "--noprofile", "-c", &probe])
            .env_clear()
            .env("PATH", PATH)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let subcommands = complete("codeloop re", 1);
    assert_eq!(subcommands, ["resume", "replay"], "{subcommands:?}");
    let all = complete("codeloop ''", 1);
    for name in ["run", "models", "doctor", "completions", "man", "export"] {
        assert!(all.iter().any(|w| w == name), "{name} in {all:?}");
    }
    let flags = complete("codeloop run --ba", 2);
    assert_eq!(flags, ["--base-url"], "{flags:?}");
    let shells = complete("codeloop completions ''", 2);
    for shell in ["bash", "zsh", "fish"] {
        assert!(shells.iter().any(|w| w == shell), "{shell} in {shells:?}");
    }
}

#[test]
fn zsh_and_fish_scripts_name_the_subcommands() {
    for (shell, marker) in [
        ("zsh", "#compdef codeloop"),
        ("fish", "complete -c codeloop"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_codeloop"))
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(script.contains("replay"), "{shell}: {script}");
    }
}

/// `codeloop man` is a page `man` reads; `--dir` writes one a subcommand.
#[test]
fn the_man_pages_read_in_man() {
    let bin = env!("CARGO_BIN_EXE_codeloop");
    let out = Command::new(bin).arg("man").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH codeloop 1"), "{page}");
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(bin)
        .args(["man", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    for page in [
        "codeloop.1",
        "codeloop-run.1",
        "codeloop-models.1",
        "codeloop-man.1",
    ] {
        assert!(dir.path().join(page).is_file(), "{page} written");
    }
    let Ok(rendered) = Command::new("man")
        .arg("-l")
        .arg(dir.path().join("codeloop-run.1"))
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .env_remove("MANPATH")
        .output()
    else {
        println!("man is not installed: the page was not rendered");
        return;
    };
    let text = String::from_utf8_lossy(&rendered.stdout);
    assert!(rendered.status.success(), "{rendered:?}");
    assert!(text.contains("--base-url"), "{text}");
    assert!(text.contains("codeloop-run"), "{text}");
}
