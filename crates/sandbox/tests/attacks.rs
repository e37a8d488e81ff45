//! The hostile programs that got through without bubblewrap, run in every
//! mode this machine gives: the helper's own namespaces, a system
//! bubblewrap, and the reduced sandbox (no namespaces), as root here (as an
//! ordinary user through `codeloop exec`: the root's `tests/exec_attacks.rs`).
//! Each must be contained with the expected message; the harmless programs
//! (threads, multiprocessing, sqlite, temporary files) must work in every
//! mode. Only loopback and local files are touched.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-sandbox-helper");

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use codeloop_sandbox::{LimitHit, Limits, Outcome, RunSpec, Sandbox, SandboxMode, SandboxOptions};
use codeloop_testkit::ordinary_user::scratch;
use tokio_util::sync::CancellationToken;

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
        Mode::Native => SandboxOptions {
            helper: Some(HELPER.into()),
            ..SandboxOptions::default()
        },
        Mode::Bwrap => SandboxOptions {
            native_namespaces: false,
            helper: Some(HELPER.into()),
            ..SandboxOptions::default()
        },
        Mode::Reduced => SandboxOptions {
            helper: Some(HELPER.into()),
            without: vec![codeloop_sandbox::Layer::Namespaces],
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
    let root = codeloop_sandbox::is_root();
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

/// State one run could leave for the next outside its files (an extended
/// attribute, SysV queues, segments and semaphores, a POSIX queue) and
/// memory no limit counts (a memfd): refused in every mode, so a later run
/// sees none of it, and nothing is left in this IPC namespace (the host's,
/// for the reduced sandbox) (issue 41).
#[tokio::test]
async fn a_run_leaves_no_lasting_state_for_the_next_in_every_mode() {
    use codeloop_testkit::lasting_state::{LASTING_STATE_PY, left_in_this_ipc_namespace};
    let leaves =
        format!("{LASTING_STATE_PY}\nprint([c for c in CHANNELS + ['memfd'] if leave(c)])\n");
    let looks = format!("{LASTING_STATE_PY}\nprint([c for c in CHANNELS if seen(c)])\n");
    for mode in MODES {
        let Some(s) = sandbox(mode) else { continue };
        let o = run(&s, &leaves, &[]).await;
        assert_eq!(o.stdout.text(), "[]\n", "{mode:?}: {}", out(&o));
        let o = run(&s, &looks, &[]).await;
        assert_eq!(o.stdout.text(), "[]\n", "{mode:?}: {}", out(&o));
        assert_eq!(left_in_this_ipc_namespace(), Vec::<&str>::new(), "{mode:?}");
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
        without: vec![codeloop_sandbox::Layer::Namespaces],
        allow_reduced: false,
        interpreter: system_python_for_root(),
        helper: Some(HELPER.into()),
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
    if !codeloop_sandbox::is_root() {
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
        without: vec![codeloop_sandbox::Layer::Namespaces],
        allow_reduced: true,
        interpreter: Some(private),
        helper: Some(HELPER.into()),
        ..SandboxOptions::default()
    });
    let err = s
        .run(spec("print('ran')", &[]), None, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("would stay root"), "{err}");
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

#[tokio::test]
async fn descriptors_codeloop_inherited_do_not_reach_the_program() {
    let dir = scratch("fd");
    let secret = dir.path().join("outside.txt");
    std::fs::write(&secret, "outside").unwrap();
    // As a shell or terminal would leave one open: no close-on-exec.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&secret)
        .unwrap();
    rustix::io::fcntl_setfd(&file, rustix::io::FdFlags::empty()).unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
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
    drop(file);
}
