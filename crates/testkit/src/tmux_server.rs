//! Each tmux end-to-end test runs its own tmux server (`tmux -L NAME`), so
//! none waits on another's server starting or stopping: started by
//! `new_session`, stopped by `stop` (which removes the socket tmux leaves).

use std::process::Command;

/// Stop the tmux server `-L name` and remove its socket.
pub fn stop(name: &str) {
    let socket = Command::new("tmux")
        .args(["-L", name, "display-message", "-p", "#{socket_path}"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let _ = Command::new("tmux")
        .args(["-L", name, "kill-server"])
        .status();
    if let Some(path) = socket.filter(|p| !p.is_empty()) {
        let _ = std::fs::remove_file(path);
    }
}

/// `tmux new-session` of a detached session `name`, `size` (columns, rows),
/// on a server of its own also named `name`; add the directory, the
/// environment and the command, then run it.
pub fn new_session(name: &str, size: (u16, u16)) -> Command {
    let (w, h) = (size.0.to_string(), size.1.to_string());
    let mut cmd = Command::new("tmux");
    cmd.args([
        "-L",
        name,
        "new-session",
        "-d",
        "-x",
        &w,
        "-y",
        &h,
        "-s",
        name,
    ]);
    cmd
}
