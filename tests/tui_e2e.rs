//! End to end: the real binary in a real terminal (tmux), keys sent, the
//! screen read back with capture-pane. Skips, saying why, only when tmux is
//! not installed (scripts/test.sh installs it).

mod tui_support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

struct Tmux {
    session: String,
}

impl Tmux {
    fn available() -> bool {
        Command::new("tmux")
            .arg("-V")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    }

    /// Start `args` in a detached 160x48 session.
    fn start(name: &str, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Tmux {
        let session = format!("codeloop-e2e-{name}-{}", std::process::id());
        let bin = env!("CARGO_BIN_EXE_codeloop");
        let mut cmd = Command::new("tmux");
        cmd.args(["new-session", "-d", "-x", "160", "-y", "48", "-s", &session])
            .args(["-c", &dir.to_string_lossy()]);
        for (k, v) in env {
            cmd.args(["-e", &format!("{k}={v}")]);
        }
        cmd.arg(bin).args(args);
        let status = cmd.status().expect("tmux runs");
        assert!(status.success(), "tmux new-session failed");
        let t = Tmux { session };
        t.tmux(&["set-option", "-t", &t.session, "remain-on-exit", "on"]);
        t
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").args(args).output().expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.tmux(&["send-keys", "-t", &self.session, k]);
            std::thread::sleep(Duration::from_millis(60));
        }
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.session])
    }

    fn screen_with_escapes(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-e", "-t", &self.session])
    }

    /// Wait until the screen shows `text` (or fail with the screen).
    fn wait_for(&self, text: &str, within: Duration) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(text) {
                return s;
            }
            if start.elapsed() > within {
                panic!("waited {within:?} for {text:?}; the screen shows:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn pane_dead(&self) -> bool {
        self.tmux(&[
            "display-message",
            "-p",
            "-t",
            &self.session,
            "#{pane_dead} #{pane_dead_status}",
        ])
        .trim()
            == "1 0"
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.session])
            .status();
    }
}

fn skip_without_tmux() -> bool {
    if Tmux::available() {
        return false;
    }
    eprintln!("SKIPPED: tmux is not installed (scripts/test.sh installs it)");
    true
}

#[test]
fn open_reviews_a_saved_session_step_by_step_in_a_real_terminal() {
    if skip_without_tmux() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tape = tui_support::write_tape(dir.path());
    let t = Tmux::start(
        "open",
        dir.path(),
        &["open", &tape.to_string_lossy()],
        &[("CODELOOP_DATA_DIR", &dir.path().to_string_lossy())],
    );
    let s = t.wait_for("REVIEW 33/33", Duration::from_secs(10));
    assert!(s.contains("✓ parse_line"), "{s}");
    assert!(s.contains("every node and the program passed"), "{s}");
    // The title escape in the recorded output never reaches the terminal.
    assert!(!s.contains("owned title"));
    let title = t.tmux(&["display-message", "-p", "-t", &t.session, "#{pane_title}"]);
    assert!(
        !title.contains("owned"),
        "the program changed the title: {title}"
    );

    // Jump to the first failure: the failing line is marked, its error beside it.
    t.keys(&["f"]);
    let s = t.wait_for("REVIEW 16/33", Duration::from_secs(5));
    assert!(s.contains("✗ parse_line failed"), "{s}");
    assert!(s.contains("◀ ValueError"), "{s}");
    assert!(s.contains("⊘ sum_by_key blocked"), "{s}");

    // Back to the start and through every iteration.
    t.keys(&["Home", "]"]);
    let s = t.wait_for("iteration 1 (model)", Duration::from_secs(5));
    assert!(s.contains("REVIEW 7/33"), "{s}");
    t.keys(&["]"]);
    t.wait_for("parse_line · iteration 2", Duration::from_secs(5));
    t.keys(&["]"]);
    t.wait_for("sum_by_key · iteration 1", Duration::from_secs(5));

    // Zoom, help, and the colours of the dark theme (capture with escapes).
    t.keys(&["z"]);
    let s = t.screen();
    assert!(
        s.contains("Workflow") && !s.contains("History"),
        "zoomed: only the focused pane\n{s}"
    );
    t.keys(&["Escape", "?"]);
    t.wait_for("any key closes this help", Duration::from_secs(5));
    assert!(t.screen_with_escapes().contains("\u{1b}["), "colours drawn");
    t.keys(&["Escape", "q"]);
    let start = Instant::now();
    while !t.pane_dead() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "q did not quit:\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The alternate screen is gone: what is left is the normal screen.
    let s = t.screen();
    assert!(!s.contains("REVIEW"), "the terminal was not restored:\n{s}");
}
