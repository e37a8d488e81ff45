//! Each tmux end-to-end test runs its own tmux server (`tmux -L NAME`), so
//! none waits on another's server starting or stopping; this stops one and
//! removes its socket (tmux leaves the file behind).

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
