//! The hostile programs of the sandbox's own `crates/sandbox/tests/attacks.rs`
//! through the binary: `codeloop exec` as an ordinary user when one can be
//! created (every layer the user gets, or the reduced sandbox, chosen), and
//! its refusal of a reduced sandbox nobody chose. Each must be contained
//! with the expected message, and leave nothing running. Only loopback and
//! local files are touched.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use codeloop_sandbox::procstatus::ProcStatus;
use codeloop_testkit::ordinary_user::{USER, ordinary_user, scratch, user_uid};

fn system_python_for_root() -> Option<PathBuf> {
    let root = codeloop_sandbox::is_root();
    ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| root && p.exists())
}

/// As an ordinary user, through `codeloop exec`: every layer, or the reason why not.
#[test]
fn an_ordinary_user_gets_every_layer_and_the_attacks_stay_contained() {
    let Some((_turn, python, dir, bin)) =
        ordinary_user("user", std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")))
    else {
        return;
    };
    let user = USER;
    let script = dir.path().join("attack.py");
    std::fs::write(
        &script,
        "import os, socket\nfor p in ('/etc/shadow', '/dev/tty', '/root'):\n    try:\n        os.listdir(p) if p == '/root' else open(p, 'rb').close()\n        print('OPENED', p)\n    except OSError:\n        print('refused', p)\ntry:\n    open('/proc/1/environ', 'rb').read(); print('OPENED environ')\nexcept OSError:\n    print('refused environ')\nprint('uid', os.getuid())\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let doctor = Command::new("runuser")
        .args(["-u", user, "--"])
        .arg(&bin)
        .args(["doctor", "--layers-only"])
        .env("CODELOOP_PYTHON", python)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&doctor.stdout).to_string();
    println!("{report}");
    let exec = Command::new("runuser")
        .args(["-u", user, "--"])
        .arg(&bin)
        .arg("exec")
        .arg(&script)
        .env("CODELOOP_PYTHON", python)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&exec.stdout).to_string();
    let stderr = String::from_utf8_lossy(&exec.stderr).to_string();
    if report.contains("mode         full") {
        assert!(!stderr.contains("REDUCED"), "{stderr}");
    } else {
        // No user namespaces for this user here: refused unless chosen.
        println!("the user gets the reduced sandbox here: {report}");
        assert!(stderr.contains("--sandbox reduced"), "{stderr}");
        return;
    }
    assert!(stdout.contains("refused environ"), "{stdout}\n{stderr}");
    assert!(!stdout.contains("OPENED"), "{stdout}\n{stderr}");
}

/// `codeloop exec` in the reduced sandbox: refused unless chosen, and then
/// announced in red on every run.
#[test]
fn exec_refuses_the_reduced_sandbox_unless_chosen_and_then_warns_in_red() {
    let dir = scratch("cli");
    let script = dir.path().join("hello.py");
    std::fs::write(&script, "print('hello from the run')\n").unwrap();
    let python = system_python_for_root()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "python3".into());
    let exec = |choice: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_codeloop"));
        cmd.arg("exec")
            .arg(&script)
            .env("CODELOOP_SANDBOX_WITHOUT", "namespaces")
            .env("CODELOOP_PYTHON", &python)
            .env_remove("CODELOOP_SANDBOX")
            .current_dir(dir.path());
        if let Some(c) = choice {
            cmd.args(["--sandbox", c]);
        }
        let o = cmd.output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).to_string(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let (code, stdout, stderr) = exec(None);
    assert_ne!(code, Some(0), "{stdout}{stderr}");
    assert!(!stdout.contains("hello from the run"), "{stdout}");
    assert!(stderr.contains("--sandbox reduced"), "{stderr}");
    let (code, stdout, stderr) = exec(Some("reduced"));
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("hello from the run"), "{stdout}");
    assert!(
        stderr.contains("\x1b[1;31mREDUCED SANDBOX: namespaces not active"),
        "{stderr}"
    );
}

/// `codeloop exec --sandbox reduced` as an ordinary user, with the
/// namespaces left out: `script` (written into a directory the user can
/// read) run with `args`; (exit code, stdout, stderr).
fn reduced_as_user(
    python: &str,
    dir: &Path,
    bin: &Path,
    script: &str,
    args: &[&str],
) -> (Option<i32>, String, String) {
    let path = dir.join("main.py");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = Command::new("runuser")
        .args(["-u", USER, "--"])
        .arg(bin)
        .args(["exec", "--sandbox", "reduced", "--timeout", "60"])
        .arg(&path)
        .arg("--")
        .args(args)
        .env("CODELOOP_PYTHON", python)
        .env("CODELOOP_SANDBOX_WITHOUT", "namespaces")
        .env("CODELOOP_CONFIG", dir.join("none.toml"))
        .env_remove("CODELOOP_SANDBOX")
        .current_dir(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(stderr.contains("REDUCED SANDBOX"), "{stderr}");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).to_string(),
        stderr,
    )
}

/// Files of the test user in the host's /dev/shm.
fn users_shm_files() -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let uid = user_uid();
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == uid))
        .map(|e| e.path())
        .collect()
}

#[test]
fn multiprocessing_works_in_the_reduced_sandbox_of_a_user_without_the_hosts_dev_shm() {
    let Some((_turn, python, dir, bin)) = ordinary_user(
        "user-mp",
        std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")),
    ) else {
        return;
    };
    let code = r#"
import multiprocessing as mp, sqlite3, tempfile, threading, os
def work(q, v, lock):
    with lock:
        v.value += 1
    q.put(os.getpid() > 0)
def square(x):
    return x * x
if __name__ == '__main__':
    seen = []
    ts = [threading.Thread(target=lambda i=i: seen.append(i)) for i in range(4)]
    [t.start() for t in ts]; [t.join() for t in ts]
    for method in ('fork', 'spawn'):
        ctx = mp.get_context(method)
        with ctx.Pool(2) as pool:
            squares = pool.map(square, range(5))
        q, v, lock = ctx.Queue(), ctx.Value('i', 0), ctx.RLock()
        ps = [ctx.Process(target=work, args=(q, v, lock)) for _ in range(3)]
        [p.start() for p in ps]; [p.join() for p in ps]
        got = [q.get(timeout=10) for _ in range(3)]
        bounded = ctx.BoundedSemaphore(1)
        try:
            bounded.release()
        except ValueError:
            over = 'refused'
        print(method, 'pool', squares, 'processes', v.value, got, 'over-release', over)
    db = sqlite3.connect(os.path.join(tempfile.mkdtemp(), 'x.db'))
    db.execute('create table t (v)'); db.execute('insert into t values (3)')
    with tempfile.NamedTemporaryFile('w') as f:
        f.write('x')
    print('threads', len(seen), 'sqlite', db.execute('select v from t').fetchone()[0])
    try:
        open('/dev/shm/codeloop-reduced-probe', 'w').write('x')
        print('WROTE the host /dev/shm')
    except OSError:
        print('host /dev/shm refused')
"#;
    let before = users_shm_files();
    let (status, stdout, stderr) = reduced_as_user(python, dir.path(), &bin, code, &[]);
    assert_eq!(status, Some(0), "{stdout}\n{stderr}");
    for method in ["fork", "spawn"] {
        assert!(
            stdout.contains(&format!(
                "{method} pool [0, 1, 4, 9, 16] processes 3 [True, True, True] over-release refused"
            )),
            "{stdout}\n{stderr}"
        );
    }
    assert!(stdout.contains("threads 4 sqlite 3"), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("host /dev/shm refused"),
        "{stdout}\n{stderr}"
    );
    assert_eq!(users_shm_files(), before, "the run left files in /dev/shm");
}

#[test]
fn the_users_own_files_in_the_hosts_dev_shm_are_out_of_reach_in_the_reduced_sandbox() {
    let Some((_turn, python, dir, bin)) = ordinary_user(
        "user-shm",
        std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")),
    ) else {
        return;
    };
    let secret = PathBuf::from(format!(
        "/dev/shm/codeloop-test-secret-{}",
        std::process::id()
    ));
    std::fs::write(&secret, "the user's secret").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&secret, Some(user_uid()), None).unwrap();
    let code = "import os, sys\ntry:\n    print('READ', open(sys.argv[1]).read())\nexcept OSError as e:\n    print('refused', e.errno)\ntry:\n    print('LISTED', os.listdir('/dev/shm'))\nexcept OSError as e:\n    print('refused listing', e.errno)\n";
    let path = secret.display().to_string();
    let (status, stdout, stderr) = reduced_as_user(python, dir.path(), &bin, code, &[&path]);
    let _ = std::fs::remove_file(&secret);
    assert_eq!(status, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("refused 13"), "{stdout}\n{stderr}");
    assert!(
        !stdout.contains("READ") && !stdout.contains("LISTED"),
        "{stdout}\n{stderr}"
    );
}

/// An ordinary user's runs in the reduced sandbox share the host's IPC
/// namespace: one run leaves no extended attribute, SysV queue, segment
/// or semaphore, POSIX queue or memfd (all refused), so the next finds
/// none, and the host holds nothing of theirs after (issue 41).
#[test]
fn a_users_run_leaves_the_next_no_lasting_state_in_the_reduced_sandbox() {
    use codeloop_testkit::lasting_state::{LASTING_STATE_PY, left_in_this_ipc_namespace};
    let Some((_turn, python, dir, bin)) = ordinary_user(
        "user-lasting",
        std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")),
    ) else {
        return;
    };
    let leaves =
        format!("{LASTING_STATE_PY}\nprint([c for c in CHANNELS + ['memfd'] if leave(c)])\n");
    let looks = format!("{LASTING_STATE_PY}\nprint([c for c in CHANNELS if seen(c)])\n");
    for code in [&leaves, &looks] {
        let (status, stdout, stderr) = reduced_as_user(python, dir.path(), &bin, code, &[]);
        assert_eq!(status, Some(0), "{stdout}\n{stderr}");
        assert_eq!(stdout, "[]\n", "{stderr}");
    }
    assert_eq!(left_in_this_ipc_namespace(), Vec::<&str>::new());
}

#[test]
fn a_fork_bomb_is_contained_in_the_reduced_sandbox_of_a_user() {
    let Some((_turn, python, dir, bin)) = ordinary_user(
        "user-bomb",
        std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")),
    ) else {
        return;
    };
    let bomb = "import os\nwhile True:\n    os.fork()\n";
    let (status, stdout, stderr) = reduced_as_user(python, dir.path(), &bin, bomb, &[]);
    assert!(
        stderr.contains("process limit of 64 processes and threads"),
        "{status:?}\n{stdout}\n{stderr}"
    );
    assert!(!stderr.contains("wall-clock"), "{stderr}");
    let left = live_processes_of(user_uid());
    assert!(left.is_empty(), "processes of the run were left: {left:?}");
}

#[test]
fn the_fork_servers_jobs_leave_nothing_running_in_the_reduced_sandbox_of_a_user() {
    // There a job cannot have a process group of its own (no pid namespace,
    // setpgid refused), so the server, a child subreaper, kills what comes
    // back to it; the doctor's probe leaves a process behind and looks.
    let Some((_turn, python, dir, bin)) = ordinary_user(
        "user-fork-server",
        std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")),
    ) else {
        return;
    };
    let o = Command::new("runuser")
        .args(["-u", USER, "--"])
        .arg(&bin)
        .args(["doctor", "--sandbox", "reduced", "--without", "namespaces"])
        .env("CODELOOP_PYTHON", python)
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .env("HOME", dir.path())
        .env_remove("CODELOOP_SANDBOX")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let report =
        String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    let line = report
        .lines()
        .find(|l| l.contains("fork server: previous job's leftovers"))
        .unwrap_or_else(|| panic!("no leftovers probe:\n{report}"));
    assert!(line.trim_start().starts_with("contained"), "{report}");
    let left = live_processes_of(user_uid());
    assert!(left.is_empty(), "processes of the runs were left: {left:?}");
}

/// Processes of `uid` that can still run code: not zombies, and not
/// already sent SIGKILL (on a busy machine a killed process may be listed
/// for a moment longer).
fn live_processes_of(uid: u32) -> Vec<String> {
    let mut live = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(status) = ProcStatus::read(&entry.path()) else {
            continue;
        };
        if status.number("Uid:") == Some(u64::from(uid)) && status.can_still_run() {
            live.push(format!(
                "{} {}",
                entry.file_name().to_string_lossy(),
                status.field("State:")
            ));
        }
    }
    live
}

#[test]
fn the_disk_quota_stops_a_writer_in_the_reduced_sandbox_of_a_user() {
    let Some((_turn, python, dir, bin)) = ordinary_user(
        "user-disk",
        std::path::Path::new(env!("CARGO_BIN_EXE_codeloop")),
    ) else {
        return;
    };
    // Many files, in directories made as it goes: RLIMIT_FSIZE holds each
    // file, the quota the total.
    let fill = "import os\nchunk = b'x' * (1 << 20)\nfor i in range(100000):\n    os.makedirs(f'd{i % 7}/e', exist_ok=True)\n    with open(f'd{i % 7}/e/f{i}', 'wb') as f:\n        f.write(chunk * 8)\n";
    let (status, stdout, stderr) = reduced_as_user(python, dir.path(), &bin, fill, &[]);
    assert!(
        stderr.contains("stopped by the disk quota of 256 MiB"),
        "{status:?}\n{stdout}\n{stderr}"
    );
}
