//! The hostile programs that got through without bubblewrap, run in every
//! mode this machine gives: the helper's own namespaces, a system
//! bubblewrap, and the reduced sandbox (no namespaces), as root here, and
//! as an ordinary user through `codeloop exec` when one can be created.
//! Each must be contained with the expected message; the harmless programs
//! (threads, multiprocessing, sqlite, temporary files) must work in every
//! mode. Only loopback and local files are touched.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use codeloop::exec::procstatus::ProcStatus;
use codeloop::exec::{LimitHit, Limits, Outcome, RunSpec, Sandbox, SandboxMode, SandboxOptions};
use tokio_util::sync::CancellationToken;

#[path = "support/ordinary_user.rs"]
mod ordinary_user;
use ordinary_user::{USER, ordinary_user, scratch, user_uid};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// The helper's own namespaces.
    Native,
    /// A system bubblewrap (skipped where it is not installed).
    Bwrap,
    /// No namespaces: the reduced sandbox, chosen explicitly.
    Reduced,
}

const MODES: [Mode; 3] = [Mode::Native, Mode::Bwrap, Mode::Reduced];

fn sandbox(mode: Mode) -> Option<Sandbox> {
    let options = match mode {
        Mode::Native => SandboxOptions::default(),
        Mode::Bwrap => SandboxOptions {
            native_namespaces: false,
            ..SandboxOptions::default()
        },
        Mode::Reduced => SandboxOptions {
            without: vec![codeloop::exec::Layer::Namespaces],
            allow_reduced: true,
            // Root without namespaces needs an interpreter its run uid can
            // read (refused otherwise: see below).
            interpreter: system_python_for_root(),
            ..SandboxOptions::default()
        },
    };
    let s = Sandbox::probe(&options);
    let ns = s
        .layer_reports()
        .iter()
        .find(|l| l.name == "namespaces")
        .cloned()?;
    match mode {
        Mode::Native => {
            assert!(ns.active && ns.detail.starts_with("built in"), "{ns:?}");
            assert_eq!(s.mode(), SandboxMode::Full, "{:?}", s.layer_reports());
            assert_eq!(s.warning(), None);
        }
        Mode::Bwrap => {
            if !ns.active {
                println!("skipped: no working bubblewrap here ({})", ns.detail);
                return None;
            }
            assert!(ns.detail.starts_with("bubblewrap"), "{ns:?}");
        }
        Mode::Reduced => {
            assert_eq!(s.mode(), SandboxMode::Reduced);
            assert!(s.warning().unwrap().contains("REDUCED SANDBOX"));
        }
    }
    Some(s)
}

fn system_python_for_root() -> Option<PathBuf> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| root && p.exists())
}

fn spec(code: &str, args: &[String]) -> RunSpec {
    RunSpec {
        files: vec![("main.py".into(), code.into())],
        script: "main.py".into(),
        args: args.to_vec(),
        limits: Limits {
            wall: Duration::from_secs(20),
            cpu_secs: 10,
            disk_bytes: 64 << 20,
            ..Limits::default()
        },
        ..RunSpec::default()
    }
}

/// An inode flood: empty files until something stops it. Each costs the
/// host kernel memory whatever its size, so the byte quota cannot hold it.
#[tokio::test]
async fn a_flood_of_empty_files_stops_at_the_file_limit_in_every_mode() {
    // /tmp and /dev/shm first (in some modes their own file systems), then
    // the working directory.
    let flood = "import os\nfor d in ('/tmp', '/dev/shm', '.'):\n    made = 0\n    try:\n        for i in range(30000):\n            open(os.path.join(d, 'f%d' % i), 'w').close()\n            made += 1\n        print(d, 'made', made, flush=True)\n    except OSError as e:\n        print(d, 'stopped', made, e.errno, flush=True)\n";
    for mode in MODES {
        let Some(s) = sandbox(mode) else { continue };
        let mut job = spec(flood, &[]);
        job.limits.max_files = 2000;
        let o = s.run(job, None, CancellationToken::new()).await.unwrap();
        // Each place: refused outright (not writable here), stopped by the
        // kernel at the limit, or the run stopped by codeloop's count.
        for line in o.stdout.text().lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let held = match words[..] {
                [_, "stopped", n, errno] => n.parse::<u64>().unwrap() <= 2000 + 64 || errno != "28",
                _ => false,
            };
            assert!(held, "{mode:?}: {line}\n{}", out(&o));
        }
        assert!(
            o.limit_hit == Some(LimitHit::Files(2000)) || o.stdout.text().contains(". stopped"),
            "{mode:?}: {}",
            out(&o)
        );
    }
}

/// inotify and fanotify would let a program watch the host's directories
/// bound into its view (and in the reduced sandbox the user's home and
/// /tmp): refused in every mode.
#[tokio::test]
async fn watching_files_is_refused_in_every_mode() {
    let code = "import ctypes, platform\nlibc = ctypes.CDLL(None, use_errno=True)\ncalls = [('inotify_init1', lambda: libc.inotify_init1(0)), ('fanotify_init', lambda: libc.fanotify_init(0, 0))]\nif platform.machine() == 'x86_64':\n    calls.append(('inotify_init', lambda: libc.syscall(253)))\nfor name, call in calls:\n    ctypes.set_errno(0)\n    fd = call()\n    print(name, 'refused' if fd < 0 and ctypes.get_errno() == 1 else 'GOT %d errno %d' % (fd, ctypes.get_errno()))\n";
    for mode in MODES {
        let Some(s) = sandbox(mode) else { continue };
        let o = run(&s, code, &[]).await;
        let stdout = o.stdout.text();
        assert!(
            stdout.contains("inotify_init1 refused") && stdout.contains("fanotify_init refused"),
            "{mode:?}: {}",
            out(&o)
        );
        assert!(!stdout.contains("GOT"), "{mode:?}: {}", out(&o));
    }
}

async fn run(s: &Sandbox, code: &str, args: &[String]) -> Outcome {
    s.run(spec(code, args), None, CancellationToken::new())
        .await
        .unwrap()
}

fn out(o: &Outcome) -> String {
    format!(
        "exit {:?} signal {:?} limit {:?}\nstdout: {}\nstderr: {}",
        o.exit_code,
        o.signal,
        o.limit_hit,
        o.stdout.text(),
        o.stderr.text()
    )
}

#[tokio::test]
async fn a_program_cannot_set_the_setuid_bit_outside_its_directory() {
    for mode in MODES {
        let Some(s) = sandbox(mode) else { continue };
        let dir = scratch("setuid");
        let target = dir.path().join("tool");
        std::fs::copy("/bin/true", &target).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
        let code = "import os, sys\ntry:\n    os.chmod(sys.argv[1], 0o4755)\n    print('CHANGED')\nexcept OSError as e:\n    print('refused', e.errno)\n";
        let o = run(&s, code, &[target.display().to_string()]).await;
        assert!(o.stdout.text().contains("refused"), "{mode:?}: {}", out(&o));
        let m = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(m & 0o7777, 0o755, "{mode:?}");
    }
}

#[tokio::test]
async fn codeloops_own_environment_cannot_be_read_from_proc() {
    for mode in MODES {
        let Some(s) = sandbox(mode) else { continue };
        // Cargo sets CARGO_MANIFEST_DIR in this test's environment.
        let code = "import os\nseen = 0\ntry:\n    pids = os.listdir('/proc')\nexcept OSError:\n    pids = [str(os.getpid() - i) for i in range(1, 2000)]\nfor p in pids:\n    if p.isdigit():\n        try:\n            if b'CARGO_MANIFEST_DIR' in open('/proc/%s/environ' % p, 'rb').read():\n                seen += 1\n        except OSError:\n            pass\nprint('seen', seen)\n";
        let o = run(&s, code, &[]).await;
        assert!(o.stdout.text().contains("seen 0"), "{mode:?}: {}", out(&o));
    }
}

#[tokio::test]
async fn shadow_terminals_and_devices_are_out_of_reach() {
    for mode in MODES {
        let Some(s) = sandbox(mode) else { continue };
        let code = "import os, stat\nfor p in ('/etc/shadow', '/dev/tty', '/dev/pts/0', '/dev/ptmx', '/dev/mem', '/dev/sda', '/dev/vda'):\n    try:\n        open(p, 'rb').close()\n        print('OPENED', p)\n    except OSError as e:\n        print('refused', p)\ntry:\n    os.mknod('dev', stat.S_IFCHR | 0o666, os.makedev(1, 3))\n    print('MADE A DEVICE')\nexcept OSError as e:\n    print('mknod refused', e.errno)\nprint('uid', os.getuid())\n";
        let o = run(&s, code, &[]).await;
        let text = o.stdout.text();
        assert!(
            !text.contains("OPENED") && !text.contains("MADE"),
            "{mode:?}: {}",
            out(&o)
        );
        assert!(text.contains("mknod refused"), "{mode:?}: {}", out(&o));
        assert!(
            !text.contains("uid 0\n"),
            "{mode:?}: runs as root: {}",
            out(&o)
        );
    }
}

#[tokio::test]
async fn a_unix_socket_of_the_user_cannot_be_reached() {
    for mode in MODES {
        let Some(s) = sandbox(mode) else { continue };
        let dir = scratch("socket");
        let path = dir.path().join("server.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let code = "import socket, sys\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect(sys.argv[1])\n    s.sendall(b'run-shell touch /tmp/escaped')\n    print('CONNECTED')\nexcept OSError as e:\n    print('refused', e.errno)\n";
        let o = run(&s, code, &[path.display().to_string()]).await;
        assert!(o.stdout.text().contains("refused"), "{mode:?}: {}", out(&o));
        assert!(listener.accept().is_err(), "{mode:?}: a connection came in");
    }
}

#[tokio::test]
async fn the_users_files_keep_their_modes_and_times() {
    for mode in MODES {
        let Some(s) = sandbox(mode) else { continue };
        let dir = scratch("utime");
        let file = dir.path().join("notes.txt");
        std::fs::write(&file, "mine").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        let before = std::fs::metadata(&file).unwrap().modified().unwrap();
        let code = "import os, sys\nfor what, f in (('utime', lambda p: os.utime(p, (0, 0))), ('chmod', lambda p: os.chmod(p, 0o777)), ('chown', lambda p: os.chown(p, 0, 0))):\n    try:\n        f(sys.argv[1])\n        print('CHANGED', what)\n    except OSError as e:\n        print('refused', what)\n";
        let o = run(&s, code, &[file.display().to_string()]).await;
        assert!(
            !o.stdout.text().contains("CHANGED"),
            "{mode:?}: {}",
            out(&o)
        );
        let meta = std::fs::metadata(&file).unwrap();
        assert_eq!(meta.modified().unwrap(), before, "{mode:?}");
        assert_eq!(meta.permissions().mode() & 0o777, 0o666, "{mode:?}");
    }
}

#[tokio::test]
async fn the_hosts_processes_are_not_listed_and_dev_shm_keeps_nothing() {
    for mode in MODES {
        let Some(s) = sandbox(mode) else { continue };
        let name = format!("codeloop-attack-shm-{}-{mode:?}", std::process::id());
        let code = "import os, sys\nme = sys.argv[1]\ntry:\n    open('/proc/%s/cmdline' % me, 'rb').read()\n    print('SAW THE HOST')\nexcept OSError:\n    print('hidden')\ntry:\n    with open('/dev/shm/' + sys.argv[2], 'w') as f:\n        f.write('left behind')\n    print('wrote shm')\nexcept OSError:\n    print('shm refused')\n";
        let o = run(&s, code, &[std::process::id().to_string(), name.clone()]).await;
        assert!(o.stdout.text().contains("hidden"), "{mode:?}: {}", out(&o));
        assert!(
            !Path::new("/dev/shm").join(&name).exists(),
            "{mode:?}: a file was left in the host's /dev/shm"
        );
    }
}

#[tokio::test]
async fn fallocate_cannot_reserve_past_the_quota() {
    for mode in MODES {
        let Some(s) = sandbox(mode) else { continue };
        let code = "import os\nfd = os.open('big', os.O_WRONLY | os.O_CREAT, 0o600)\ntry:\n    os.posix_fallocate(fd, 0, 4 << 30)\n    print('RESERVED', os.fstat(fd).st_blocks * 512)\nexcept OSError as e:\n    print('refused', e.errno)\n";
        let o = run(&s, code, &[]).await;
        assert!(
            !o.stdout.text().contains("RESERVED"),
            "{mode:?}: {}",
            out(&o)
        );
        // Refused with an error, or ended by the file size limit (SIGXFSZ).
        assert!(
            o.stdout.text().contains("refused") || o.limit_hit.is_some(),
            "{mode:?}: {}",
            out(&o)
        );
    }
}

#[tokio::test]
async fn a_directory_chmodded_to_000_does_not_keep_the_run_folder() {
    for mode in MODES {
        let Some(s) = sandbox(mode) else { continue };
        let code = "import os\nos.makedirs('locked/inner')\nopen('locked/inner/f', 'w').write('x')\ntry:\n    os.chmod('locked', 0)\nexcept OSError:\n    pass\nprint(os.getcwd())\n";
        let o = run(&s, code, &[]).await;
        let dir = PathBuf::from(o.stdout.text().trim());
        assert!(dir.is_absolute(), "{mode:?}: {}", out(&o));
        assert!(!dir.exists(), "{mode:?}: {} was left", dir.display());
    }
}

#[tokio::test]
async fn harmless_programs_work_in_every_mode() {
    let code = r#"
import multiprocessing, sqlite3, tempfile, threading, os
def square(x):
    return x * x
if __name__ == '__main__':
    seen = []
    ts = [threading.Thread(target=lambda i=i: seen.append(i)) for i in range(4)]
    [t.start() for t in ts]; [t.join() for t in ts]
    with multiprocessing.Pool(2) as pool:
        squares = pool.map(square, range(5))
    q = multiprocessing.Queue(); q.put(7)
    db = sqlite3.connect(os.path.join(tempfile.mkdtemp(), 'x.db'))
    db.execute('create table t (v)'); db.execute('insert into t values (3)')
    with tempfile.NamedTemporaryFile('w') as f:
        f.write('x')
    print('threads', len(seen), 'pool', squares, 'queue', q.get(), 'sqlite', db.execute('select v from t').fetchone()[0])
"#;
    for mode in MODES {
        let Some(s) = sandbox(mode) else { continue };
        let o = run(&s, code, &[]).await;
        assert!(
            o.stdout
                .text()
                .contains("threads 4 pool [0, 1, 4, 9, 16] queue 7 sqlite 3"),
            "{mode:?}: {}",
            out(&o)
        );
    }
}

#[tokio::test]
async fn the_reduced_sandbox_is_refused_unless_chosen() {
    let s = Sandbox::probe(&SandboxOptions {
        without: vec![codeloop::exec::Layer::Namespaces],
        allow_reduced: false,
        interpreter: system_python_for_root(),
        ..SandboxOptions::default()
    });
    let err = s
        .run(spec("print('ran')", &[]), None, CancellationToken::new())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("--sandbox reduced"), "{text}");
    assert!(text.contains("namespaces"), "{text}");
}

#[tokio::test]
async fn root_without_namespaces_never_runs_code_as_root() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: not root");
        return;
    }
    let dir = scratch("private-python");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let Some(system) = system_python_for_root() else {
        println!("skipped: no system python3 to copy");
        return;
    };
    // An interpreter other uids cannot reach (as pyenv's under /root).
    let private = dir.path().join("python3");
    std::os::unix::fs::symlink(std::fs::canonicalize(system).unwrap(), &private).unwrap();
    let s = Sandbox::probe(&SandboxOptions {
        without: vec![codeloop::exec::Layer::Namespaces],
        allow_reduced: true,
        interpreter: Some(private),
        ..SandboxOptions::default()
    });
    let err = s
        .run(spec("print('ran')", &[]), None, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("would stay root"), "{err}");
}

/// As an ordinary user, through `codeloop exec`: every layer, or the reason why not.
#[test]
fn an_ordinary_user_gets_every_layer_and_the_attacks_stay_contained() {
    let Some((_turn, python, dir, bin)) = ordinary_user("user") else {
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

#[tokio::test]
async fn an_exit_status_of_137_is_not_read_as_a_kill() {
    for mode in MODES {
        let Some(s) = sandbox(mode) else { continue };
        let o = run(
            &s,
            "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
            &[],
        )
        .await;
        assert_eq!(
            (o.exit_code, o.signal),
            (None, Some(9)),
            "{mode:?}: {}",
            out(&o)
        );
        for status in [137, 139, 255] {
            let o = run(&s, &format!("import sys\nsys.exit({status})\n"), &[]).await;
            assert_eq!(
                (o.exit_code, o.signal),
                (Some(status), None),
                "{mode:?}: {}",
                out(&o)
            );
        }
    }
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
    let Some((_turn, python, dir, bin)) = ordinary_user("user-mp") else {
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
    let Some((_turn, python, dir, bin)) = ordinary_user("user-shm") else {
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

#[test]
fn a_fork_bomb_is_contained_in_the_reduced_sandbox_of_a_user() {
    let Some((_turn, python, dir, bin)) = ordinary_user("user-bomb") else {
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
    let Some((_turn, python, dir, bin)) = ordinary_user("user-fork-server") else {
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
    let Some((_turn, python, dir, bin)) = ordinary_user("user-disk") else {
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

#[tokio::test]
async fn descriptors_codeloop_inherited_do_not_reach_the_program() {
    let dir = scratch("fd");
    let secret = dir.path().join("outside.txt");
    std::fs::write(&secret, "outside").unwrap();
    let path = std::ffi::CString::new(secret.display().to_string()).unwrap();
    // As a shell or terminal would leave one open: no close-on-exec.
    // SAFETY: open with a valid path; the descriptor stays open for the test.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR) };
    assert!(fd > 2);
    let code = "import os, sys\nfd = int(sys.argv[1])\ntry:\n    os.write(fd, b'overwritten')\n    print('WROTE through', os.readlink('/proc/self/fd/%d' % fd))\nexcept OSError as e:\n    print('no such descriptor', e.errno)\nprint('open:', sorted(int(f) for f in os.listdir('/proc/self/fd')))\n";
    for mode in MODES {
        let Some(s) = sandbox(mode) else { continue };
        let o = run(&s, code, &[fd.to_string()]).await;
        assert!(
            o.stdout.text().contains("no such descriptor"),
            "{mode:?}: {}",
            out(&o)
        );
    }
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "outside");
    // SAFETY: closing the descriptor opened above.
    unsafe { libc::close(fd) };
}
