//! The sandbox against real python3 and real processes: limits end runs with
//! the right verdict, hostile programs are contained, harmless ones work,
//! output streams live and is bounded, and nothing is left running.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-sandbox-helper");

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use codeloop_protocol::Stream;
use codeloop_sandbox::{ExecError, LimitHit, Limits, Outcome, RunSpec, Sandbox};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn limits() -> Limits {
    Limits {
        wall: Duration::from_secs(10),
        cpu_secs: 3,
        memory_bytes: 512 << 20,
        output_bytes: 8 << 20,
        disk_bytes: 32 << 20,
        ..Limits::default()
    }
}

fn spec(code: &str) -> RunSpec {
    RunSpec {
        files: vec![("main.py".into(), code.into())],
        script: "main.py".into(),
        limits: limits(),
        ..RunSpec::default()
    }
}

async fn run(spec: RunSpec) -> Outcome {
    Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))
        .run(spec, None, CancellationToken::new())
        .await
        .unwrap()
}

/// Processes on this machine whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(marker)
        {
            found.push(pid);
        }
    }
    found
}

fn unique(tag: &str) -> String {
    format!(
        "{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

#[tokio::test]
async fn every_layer_is_active_on_this_machine() {
    let sandbox = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER));
    let inactive: Vec<_> = sandbox
        .layer_reports()
        .iter()
        .filter(|l| !l.active)
        .map(|l| format!("{}: {}", l.name, l.detail))
        .collect();
    assert!(inactive.is_empty(), "inactive layers: {inactive:?}");
    let o = run(spec("print('hi')")).await;
    assert_eq!(o.layers, sandbox.active_layers());
    for name in [
        "hygiene",
        "rlimits",
        "uid",
        "landlock",
        "seccomp",
        "namespaces",
    ] {
        assert!(
            o.layers.iter().any(|l| l == name),
            "{name} missing: {:?}",
            o.layers
        );
    }
}

#[tokio::test]
async fn a_trivial_program_runs_with_args_in_a_scrubbed_environment() {
    let mut s = spec(
        "import os, sys\nprint(sys.argv[1:])\nprint(sorted(os.environ))\nprint(os.getcwd() == os.environ['HOME'])\nprint(open('data.txt').read())\n",
    );
    s.args = vec!["a b".into(), "c".into()];
    s.files.push(("data.txt".into(), "payload".into()));
    let o = run(s).await;
    assert_eq!(o.exit_code, Some(0), "{}", o.stderr.text());
    assert_eq!(
        o.stdout.text(),
        "['a b', 'c']\n['HOME', 'LANG', 'LC_ALL', 'PATH', 'PWD', 'TERM', 'TMPDIR']\nTrue\npayload\n"
    );
    assert_eq!(o.limit_hit, None);
}

#[tokio::test]
async fn exit_codes_and_signals_come_back() {
    let o = run(spec("import sys\nsys.exit(3)")).await;
    assert_eq!((o.exit_code, o.signal), (Some(3), None));
    let o = run(spec(
        "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)",
    ))
    .await;
    assert_eq!((o.exit_code, o.signal), (None, Some(libc::SIGSEGV)));
}

#[tokio::test]
async fn output_streams_while_the_program_runs() {
    let (tx, mut rx) = mpsc::channel(16);
    let started = Instant::now();
    let task = tokio::spawn(async move {
        Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))
            .run(
                spec("import time, sys\nprint('first')\nsys.stderr.write('oops\\n')\ntime.sleep(1.5)\nprint('second')\n"),
                Some(tx),
                CancellationToken::new(),
            )
            .await
    });
    let first = rx.recv().await.unwrap();
    let first_at = started.elapsed();
    let mut rest = vec![first];
    while let Some(c) = rx.recv().await {
        rest.push(c);
    }
    let o = task.await.unwrap().unwrap();
    assert!(
        first_at + Duration::from_millis(1000) < started.elapsed(),
        "the first chunk came only at {first_at:?}"
    );
    let text = |s: Stream| {
        rest.iter()
            .filter(|c| c.stream == s)
            .map(|c| c.text.as_str())
            .collect::<String>()
    };
    assert_eq!(text(Stream::Stdout), "first\nsecond\n");
    assert_eq!(text(Stream::Stderr), "oops\n");
    assert_eq!(o.stdout.text(), "first\nsecond\n");
}

#[tokio::test]
async fn a_timeout_kills_the_whole_group_and_leaves_nothing_running() {
    let marker = unique("codeloop-test-sleeper");
    let code = format!(
        "import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', '{marker}'])\nsubprocess.Popen([sys.executable, '-c', 'import os, time; os.setsid(); time.sleep(60)', '{marker}'])\ntime.sleep(60)\n"
    );
    let mut s = spec(&code);
    s.limits.wall = Duration::from_secs(1);
    let started = Instant::now();
    let o = run(s).await;
    assert_eq!(
        o.limit_hit,
        Some(LimitHit::WallTimeout(Duration::from_secs(1)))
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        o.limit_hit.as_ref().unwrap().describe(),
        "wall-clock timeout of 1 s"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(processes_with(&marker), Vec::<u32>::new());
}

#[tokio::test]
async fn a_fork_bomb_meets_the_process_limit_and_leaves_nothing() {
    let marker = unique("codeloop-test-forkbomb");
    let code = format!(
        "import os, sys, time\nif len(sys.argv) < 2:\n    os.execv(sys.executable, [sys.executable, sys.argv[0], '{marker}'])\nwhile True:\n    os.fork()\n"
    );
    let o = run(spec(&code)).await;
    assert_eq!(
        o.limit_hit,
        Some(LimitHit::Processes(64)),
        "{}",
        o.stderr.text()
    );
    assert!(o.stderr.text().contains("BlockingIOError"));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(processes_with(&marker), Vec::<u32>::new());
}

#[tokio::test]
async fn a_memory_bomb_meets_the_memory_limit() {
    let o = run(spec(
        "x = []\nwhile True:\n    x.append(bytearray(32 << 20))\n",
    ))
    .await;
    assert_eq!(o.limit_hit, Some(LimitHit::Memory(512 << 20)));
    assert_eq!(o.limit_hit.unwrap().describe(), "memory limit of 512 MiB");
}

#[tokio::test]
async fn a_cpu_spin_meets_the_cpu_limit() {
    let mut s = spec("while True:\n    pass\n");
    s.limits.cpu_secs = 1;
    // On a busy machine one second of CPU time can take many seconds: the
    // CPU limit, not the wall clock, must be what stops it.
    s.limits.wall = Duration::from_secs(120);
    let o = run(s).await;
    assert_eq!(o.limit_hit, Some(LimitHit::CpuTime(1)));
    assert_eq!(o.signal, Some(libc::SIGXCPU));
}

#[tokio::test]
async fn a_200_mb_flood_is_cut_at_the_output_limit_and_kept_as_head_and_tail() {
    let log = tempfile::tempdir().unwrap();
    let log_path = log.path().join("run.log");
    let mut s = spec(
        "import sys\nline = 'x' * 1023 + '\\n'\nsys.stdout.write('HEAD\\n')\nfor _ in range(200 * 1024):\n    sys.stdout.write(line)\n",
    );
    s.limits.output_keep_bytes = 1024;
    s.log_path = Some(log_path.clone());
    let o = run(s).await;
    assert_eq!(o.limit_hit, Some(LimitHit::Output(8 << 20)));
    assert!(o.stdout.head.starts_with("HEAD\n"));
    assert_eq!(o.stdout.tail.len(), 1024);
    assert!(o.stdout.dropped_bytes > (8 << 20) - 2048);
    assert!(o.stdout.text().contains(" bytes dropped ...]"));
    let logged = std::fs::metadata(&log_path).unwrap().len();
    assert!(logged > 8 << 20, "the log holds {logged} bytes");
}

#[tokio::test]
async fn filling_the_disk_meets_the_quota() {
    let o = run(spec(
        "chunk = b'x' * (1 << 20)\nfor i in range(1000):\n    with open(f'f{i}', 'wb') as f:\n        f.write(chunk)\n",
    ))
    .await;
    assert!(
        matches!(o.limit_hit, Some(LimitHit::Disk(_))),
        "{:?}",
        o.limit_hit
    );
}

#[tokio::test]
async fn writes_outside_the_working_directory_fail() {
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let target = dir.path().join("escaped");
    let code = format!(
        "import sys\nfor p in ['{}', '/etc/codeloop-test-escape']:\n    try:\n        open(p, 'w').write('x')\n        print('WROTE', p)\n    except OSError as e:\n        print('DENIED', type(e).__name__)\nopen('inside.txt', 'w').write('fine')\nprint(open('inside.txt').read())\n",
        target.display()
    );
    let o = run(spec(&code)).await;
    let out = o.stdout.text();
    assert!(!out.contains("WROTE"), "{out}");
    assert_eq!(out.matches("DENIED").count(), 2, "{out}");
    assert!(out.ends_with("fine\n"));
    assert!(!target.exists());
    assert!(!std::path::Path::new("/etc/codeloop-test-escape").exists());
}

#[tokio::test]
async fn a_file_in_home_cannot_be_read() {
    let home = std::env::var("HOME").unwrap();
    let secret = unique("secret");
    let file = tempfile::Builder::new()
        .prefix(".codeloop-test-secret-")
        .tempfile_in(&home)
        .unwrap();
    std::fs::write(file.path(), &secret).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
    let code = format!(
        "try:\n    print(open('{}').read())\nexcept OSError as e:\n    print('DENIED', type(e).__name__)\n",
        file.path().display()
    );
    let o = run(spec(&code)).await;
    let out = o.stdout.text();
    assert!(!out.contains(&secret), "{out}");
    assert!(out.starts_with("DENIED"), "{out}");
}

#[tokio::test]
async fn a_tcp_connect_to_a_loopback_listener_fails() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let code = format!(
        "import socket\ntry:\n    s = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    s.sendall(b'escaped')\n    print('CONNECTED')\nexcept OSError as e:\n    print('DENIED', type(e).__name__)\n"
    );
    let o = run(spec(&code)).await;
    assert!(o.stdout.text().starts_with("DENIED"), "{}", o.stdout.text());
    match listener.accept() {
        Ok((mut s, _)) => {
            let mut buf = Vec::new();
            let _ = s.read_to_end(&mut buf);
            panic!("the listener was reached: {buf:?}");
        }
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock),
    }
}

#[tokio::test]
async fn the_parents_environment_is_out_of_reach() {
    let code = format!(
        "import os\nleaks = []\nfor pid in ['{}', '1', str(os.getppid())]:\n    try:\n        if open(f'/proc/{{pid}}/environ', 'rb').read():\n            leaks.append(pid)\n    except OSError:\n        pass\nprint('LEAKS', leaks)\nprint('KEYS', sorted(k for k in os.environ if 'KEY' in k or 'TOKEN' in k or 'SSH' in k))\n",
        std::process::id()
    );
    let o = run(spec(&code)).await;
    assert_eq!(o.stdout.text(), "LEAKS []\nKEYS []\n");
}

#[tokio::test]
async fn harmless_programs_still_work() {
    let code = r#"import threading, multiprocessing as mp, sqlite3, tempfile, os
def sq(x):
    return x * x
if __name__ == '__main__':
    out = []
    ts = [threading.Thread(target=out.append, args=(i,)) for i in range(16)]
    for t in ts: t.start()
    for t in ts: t.join()
    print('threads', sum(out))
    with mp.Pool(2) as p:
        print('pool', sum(p.map(sq, range(10))))
    q = mp.Queue()
    pr = mp.Process(target=q.put, args=(7,))
    pr.start(); print('process', q.get()); pr.join()
    db = sqlite3.connect('t.db')
    db.execute('create table t(x)'); db.execute('insert into t values (5)'); db.commit()
    print('sqlite', db.execute('select x from t').fetchone()[0])
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, 'a'), 'w').write('hello')
        print('tempdir', open(os.path.join(d, 'a')).read())
"#;
    let o = run(spec(code)).await;
    assert_eq!(o.exit_code, Some(0), "{}", o.stderr.text());
    assert_eq!(
        o.stdout.text(),
        "threads 120\npool 285\nprocess 7\nsqlite 5\ntempdir hello\n"
    );
}

#[tokio::test]
async fn collected_files_come_back_but_never_through_a_symlink() {
    let mut s = spec(
        "import os\nopen('report.json', 'w').write('{\"ok\": true}')\nos.symlink('/etc/hostname', 'link.json')\n",
    );
    s.collect = vec![
        "report.json".into(),
        "link.json".into(),
        "missing.json".into(),
    ];
    let o = run(s).await;
    assert_eq!(o.exit_code, Some(0), "{}", o.stderr.text());
    assert_eq!(
        o.collected,
        vec![("report.json".to_string(), b"{\"ok\": true}".to_vec())]
    );
}

#[tokio::test]
async fn cancelling_stops_the_run_at_once() {
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        c.cancel();
    });
    let started = Instant::now();
    let r = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))
        .run(spec("import time\ntime.sleep(30)\n"), None, cancel)
        .await;
    assert!(matches!(r, Err(ExecError::Cancelled)), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn file_names_that_leave_the_working_directory_are_refused() {
    let mut s = spec("print(1)");
    s.files.push(("../evil.py".into(), "x".into()));
    let r = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))
        .run(s, None, CancellationToken::new())
        .await;
    let err = r.unwrap_err().to_string();
    assert!(err.contains("../evil.py"), "{err}");
}

#[tokio::test]
async fn without_namespaces_no_process_can_leave_the_group() {
    let sandbox = Sandbox::probe(&codeloop_sandbox::SandboxOptions {
        allow_reduced: true,
        without: vec![codeloop_sandbox::Layer::Namespaces],
        // Root without namespaces needs an interpreter other uids can read.
        interpreter: Some("/usr/bin/python3".into()).filter(|p: &std::path::PathBuf| p.exists()),
        helper: Some(HELPER.into()),
        ..Default::default()
    });
    assert!(!sandbox.active_layers().contains(&"namespaces".to_string()));
    let marker = unique("codeloop-test-escapee");
    let code = format!(
        "import subprocess, sys, time\nfor new_session in (True, False):\n    try:\n        subprocess.Popen([sys.executable, '-c', 'import os, time\\ntry:\\n    os.setsid()\\nexcept OSError:\\n    pass\\ntime.sleep(60)', '{marker}'], start_new_session=new_session)\n        print('spawned', new_session)\n    except OSError as e:\n        print('refused', new_session, type(e).__name__)\ntime.sleep(60)\n"
    );
    let mut s = spec(&code);
    s.limits.wall = Duration::from_secs(1);
    let o = sandbox
        .run(s, None, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        o.limit_hit,
        Some(LimitHit::WallTimeout(Duration::from_secs(1)))
    );
    assert!(
        o.stdout.text().contains("spawned False"),
        "{}",
        o.stdout.text()
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(processes_with(&marker), Vec::<u32>::new());
}
