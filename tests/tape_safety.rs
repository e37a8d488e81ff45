//! The attacker's fourth round (issue 41), the part of it that is a
//! session folder handed over: a tape is data, never a path. A tape whose
//! node names are paths (`../`), a picture path to `/etc/hostname` or
//! through a link, `logs/` and `out/` planted as links, a FIFO planted
//! where `man --dir` writes, sessions readable by other users, and what a
//! server or a tape says shown raw in a listing. Each is tried against the
//! real binary over sessions recorded by the bundled demos; as root, and
//! where it matters as an ordinary user (testkit's `ordinary_user`, and
//! `nobody` as the other user).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

mod sessions_support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use codeloop_testkit::ordinary_user::{USER, ordinary_user};
use sessions_support::{codeloop, codeloop_in, record, stderr, stdout};

/// A wordfreq session recorded into `data`, its folder.
fn recorded(data: &Path) -> PathBuf {
    let rec = record(data, &[("wordfreq", &[])]);
    assert_eq!(rec.sessions[0].exit_code, 0);
    rec.sessions[0].dir.clone()
}

/// A copy of the session folder `from` at `to` (as handed over), its tape
/// changed by `change`.
fn handed(from: &Path, to: &Path, change: impl Fn(String) -> String) -> PathBuf {
    std::fs::create_dir_all(to).unwrap();
    let tape = std::fs::read_to_string(from.join("tape.jsonl")).unwrap();
    std::fs::write(to.join("tape.jsonl"), change(tape)).unwrap();
    to.to_path_buf()
}

/// Every file and folder below `dir`.
fn everything(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                todo.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

fn assert_refused(out: &Output, words: &[&str]) {
    assert!(!out.status.success(), "not refused: {}", stderr(out));
    let err = stderr(out);
    for w in words {
        assert!(err.contains(w), "{w:?} not in: {err}");
    }
}

/// The node `tokenize` named `../../../escaped/usercustomize` everywhere on
/// the tape: a name that, joined to a folder, leaves it.
fn node_named_as_a_path(tape: String) -> String {
    tape.replace("\"tokenize\"", "\"../../../escaped/usercustomize\"")
}

#[test]
fn a_tape_whose_node_names_are_paths_is_refused_by_export_and_resume_and_writes_nothing() {
    let data = tempfile::tempdir().unwrap();
    let session = recorded(data.path());
    let work = tempfile::tempdir().unwrap();
    let evil = handed(
        &session,
        &work.path().join("a/b/evil"),
        node_named_as_a_path,
    );
    let review = work.path().join("a/b/review");
    let out = codeloop_in(
        data.path(),
        work.path(),
        &[
            "export",
            evil.to_str().unwrap(),
            "--format",
            "py",
            "-o",
            review.to_str().unwrap(),
        ],
    );
    assert_refused(
        &out,
        &[
            "is refused",
            "../../../escaped/usercustomize",
            "not a Python identifier",
            "ask for the session again",
        ],
    );
    let before = codeloop(data.path(), &["sessions", "--json"]);
    let out = codeloop_in(
        data.path(),
        work.path(),
        &[
            "resume",
            evil.to_str().unwrap(),
            "--at",
            "20",
            "--demo",
            "wordfreq",
        ],
    );
    assert_refused(&out, &["is refused", "not a Python identifier"]);
    for what in [&["replay"][..], &["export", "--format", "md"]] {
        let mut args = what.to_vec();
        args.insert(1, evil.to_str().unwrap());
        let out = codeloop_in(data.path(), work.path(), &args);
        assert_refused(&out, &["is refused"]);
    }
    // Nothing was written anywhere: not the payload, not the review folder,
    // not a fork.
    assert!(!work.path().join("escaped").exists());
    assert!(!work.path().join("a/escaped").exists());
    assert!(!review.exists());
    assert_eq!(
        everything(work.path()).len(),
        4,
        "{:?}",
        everything(work.path())
    );
    let after = codeloop(data.path(), &["sessions", "--json"]);
    assert_eq!(stdout(&before), stdout(&after), "no fork was made");
    // The same tape as codeloop wrote it exports.
    let good = handed(&session, &work.path().join("good"), |t| t);
    let out = codeloop_in(
        data.path(),
        work.path(),
        &[
            "export",
            good.to_str().unwrap(),
            "--format",
            "py",
            "-o",
            review.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(review.join("test_tokenize.py").is_file());
}

/// A `picture` event before the tape's last record.
fn with_picture(tape: String, name: &str, path: &str) -> String {
    let mut lines: Vec<String> = tape.lines().map(str::to_string).collect();
    let last: serde_json::Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    let seq = last["seq"].as_u64().unwrap();
    let picture = serde_json::json!({
        "seq": seq, "t_ms": last["t_ms"], "type": "picture", "run_id": null,
        "picture": {"name": name, "path": path, "format": "png", "size_bytes": 10}
    });
    let mut end = last.clone();
    end["seq"] = (seq + 1).into();
    lines.pop();
    lines.push(picture.to_string());
    lines.push(end.to_string());
    lines.join("\n") + "\n"
}

#[test]
fn export_html_embeds_no_file_from_outside_the_session_folder() {
    let data = tempfile::tempdir().unwrap();
    let session = recorded(data.path());
    let work = tempfile::tempdir().unwrap();
    let secret = work.path().join("private-key");
    std::fs::write(&secret, "THE-READERS-SECRET").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let page = work.path().join("page.html");
    let export = |folder: &Path| {
        codeloop_in(
            data.path(),
            work.path(),
            &[
                "export",
                folder.to_str().unwrap(),
                "--format",
                "html",
                "-o",
                page.to_str().unwrap(),
            ],
        )
    };
    // By its path on the tape.
    let host = handed(&session, &work.path().join("host"), |t| {
        with_picture(t, "host.png", "/etc/hostname")
    });
    assert_refused(
        &export(&host),
        &[
            "is refused",
            "/etc/hostname",
            "not a file in the session folder's pictures/",
        ],
    );
    let up = handed(&session, &work.path().join("up"), |t| {
        with_picture(t, "up.png", "pictures/../../private-key")
    });
    assert_refused(&export(&up), &["is refused"]);
    // Through a link planted in the folder, the tape's path as codeloop writes it.
    let linked = handed(&session, &work.path().join("linked"), |t| {
        with_picture(t, "key.png", "pictures/program-key.png")
    });
    std::fs::create_dir(linked.join("pictures")).unwrap();
    std::os::unix::fs::symlink(&secret, linked.join("pictures/program-key.png")).unwrap();
    assert_refused(&export(&linked), &["is refused", "is a symbolic link"]);
    // The pictures folder itself a link.
    let folder_linked = handed(&session, &work.path().join("folder-linked"), |t| {
        with_picture(t, "key.png", "pictures/program-key.png")
    });
    std::os::unix::fs::symlink(linked.join("pictures"), folder_linked.join("pictures")).unwrap();
    assert_refused(
        &export(&folder_linked),
        &["is refused", "is a symbolic link"],
    );
    assert!(!page.exists(), "no page was written");
    // A picture kept in the folder as codeloop keeps it is drawn.
    let kept = handed(&session, &work.path().join("kept"), |t| {
        with_picture(t, "chart.png", "pictures/program-chart.png")
    });
    std::fs::create_dir(kept.join("pictures")).unwrap();
    std::fs::write(
        kept.join("pictures/program-chart.png"),
        b"\x89PNG\r\n\x1a\nkept",
    )
    .unwrap();
    let out = export(&kept);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("src=\"data:image/png;base64,iVBORw0KGgprZXB0\""),
        "drawn"
    );
    assert_eq!(
        mode(&page),
        0o600,
        "a page is private until its owner sends it"
    );
}

/// The session folder `session` cut before its first run (a session that
/// was killed there), handed over with `logs/` and `out/` planted as links
/// to `victim`'s folders.
fn killed_with_links(session: &Path, to: &Path, victim: &Path) -> PathBuf {
    let folder = handed(session, to, |t| {
        let cut = t.find("\"type\":\"run_started\"").unwrap();
        let line_start = t[..cut].rfind('\n').unwrap() + 1;
        t[..line_start].to_string()
    });
    for sub in ["logs", "out"] {
        std::fs::create_dir_all(victim.join(sub)).unwrap();
        std::os::unix::fs::symlink(victim.join(sub), folder.join(sub)).unwrap();
    }
    folder
}

#[test]
fn resume_writes_no_log_nor_output_through_links_planted_in_the_session_folder() {
    let data = tempfile::tempdir().unwrap();
    let session = recorded(data.path());
    let work = tempfile::tempdir().unwrap();
    let victim = work.path().join("victim");
    let folder = killed_with_links(&session, &work.path().join("handed"), &victim);
    let out = codeloop_in(
        data.path(),
        work.path(),
        &["resume", folder.to_str().unwrap(), "--demo", "wordfreq"],
    );
    let err = stderr(&out);
    assert!(err.contains("keeps no full output log"), "{err}");
    assert!(
        err.contains("logs is a symbolic link, not a folder"),
        "{err}"
    );
    assert!(err.contains("could not write the program to"), "{err}");
    assert!(
        err.contains("out is a symbolic link, not a folder"),
        "{err}"
    );
    assert_eq!(everything(&victim).len(), 2, "{:?}", everything(&victim));
    // The session itself went on, on its own tape.
    let tape = std::fs::read_to_string(folder.join("tape.jsonl")).unwrap();
    assert!(tape.contains("\"type\":\"resumed\""));
    assert!(tape.contains("\"type\":\"finished\""));
    // A log file planted as a link (`logs/` itself a folder) is not written either.
    let victim2 = work.path().join("victim2");
    let folder = killed_with_links(&session, &work.path().join("handed2"), &victim2);
    std::fs::remove_file(folder.join("logs")).unwrap();
    std::fs::create_dir(folder.join("logs")).unwrap();
    let secret = victim2.join("logs/mine");
    std::fs::write(&secret, "mine").unwrap();
    std::os::unix::fs::symlink(&secret, folder.join("logs/run-1.log")).unwrap();
    let out = codeloop_in(
        data.path(),
        work.path(),
        &["resume", folder.to_str().unwrap(), "--demo", "wordfreq"],
    );
    assert!(
        stderr(&out).contains("run-1.log is a symbolic link"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "mine");
}

/// Every folder under `dir` is 0700 and every file 0600.
fn assert_private(dir: &Path) {
    assert_eq!(mode(dir), 0o700, "{}", dir.display());
    for p in everything(dir) {
        let want = if p.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(&p), want, "{}", p.display());
    }
}

/// `codeloop ARGS` under the shell's `umask`, as `user` when given.
fn under_umask(umask: &str, user: Option<&str>, bin: &Path, data: &Path, args: &str) -> Output {
    let script = format!(
        "umask {umask}; CODELOOP_PYTHON=/usr/bin/python3 CODELOOP_DATA_DIR={} CODELOOP_CONFIG={}/none.toml {} {args}",
        data.display(),
        data.display(),
        bin.display()
    );
    let mut c = match user {
        Some(u) => {
            let mut c = Command::new("runuser");
            c.args(["-u", u, "--", "sh", "-c", &script]);
            c
        }
        None => {
            let mut c = Command::new("sh");
            c.args(["-c", &script]);
            c
        }
    };
    c.current_dir(data).output().unwrap()
}

#[test]
fn sessions_are_private_whatever_the_umask() {
    let bin = Path::new(env!("CARGO_BIN_EXE_codeloop"));
    for umask in ["000", "022"] {
        let data = tempfile::tempdir().unwrap();
        let run = "run --demo wordfreq --pace 0 --timeout 5";
        let out = under_umask(umask, None, bin, data.path(), run);
        assert!(out.status.success(), "{}", stderr(&out));
        let out = under_umask(umask, None, bin, data.path(), "sessions");
        assert!(out.status.success(), "{}", stderr(&out));
        let sessions = data.path().join("sessions");
        assert_private(&sessions);
        assert!(
            everything(&sessions)
                .iter()
                .any(|p| p.ends_with("summary.json"))
        );
        let out = under_umask(
            umask,
            None,
            bin,
            data.path(),
            "export last --format py -o exported",
        );
        assert!(out.status.success(), "{}", stderr(&out));
        assert_private(&data.path().join("exported"));
    }
}

#[test]
fn as_an_ordinary_user_a_session_is_not_for_other_users_to_read() {
    let Some((_turn, _python, dir, bin)) =
        ordinary_user("private", Path::new(env!("CARGO_BIN_EXE_codeloop")))
    else {
        return;
    };
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    Command::new("chown").arg(USER).arg(&data).status().unwrap();
    for umask in ["000", "022"] {
        let out = under_umask(
            umask,
            Some(USER),
            &bin,
            &data,
            "run --demo wordfreq --pace 0 --timeout 5",
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let sessions = data.join("sessions");
    assert_private(&sessions);
    // Another user (nobody) reads neither the list of sessions nor a tape.
    let tape = everything(&sessions)
        .into_iter()
        .find(|p| p.ends_with("tape.jsonl"))
        .unwrap();
    for what in [tape.as_path(), sessions.as_path()] {
        let o = Command::new("runuser")
            .args(["-u", "nobody", "--", "ls", "-l"])
            .arg(what)
            .output()
            .unwrap();
        assert!(!o.status.success(), "nobody read {}", what.display());
        assert!(stderr(&o).contains("Permission denied"), "{}", stderr(&o));
    }
}

/// `codeloop man --dir DIR` as `user` (None: root), ended if it has not
/// ended after a minute (a hang is the failure: the test must not hang).
fn man_dir(user: Option<&str>, bin: &Path, dir: &Path) -> Output {
    let mut c = match user {
        Some(u) => {
            let mut c = Command::new("runuser");
            c.args(["-u", u, "--"]).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    c.args(["man", "--dir"]).arg(dir);
    let child = c
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()).unwrap());
    match rx.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("man --dir hung on what was planted in {}", dir.display());
        }
    }
}

#[test]
fn man_dir_refuses_a_planted_fifo_and_link_without_hanging() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_codeloop"));
    let user = ordinary_user("man", &bin);
    // A shared folder (sticky, world-writable) where someone else planted
    // a FIFO and a link to the writer's own file.
    let shared = codeloop_testkit::ordinary_user::scratch("man-shared");
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let (who, bin, mine) = match &user {
        Some((_, _, dir, bin)) => {
            let mine = dir.path().join("mine");
            std::fs::write(&mine, "mine").unwrap();
            Command::new("chown").arg(USER).arg(&mine).status().unwrap();
            (Some(USER), bin.clone(), mine)
        }
        None => {
            let mine = shared.path().join("../mine-of-root");
            std::fs::write(&mine, "mine").unwrap();
            (None, bin, mine)
        }
    };
    let fifo = shared.path().join("codeloop-run.1");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let out = man_dir(who, &bin, shared.path());
    assert_refused(
        &out,
        &["codeloop-run.1 is a named pipe (FIFO)", "remove it"],
    );
    std::fs::remove_file(&fifo).unwrap();
    std::os::unix::fs::symlink(&mine, shared.path().join("codeloop.1")).unwrap();
    let out = man_dir(who, &bin, shared.path());
    assert_refused(&out, &["codeloop.1 is a symbolic link"]);
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine");
    std::fs::remove_file(shared.path().join("codeloop.1")).unwrap();
    let out = man_dir(who, &bin, shared.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        mode(&shared.path().join("codeloop.1")),
        0o644,
        "man pages are for all to read"
    );
}

#[test]
fn sessions_json_escapes_the_c1_controls_a_tape_holds() {
    let data = tempfile::tempdir().unwrap();
    let session = recorded(data.path());
    let tape = session.join("tape.jsonl");
    let text = std::fs::read_to_string(&tape).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut first: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    let task = "count \u{9b}31m\u{9d}0;pwned\u{9c} words\u{7f}";
    first["task"] = task.into();
    lines[0] = first.to_string();
    std::fs::write(&tape, lines.join("\n") + "\n").unwrap();
    let _ = std::fs::remove_file(session.join("summary.json"));
    let out = codeloop(data.path(), &["sessions", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json = stdout(&out);
    assert!(
        !json
            .chars()
            .any(|c| c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c)),
        "{json}"
    );
    assert!(
        json.contains(r"count \u009b31m\u009d0;pwned\u009c words\u007f"),
        "{json}"
    );
    let list: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(list[0]["task"], task, "the same text to a JSON reader");
}

/// A hostile model server on port 8000 of a network namespace of its own
/// (so no port of this machine is taken): its model ids carry OSC 52, OSC
/// 0, CSI and C1. `codeloop models` with nothing configured finds it.
#[test]
fn models_prints_a_discovered_servers_ids_escaped() {
    let ok = Command::new("unshare")
        .args(["-rn", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok || !Path::new("/usr/bin/python3").exists() {
        println!("skipped: no network namespace (unshare -rn) or no /usr/bin/python3 here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("hostile.py");
    std::fs::write(
        &server,
        r#"import http.server, json, sys
IDS = ["evil\x1b]52;c;cm0gLXJmIH4=\x07", "title\x1b]0;pwned\x1b\\", "clear\x1b[2J", "c1\u009b31m\u009d0;t\u009c"]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/v1/models"):
            body = json.dumps({"object": "list", "data": [{"id": i, "object": "model"} for i in IDS]}).encode()
            self.send_response(200)
        else:
            body = b"{}"
            self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 8000), H)
open(sys.argv[1], "w").close()
s.serve_forever()
"#,
    )
    .unwrap();
    let ready = dir.path().join("ready");
    let script = format!(
        "ip link set lo up && (/usr/bin/python3 {} {} & echo $! > {}/pid) && while [ ! -e {} ]; do sleep 0.05; done; {} models; status=$?; kill $(cat {}/pid); exit $status",
        server.display(),
        ready.display(),
        dir.path().display(),
        ready.display(),
        env!("CARGO_BIN_EXE_codeloop"),
        dir.path().display(),
    );
    let out = Command::new("unshare")
        .args(["-rn", "sh", "-c", &script])
        .env("CODELOOP_CONFIG", dir.path().join("none.toml"))
        .env("CODELOOP_DATA_DIR", dir.path().join("data"))
        .env("CODELOOP_CACHE_DIR", dir.path().join("cache"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("CODELOOP_BASE_URL")
        .env_remove("CODELOOP_MODEL")
        .output()
        .unwrap();
    let text = stdout(&out) + &stderr(&out);
    assert!(
        text.contains("http://localhost:8000/v1"),
        "the server was found: {text}"
    );
    assert!(text.contains("evil"), "{text}");
    for (i, c) in text.char_indices() {
        let control = c == '\u{1b}' || c == '\u{7}' || ('\u{80}'..='\u{9f}').contains(&c);
        assert!(!control, "a control character {c:?} at {i}: {text:?}");
    }
}

/// The sales demo's session, handed over with its input's path changed to
/// `path` (and its name to `name`).
fn sales_naming(data: &Path, to: &Path, name: &str, path: &Path) -> PathBuf {
    let rec = record(data, &[("sales", &[])]);
    let session = rec.sessions[0].dir.clone();
    handed(&session, to, |tape| {
        let mut lines: Vec<String> = tape.lines().map(str::to_string).collect();
        let mut first: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        first["inputs"][0]["name"] = name.into();
        first["inputs"][0]["source_path"] = path.to_str().unwrap().into();
        lines[0] = first.to_string();
        lines.join("\n") + "\n"
    })
}

#[test]
fn an_input_the_tape_names_is_read_only_while_it_is_the_file_the_tape_describes() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let secret = work.path().join("id_ed25519");
    std::fs::write(
        &secret,
        "-----BEGIN OPENSSH PRIVATE KEY-----\nTHE-READERS-KEY\n",
    )
    .unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let folder = sales_naming(
        data.path(),
        &work.path().join("handed"),
        "sales.csv",
        &secret,
    );
    let review = work.path().join("review");
    let out = codeloop_in(
        data.path(),
        work.path(),
        &[
            "export",
            folder.to_str().unwrap(),
            "--format",
            "py",
            "-o",
            review.to_str().unwrap(),
        ],
    );
    assert_refused(
        &out,
        &["is not the one the session recorded", "bytes, not 214"],
    );
    assert!(!review.join("sales.csv").exists(), "the key was not copied");
    // A resume's runs go without it, and say so.
    let folder2 = {
        let to = work.path().join("handed2");
        let cut = std::fs::read_to_string(folder.join("tape.jsonl")).unwrap();
        let at = cut.find("\"type\":\"run_started\"").unwrap();
        let start = cut[..at].rfind('\n').unwrap() + 1;
        std::fs::create_dir_all(&to).unwrap();
        std::fs::write(to.join("tape.jsonl"), &cut[..start]).unwrap();
        to
    };
    let out = codeloop_in(
        data.path(),
        work.path(),
        &["resume", folder2.to_str().unwrap(), "--demo", "sales"],
    );
    assert!(
        stderr(&out).contains("is not the one the session recorded (")
            && stderr(&out).contains("the runs go on without it"),
        "{}",
        stderr(&out)
    );
    let tape = std::fs::read_to_string(folder2.join("tape.jsonl")).unwrap();
    assert!(!tape.contains("THE-READERS-KEY"), "no run read the key");
    // An input named as a path is refused when the tape is read.
    let named = sales_naming(
        data.path(),
        &work.path().join("named"),
        "../../x.csv",
        &secret,
    );
    let out = codeloop_in(
        data.path(),
        work.path(),
        &[
            "export",
            named.to_str().unwrap(),
            "--format",
            "py",
            "-o",
            review.to_str().unwrap(),
        ],
    );
    assert_refused(
        &out,
        &["is refused", "names an input file", "a path, not one name"],
    );
}

#[test]
fn a_fork_handed_over_draws_no_lineage_from_the_readers_own_sessions() {
    // The reader's own session, private, in their sessions folder.
    let reader = tempfile::tempdir().unwrap();
    let mine = record(reader.path(), &[("collatz", &[])]).sessions[0].clone();
    // Someone else's fork, handed over, claiming the reader's session as
    // its parent (by id and by the path of its tape).
    let theirs = tempfile::tempdir().unwrap();
    let parent = recorded(theirs.path());
    let out = codeloop(
        theirs.path(),
        &[
            "resume",
            parent.to_str().unwrap(),
            "--at",
            "20",
            "--demo",
            "wordfreq",
        ],
    );
    assert!(
        out.status.success() || out.status.code() == Some(1),
        "{}",
        stderr(&out)
    );
    let fork = std::fs::read_dir(theirs.path().join("sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| *p != parent)
        .unwrap();
    let work = tempfile::tempdir().unwrap();
    let parent_id = parent.file_name().unwrap().to_str().unwrap().to_string();
    let their_tape = parent.join("tape.jsonl");
    let folder = handed(&fork, &work.path().join("handed/evil"), |t| {
        t.replace(&parent_id, &mine.id).replace(
            their_tape.to_str().unwrap(),
            mine.dir.join("tape.jsonl").to_str().unwrap(),
        )
    });
    let page = work.path().join("out/page.html");
    let out = codeloop_in(
        reader.path(),
        work.path(),
        &[
            "export",
            folder.to_str().unwrap(),
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).lines().count(),
        1,
        "one page: {}",
        stdout(&out)
    );
    let pages: Vec<PathBuf> = everything(&work.path().join("out"));
    assert_eq!(pages, std::slice::from_ref(&page));
    let mine_task = sessions_support::codeloop(reader.path(), &["sessions", "--json"]);
    let list: Vec<serde_json::Value> = serde_json::from_slice(&mine_task.stdout).unwrap();
    let task = list[0]["task"].as_str().unwrap();
    assert!(
        !std::fs::read_to_string(&page).unwrap().contains(task),
        "the reader's task is not on the page"
    );
}

/// A scripted session, handed over with its replies file's path changed to
/// one of the reader's own files (here a replies file that would serve, so
/// that reading it would let the resume go on): the resume reads no file
/// the tape names, and says to name it with --scripted, which then serves.
#[test]
fn resume_reads_no_replies_file_a_handed_over_tape_names() {
    let author = tempfile::tempdir().unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demos/roman");
    let replies = author.path().join("replies.jsonl");
    std::fs::copy(demo.join("replies.jsonl"), &replies).unwrap();
    let task = std::fs::read_to_string(demo.join("task.txt")).unwrap();
    let out = codeloop(
        author.path(),
        &["run", "--scripted", replies.to_str().unwrap(), task.trim()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let session = std::fs::read_dir(author.path().join("sessions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let reader = tempfile::tempdir().unwrap();
    let mine = reader.path().join("my-private-replies.jsonl");
    std::fs::copy(&replies, &mine).unwrap();
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o600)).unwrap();
    let recorded = serde_json::Value::from(replies.to_str().unwrap()).to_string();
    let planted = serde_json::Value::from(mine.to_str().unwrap()).to_string();
    let folder = handed(&session, &reader.path().join("handed"), |tape| {
        assert!(tape.contains(&recorded));
        tape.replace(&recorded, &planted)
    });
    let out = codeloop(
        reader.path(),
        &[
            "resume",
            folder.to_str().unwrap(),
            "--at",
            "1",
            "--pace",
            "0",
        ],
    );
    assert_refused(
        &out,
        &[
            &format!("replies file {}, which its tape names", mine.display()),
            &format!("--scripted {}", mine.display()),
        ],
    );
    assert!(!reader.path().join("sessions").exists(), "no fork made");
    let out = codeloop(
        reader.path(),
        &[
            "resume",
            folder.to_str().unwrap(),
            "--at",
            "1",
            "--pace",
            "0",
            "--scripted",
            mine.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "named, it serves: {}", stderr(&out));
}

/// `man --dir` into a path whose missing folders it makes: each made 0700
/// whatever the umask, and a link another user planted on the way (in a
/// folder of theirs the path goes through) is not followed: nothing is
/// made where it points. As root, and as an ordinary user (the link
/// planted by `nobody`).
#[test]
fn man_dir_makes_its_folders_private_and_follows_no_link_another_user_planted() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_codeloop"));
    let root_dir = tempfile::tempdir().unwrap();
    man_dir_parents(None, &bin, root_dir.path());
    if let Some((_turn, _, dir, user_bin)) = ordinary_user("man-parents", &bin) {
        man_dir_parents(Some(USER), &user_bin, dir.path());
    }
}

/// The test above as `who` (None: whoever runs the tests), in `scratch`.
fn man_dir_parents(who: Option<&str>, bin: &Path, scratch: &Path) {
    let as_who = |script: &str| -> Output {
        let mut c = match who {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--", "sh", "-c", script]);
                c
            }
            None => {
                let mut c = Command::new("sh");
                c.args(["-c", script]);
                c
            }
        };
        c.output().unwrap()
    };
    // The writer's own folder: man --dir makes three levels below it.
    let home = scratch.join("home");
    std::fs::create_dir(&home).unwrap();
    if let Some(u) = who {
        Command::new("chown").arg(u).arg(&home).status().unwrap();
    }
    let deep = home.join("share/man/man1");
    let out = as_who(&format!(
        "umask 000; {} man --dir {}",
        bin.display(),
        deep.display()
    ));
    assert!(out.status.success(), "{who:?}: {}", stderr(&out));
    for d in [home.join("share"), home.join("share/man"), deep.clone()] {
        assert_eq!(mode(&d), 0o700, "{who:?}: {}", d.display());
    }
    assert!(deep.join("codeloop.1").is_file());

    // Another user's folder on the way, and in it their link `share` to
    // a folder of the writer's, where they want pages (or anything) made.
    if !rustix::process::geteuid().is_root() {
        println!("skipped: planting another user's link needs root");
        return;
    }
    let theirs = scratch.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o755)).unwrap();
    let target = home.join("target");
    std::fs::create_dir(&target).unwrap();
    if let Some(u) = who {
        Command::new("chown").arg(u).arg(&target).status().unwrap();
    }
    Command::new("chown")
        .arg("nobody")
        .arg(&theirs)
        .status()
        .unwrap();
    let planted = Command::new("runuser")
        .args(["-u", "nobody", "--", "ln", "-s"])
        .arg(&target)
        .arg(theirs.join("share"))
        .status()
        .unwrap();
    assert!(planted.success());
    let through = theirs.join("share/man/man1");
    let out = as_who(&format!(
        "{} man --dir {}",
        bin.display(),
        through.display()
    ));
    assert_refused(
        &out,
        &["is a symbolic link another user (uid", "not followed"],
    );
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "{who:?}: something was made through the link"
    );
}
