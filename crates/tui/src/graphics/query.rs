//! Asking the terminal what it draws: the kitty graphics query (a 1×1
//! image, `a=q`: a kitty-capable terminal answers `OK` and stores
//! nothing), the cell size in pixels (`CSI 16 t`) and the primary device
//! attributes (`CSI c`, whose `4` is sixel). Every terminal answers the
//! device attributes, and answers in order, so that answer closes the
//! reply; a terminal that answers nothing is waited for `TIMEOUT` at most.
//! Only bytes already there are read (`poll`, then `read`), so a silent
//! terminal leaves nothing blocked on standard input.

use std::io::{self, IsTerminal, Write};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// How long a terminal is waited for.
pub(crate) const TIMEOUT: Duration = Duration::from_millis(300);

/// The query, in one write.
pub(crate) const QUERY: &str = "\x1b_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\x1b\\\x1b[16t\x1b[c";

/// What the terminal answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Answers {
    /// It answered the kitty graphics query with OK.
    pub(crate) kitty: bool,
    /// Its device attributes include 4 (sixel).
    pub(crate) sixel: bool,
    /// A cell's size in pixels (width, height), from `CSI 6 ; h ; w t`.
    pub(crate) cell: Option<(u16, u16)>,
    /// The device attributes came: nothing more is to come.
    pub(crate) complete: bool,
}

/// Read the answers out of what the terminal sent.
pub(crate) fn parse(bytes: &[u8]) -> Answers {
    let mut a = Answers::default();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != 0x1b || i + 1 >= bytes.len() {
            i += 1;
            continue;
        }
        match bytes[i + 1] {
            // APC: ESC _ G ... ESC \
            b'_' => {
                let body_start = i + 2;
                let end = find(bytes, body_start, b"\x1b\\").unwrap_or(bytes.len());
                let body = &bytes[body_start..end];
                if body.starts_with(b"G") && contains(body, b";OK") {
                    a.kitty = true;
                }
                i = end;
            }
            // CSI: ESC [ params final
            b'[' => {
                let start = i + 2;
                let mut j = start;
                while j < bytes.len() && !(0x40..=0x7e).contains(&bytes[j]) {
                    j += 1;
                }
                if j >= bytes.len() {
                    break;
                }
                let params = String::from_utf8_lossy(&bytes[start..j]);
                match bytes[j] {
                    b'c' if params.starts_with('?') => {
                        a.complete = true;
                        a.sixel = params[1..].split(';').any(|p| p == "4");
                    }
                    b't' => {
                        let nums: Vec<u16> =
                            params.split(';').filter_map(|p| p.parse().ok()).collect();
                        if let [6, h, w] = nums[..]
                            && h > 0
                            && w > 0
                        {
                            a.cell = Some((w, h));
                        }
                    }
                    _ => {}
                }
                i = j + 1;
            }
            _ => i += 2,
        }
    }
    a
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    find(hay, 0, needle).is_some()
}

/// Standard input and output are both a terminal.
pub(crate) fn is_terminal() -> bool {
    io::stdin().is_terminal() && io::stdout().is_terminal()
}

/// A cell's size in pixels from the window's size (TIOCGWINSZ), where the
/// terminal fills in the pixels (kitty, iTerm2, WezTerm, foot, xterm do).
pub(crate) fn window_cell_size() -> Option<(u16, u16)> {
    let size = crossterm::terminal::window_size().ok()?;
    if size.width == 0 || size.height == 0 || size.columns == 0 || size.rows == 0 {
        return None;
    }
    let cell = (size.width / size.columns, size.height / size.rows);
    (cell.0 > 0 && cell.1 > 0).then_some(cell)
}

/// Ask the terminal (raw mode is set for the question if it is not) and
/// read its answers until the device attributes come or `timeout` passes.
/// None where it could not be asked or answered nothing.
pub(crate) fn ask(timeout: Duration) -> Option<Answers> {
    let was_raw = crossterm::terminal::is_raw_mode_enabled().unwrap_or(false);
    if !was_raw {
        crossterm::terminal::enable_raw_mode().ok()?;
    }
    let answers = ask_raw(timeout);
    if !was_raw {
        let _ = crossterm::terminal::disable_raw_mode();
    }
    answers
}

fn ask_raw(timeout: Duration) -> Option<Answers> {
    let mut out = io::stdout();
    out.write_all(QUERY.as_bytes()).ok()?;
    out.flush().ok()?;
    let deadline = Instant::now() + timeout;
    let mut got = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || !readable(left) {
            break;
        }
        let mut buf = [0u8; 256];
        // Read from the descriptor itself: `Stdin`'s buffer would keep
        // what follows the answers from the event reader.
        let n = match rustix::io::read(io::stdin().as_fd(), &mut buf) {
            Ok(n) if n > 0 => n,
            _ => break,
        };
        got.extend_from_slice(&buf[..n]);
        if parse(&got).complete || got.len() > 4096 {
            break;
        }
    }
    let answers = parse(&got);
    (!got.is_empty()).then_some(answers)
}

/// Standard input has bytes within `wait`.
fn readable(wait: Duration) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let stdin = io::stdin();
    let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
    let Ok(wait) = Timespec::try_from(wait) else {
        return false;
    };
    let n = rustix::event::poll(&mut fds, Some(&wait)).unwrap_or(0);
    n > 0 && fds[0].revents().contains(PollFlags::IN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kitty_answers_ok_and_its_cell_size() {
        let a = parse(b"\x1b_Gi=31;OK\x1b\\\x1b[6;20;10t\x1b[?62;22;52c");
        assert_eq!(
            a,
            Answers {
                kitty: true,
                sixel: false,
                cell: Some((10, 20)),
                complete: true
            }
        );
    }

    #[test]
    fn a_sixel_terminal_says_4_in_its_device_attributes() {
        let a = parse(b"\x1b[6;16;8t\x1b[?63;1;2;4;6;9;15;22c");
        assert!(a.sixel && !a.kitty && a.complete);
        assert_eq!(a.cell, Some((8, 16)));
        // 4 only as a whole parameter (not 14 or 42).
        assert!(!parse(b"\x1b[?64;14;42c").sixel);
    }

    #[test]
    fn an_error_from_kitty_or_an_unfinished_reply_is_no() {
        let a = parse(b"\x1b_Gi=31;EINVAL:bad\x1b\\\x1b[?1;2c");
        assert!(!a.kitty && a.complete);
        let a = parse(b"\x1b_Gi=31;OK\x1b\\\x1b[6;2");
        assert!(a.kitty && !a.complete && a.cell.is_none());
        assert_eq!(parse(b""), Answers::default());
    }
}
