//! The fork server: warm interpreter, one job at a time, each confined and
//! cleaned up after; hostile jobs do not reach the server or the next job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

/// The sandbox helper cargo built for these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_codeloop-sandbox-helper");

use std::time::Duration;

use codeloop_sandbox::{LimitHit, Limits, RunSpec, Sandbox};

fn job(code: &str) -> RunSpec {
    RunSpec {
        files: vec![("main.py".into(), code.into())],
        script: "main.py".into(),
        limits: Limits {
            wall: Duration::from_secs(3),
            cpu_secs: 2,
            memory_bytes: 512 << 20,
            ..Limits::default()
        },
        ..RunSpec::default()
    }
}

#[tokio::test]
async fn jobs_run_in_fresh_directories_and_leave_nothing_for_the_next() {
    let sandbox = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER));
    let mut server = sandbox.fork_server(Limits::default()).await.unwrap();
    let mut first = job(
        "import os, sys, json\njson.loads('1')\njson.MARK = 1\nopen('left.txt', 'w').write('x')\nprint(sorted(os.listdir('.')), sys.argv[1:])\nopen('report.json', 'w').write('{}')\n",
    );
    first.args = vec!["a".into()];
    first.collect = vec!["report.json".into()];
    let o = server.run(&first).await.unwrap();
    assert_eq!(o.exit_code, Some(0), "{}", o.stderr.text());
    assert_eq!(o.stdout.text(), "['.tmp', 'left.txt', 'main.py'] ['a']\n");
    assert_eq!(
        o.collected,
        vec![("report.json".to_string(), b"{}".to_vec())]
    );
    let o = server
        .run(&job(
            "import os, json\nprint(sorted(os.listdir('.')), hasattr(json, 'MARK'))\n",
        ))
        .await
        .unwrap();
    assert_eq!(o.stdout.text(), "['.tmp', 'main.py'] False\n");
}

#[tokio::test]
async fn a_failing_job_gives_its_traceback_and_exit_code() {
    let mut server = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))
        .fork_server(Limits::default())
        .await
        .unwrap();
    let o = server
        .run(&job("def f(x):\n    return x / 0\nf(1)\n"))
        .await
        .unwrap();
    assert_eq!(o.exit_code, Some(1));
    assert!(
        o.stderr
            .text()
            .contains("ZeroDivisionError: division by zero")
    );
    assert!(o.stderr.text().contains("main.py\", line 2, in f"));
    let o = server.run(&job("import sys\nsys.exit(4)\n")).await.unwrap();
    assert_eq!(o.exit_code, Some(4));
}

#[tokio::test]
async fn a_timeout_ends_the_job_and_its_leftovers_but_not_the_server() {
    let mut server = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))
        .fork_server(Limits::default())
        .await
        .unwrap();
    let mut spin = job(
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\ntime.sleep(60)\n",
    );
    spin.limits.wall = Duration::from_millis(500);
    let o = server.run(&spin).await.unwrap();
    assert_eq!(
        o.limit_hit,
        Some(LimitHit::WallTimeout(Duration::from_millis(500)))
    );
    // The setsid'd grandchild is gone too: the next job sees no sleeper.
    let o = server
        .run(&job("import os\nprint(sum(1 for p in os.listdir('/proc') if p.isdigit() and 'sleep' in open(f'/proc/{p}/cmdline','rb').read().decode(errors='replace')))\n"))
        .await
        .unwrap();
    assert_eq!(o.stdout.text(), "0\n", "{}", o.stderr.text());
}

#[tokio::test]
async fn a_job_cannot_signal_the_server_nor_write_outside_its_directory() {
    let mut server = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))
        .fork_server(Limits::default())
        .await
        .unwrap();
    let o = server
        .run(&job(
            "import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGKILL)\n    print('SIGNALLED')\nexcept OSError as e:\n    print('DENIED', type(e).__name__)\nfor p in ['../escape.txt', '/dev/shm/../escape.txt', os.environ.get('HOME', '.') + '/../x']:\n    try:\n        open(p, 'w').write('x')\n        print('WROTE', p)\n    except OSError as e:\n        print('DENIED', type(e).__name__)\n",
        ))
        .await
        .unwrap();
    let out = o.stdout.text();
    assert!(
        !out.contains("SIGNALLED") && !out.contains("WROTE"),
        "{out}"
    );
    let o = server.run(&job("print('still here')")).await.unwrap();
    assert_eq!(o.stdout.text(), "still here\n");
    assert!(server.is_alive());
}

#[tokio::test]
async fn memory_and_cpu_limits_hold_per_job() {
    let mut server = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))
        .fork_server(Limits::default())
        .await
        .unwrap();
    let o = server
        .run(&job(
            "x = []\nwhile True:\n    x.append(bytearray(32 << 20))\n",
        ))
        .await
        .unwrap();
    assert_eq!(o.limit_hit, Some(LimitHit::Memory(512 << 20)));
    let mut spin = job("while True:\n    pass\n");
    spin.limits.cpu_secs = 1;
    // The CPU limit must be what ends it, however loaded the machine is
    // (one second of CPU time can take many seconds of wall clock).
    spin.limits.wall = Duration::from_secs(120);
    let o = server.run(&spin).await.unwrap();
    assert_eq!(o.limit_hit, Some(LimitHit::CpuTime(1)));
}

#[tokio::test]
async fn filling_the_disk_meets_the_quota_per_job() {
    let mut server = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))
        .fork_server(Limits::default())
        .await
        .unwrap();
    let mut fill = job(
        "import time\nchunk = b'x' * (1 << 20)\nfor i in range(1000):\n    with open(f'f{i}', 'wb') as f:\n        f.write(chunk)\n    time.sleep(0.001)\n",
    );
    fill.limits.disk_bytes = 16 << 20;
    let o = server.run(&fill).await.unwrap();
    assert_eq!(o.limit_hit, Some(LimitHit::Disk(16 << 20)));
}

/// Empty files cost no bytes but host kernel memory: a job's file limit
/// stops a flood of them (the poll counts the job's directory).
#[tokio::test]
async fn a_flood_of_empty_files_meets_the_file_limit_per_job() {
    let mut server = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))
        .fork_server(Limits::default())
        .await
        .unwrap();
    let mut flood = job(
        "import time\nfor i in range(20000):\n    open(f'f{i}', 'w').close()\n    if i % 100 == 0:\n        time.sleep(0.001)\nprint('made them all')\n",
    );
    flood.limits.max_files = 500;
    flood.limits.wall = Duration::from_secs(60);
    let o = server.run(&flood).await.unwrap();
    assert_eq!(
        o.limit_hit,
        Some(LimitHit::Files(500)),
        "{}",
        o.stdout.text()
    );
}

#[tokio::test]
async fn without_namespaces_jobs_stay_confined_and_the_hosts_dev_shm_is_left_alone() {
    let sandbox = Sandbox::probe(&codeloop_sandbox::SandboxOptions {
        allow_reduced: true,
        without: vec![codeloop_sandbox::Layer::Namespaces],
        // Root without namespaces needs an interpreter other uids can read.
        interpreter: Some("/usr/bin/python3".into()).filter(|p: &std::path::PathBuf| p.exists()),
        helper: Some(HELPER.into()),
        ..Default::default()
    });
    let keep = tempfile::Builder::new()
        .prefix("codeloop-test-shm-")
        .tempfile_in("/dev/shm")
        .unwrap();
    let mut server = sandbox.fork_server(Limits::default()).await.unwrap();
    let o = server
        .run(&job(
            "import os\nfor p in ['../escape.txt', '/dev/shm/escape.txt']:\n    try:\n        open(p, 'w').write('x')\n        print('WROTE', p)\n    except OSError as e:\n        print('DENIED', type(e).__name__)\n",
        ))
        .await
        .unwrap();
    assert_eq!(
        o.stdout.text(),
        "DENIED PermissionError\nDENIED PermissionError\n",
        "{}",
        o.stderr.text()
    );
    let o = server.run(&job("print('again')")).await.unwrap();
    assert_eq!(o.stdout.text(), "again\n");
    assert!(
        keep.path().exists(),
        "the fork server wiped the host's /dev/shm"
    );
}

#[tokio::test]
async fn queued_jobs_run_in_order_and_none_sees_what_the_one_before_left() {
    let mut server = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))
        .fork_server(Limits::default())
        .await
        .unwrap();
    // The first leaves a process behind (in a session of its own, under a
    // name the next can look for), files in its directory, its temporary
    // directory and /dev/shm, and a directory nobody can enter or remove.
    let leaves = job(
        "import os, sys\nif os.fork() == 0:\n    os.setsid()\n    os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', 'codeloop-leftover'])\nfor p in ['left.txt', os.path.join(os.environ['TMPDIR'], 'left.txt'), '/dev/shm/left.txt']:\n    try:\n        open(p, 'w').write('x')\n    except OSError:\n        pass\nos.makedirs('locked/inner')\nopen('locked/inner/f', 'w').write('x')\nos.chmod('locked/inner', 0)\nos.chmod('locked', 0)\nimport time\ntime.sleep(0.3)\nprint('left')\n",
    );
    let looks = job(
        "import os\nmine = sorted(os.listdir('.'))\ntmp = os.listdir(os.environ['TMPDIR'])\nshm = [n for n in os.listdir('/dev/shm') if 'left' in n]\nalive = 0\nfor p in os.listdir('/proc'):\n    if p.isdigit():\n        try:\n            alive += b'codeloop-leftover' in open(f'/proc/{p}/cmdline', 'rb').read()\n        except OSError:\n            pass\nprint(mine, tmp, shm, alive)\n",
    );
    // All three are queued before the first has ended.
    server.submit(&leaves).unwrap();
    server.submit(&looks).unwrap();
    server.submit(&job("import sys\nsys.exit(3)\n")).unwrap();
    assert_eq!(server.queued(), 3);
    let first = server.next_outcome().await.unwrap();
    assert_eq!(first.stdout.text(), "left\n", "{}", first.stderr.text());
    let second = server.next_outcome().await.unwrap();
    assert_eq!(
        second.stdout.text(),
        "['.tmp', 'main.py'] [] [] 0\n",
        "{}",
        second.stderr.text()
    );
    let third = server.next_outcome().await.unwrap();
    assert_eq!(third.exit_code, Some(3));
    assert_eq!(server.queued(), 0);
    assert!(server.is_alive());
}

/// A job that changes its own directory (its mode, what is in it; its
/// name and what stands at its path, where it can) leaves the next job the
/// server's one directory, empty, with its mode, and confined to it. Where
/// the kernel has Landlock, each job's nested domain refuses the rename
/// (and so it is here); where it has none, the server makes the directory
/// anew.
#[tokio::test]
async fn a_job_that_changes_its_own_directory_leaves_the_next_a_fresh_one() {
    let changes = job(
        "import os\nhere = os.getcwd()\nopen('left.txt', 'w').write('x')\nos.makedirs('locked/inner')\nos.chmod('locked', 0)\ntry:\n    os.rename(here, here + '-moved')\n    os.symlink('/tmp', here)\n    print('moved')\nexcept OSError as e:\n    print('kept', type(e).__name__)\nos.chmod('.', 0)\n",
    );
    let looks = job(
        "import os\nprint(sorted(os.listdir('.')), oct(os.stat('.').st_mode & 0o777), os.path.islink(os.getcwd()))\ntry:\n    open('../escape.txt', 'w').write('x')\n    print('escaped')\nexcept OSError as e:\n    print('denied', type(e).__name__)\n",
    );
    let sandbox = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER));
    let confined = sandbox
        .layer_reports()
        .iter()
        .any(|l| l.name == "landlock" && l.active);
    let mut server = sandbox.fork_server(Limits::default()).await.unwrap();
    for round in 0..2 {
        let first = server.run(&changes).await.unwrap();
        let said = first.stdout.text();
        if confined {
            assert_eq!(said, "kept PermissionError\n", "{}", first.stderr.text());
        } else {
            assert!(said == "moved\n" || said.starts_with("kept"), "{said}");
        }
        let next = server.run(&looks).await.unwrap();
        let text = next.stdout.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.first().copied(),
            Some("['.tmp', 'main.py'] 0o755 False"),
            "round {round}: {}",
            next.stderr.text()
        );
        if confined {
            assert_eq!(lines.get(1).copied(), Some("denied PermissionError"));
        }
    }
    assert!(server.is_alive());
}

/// A tree as deep as a job likes (1,200 levels, a file at the bottom, the
/// last level locked): the server's disk watch measures all of it (a big
/// file at the bottom meets the quota) and its wipe removes it, neither
/// with the interpreter's recursion; the next job finds a fresh directory.
#[tokio::test]
async fn a_deep_directory_tree_is_measured_and_wiped_and_the_server_goes_on() {
    let deep = |bytes: usize| {
        let mut spec = job(&format!(
            "import os, time\nhere = os.getcwd()\nfor _ in range(1200):\n    os.mkdir('d')\n    os.chdir('d')\nopen('f', 'w').write('x' * {bytes})\nos.chmod('.', 0o500)\nos.chdir(here)\ntime.sleep(0.5)\nprint('made')\n"
        ));
        spec.limits.disk_bytes = 1 << 20;
        spec
    };
    let looks = job("import os\nprint(sorted(os.listdir('.')))\n");
    let mut server = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER))
        .fork_server(Limits::default())
        .await
        .unwrap();
    for bytes in [4096, 2 << 20] {
        let o = server.run(&deep(bytes)).await.unwrap();
        if bytes > 1 << 20 {
            assert_eq!(
                o.limit_hit,
                Some(LimitHit::Disk(1 << 20)),
                "{}",
                o.stderr.text()
            );
        } else {
            assert_eq!(o.stdout.text(), "made\n", "{}", o.stderr.text());
        }
        let next = server.run(&looks).await.unwrap();
        assert_eq!(
            next.stdout.text(),
            "['.tmp', 'main.py']\n",
            "{}",
            next.stderr.text()
        );
    }
    assert!(server.is_alive());
}

/// What a job could leave for the next outside its files, on the server's
/// one IPC namespace and the job directory itself (an extended attribute,
/// SysV queues, segments and semaphores, a POSIX queue; and a memfd,
/// memory no limit counts): refused, and the next job sees none of it
/// (issue 41).
#[tokio::test]
async fn a_job_leaves_the_next_no_attribute_queue_segment_or_semaphore() {
    use codeloop_testkit::lasting_state::LASTING_STATE_PY;
    let sandbox = Sandbox::probe(&codeloop_testkit::sandbox_options(HELPER));
    let mut server = sandbox.fork_server(Limits::default()).await.unwrap();
    let leaves = job(&format!(
        "{LASTING_STATE_PY}\nprint([c for c in CHANNELS + ['memfd'] if leave(c)])\n"
    ));
    let looks = job(&format!(
        "{LASTING_STATE_PY}\nprint([c for c in CHANNELS if seen(c)])\n"
    ));
    for round in 0..2 {
        let first = server.run(&leaves).await.unwrap();
        assert_eq!(
            first.stdout.text(),
            "[]\n",
            "round {round}: {}",
            first.stderr.text()
        );
        let next = server.run(&looks).await.unwrap();
        assert_eq!(
            next.stdout.text(),
            "[]\n",
            "round {round}: {}",
            next.stderr.text()
        );
    }
    assert!(server.is_alive());
}

/// Without seccomp (which refuses writing one), an extended attribute a
/// job sets on its own directory is still not the next job's: each job
/// gets a directory made anew, not the last one emptied.
#[tokio::test]
async fn without_seccomp_a_jobs_extended_attribute_goes_with_its_directory() {
    use codeloop_testkit::lasting_state::LASTING_STATE_PY;
    let options = codeloop_sandbox::SandboxOptions {
        without: vec![codeloop_sandbox::Layer::Seccomp],
        allow_reduced: true,
        ..codeloop_testkit::sandbox_options(HELPER)
    };
    let mut server = Sandbox::probe(&options)
        .fork_server(Limits::default())
        .await
        .unwrap();
    let leaves = job(&format!("{LASTING_STATE_PY}\nprint(leave('xattr'))\n"));
    let looks = job(&format!("{LASTING_STATE_PY}\nprint(seen('xattr'))\n"));
    let first = server.run(&leaves).await.unwrap();
    assert_eq!(first.stdout.text(), "True\n", "{}", first.stderr.text());
    let next = server.run(&looks).await.unwrap();
    assert_eq!(next.stdout.text(), "False\n", "{}", next.stderr.text());
}
