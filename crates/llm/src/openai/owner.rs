//! Whose a local listener is: the uid of the socket listening on a port,
//! as the kernel lists it (`/proc/net/tcp` and `/proc/net/tcp6`). A model
//! server another user runs on a well-known port is not the person's to
//! send prompts to: it is named, and never used unasked.

/// Someone else's listener on a port `localhost` reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stranger {
    /// Its address as the kernel lists it: "127.0.0.1:8000", "[::]:8000".
    pub listener: String,
    pub uid: u32,
}

/// The first listener on `port` that a connection to `localhost` could
/// reach (a loopback or wildcard address) whose socket belongs to a uid
/// other than this process's; None when every one is this user's, or the
/// kernel's lists cannot be read.
pub(crate) fn stranger_on(port: u16) -> Option<Stranger> {
    let me = rustix::process::geteuid().as_raw();
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .into_iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .flat_map(|table| listeners(&table))
        .find(|l| l.port == port && l.uid != me && l.reached_from_loopback)
        .map(|l| Stranger {
            listener: l.shown,
            uid: l.uid,
        })
}

/// One LISTEN line of a table.
#[derive(Debug, PartialEq, Eq)]
struct Listener {
    shown: String,
    port: u16,
    uid: u32,
    reached_from_loopback: bool,
}

/// TCP_LISTEN, as the tables print a socket's state.
const LISTEN: &str = "0A";

/// The listening sockets of a table's text (its header line skipped, and
/// any line it cannot read).
fn listeners(table: &str) -> Vec<Listener> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (local, state, uid) = (fields.get(1)?, fields.get(3)?, fields.get(7)?);
            if *state != LISTEN {
                return None;
            }
            let (addr, port) = local.split_once(':')?;
            let port = u16::from_str_radix(port, 16).ok()?;
            let ip = address(addr)?;
            Some(Listener {
                shown: match ip {
                    std::net::IpAddr::V4(v4) => format!("{v4}:{port}"),
                    std::net::IpAddr::V6(v6) => format!("[{v6}]:{port}"),
                },
                port,
                uid: uid.parse().ok()?,
                reached_from_loopback: reached_from_loopback(ip),
            })
        })
        .collect()
}

/// An address as the tables print it: the bytes of each 32-bit word in
/// this machine's order, as hex.
fn address(hex: &str) -> Option<std::net::IpAddr> {
    let word = |i: usize| -> Option<[u8; 4]> {
        let w = hex.get(i * 8..i * 8 + 8)?;
        Some(u32::from_str_radix(w, 16).ok()?.to_ne_bytes())
    };
    match hex.len() {
        8 => Some(std::net::Ipv4Addr::from(word(0)?).into()),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            Some(std::net::Ipv6Addr::from(bytes).into())
        }
        _ => None,
    }
}

/// Whether a connection to `localhost` (127.0.0.1 or ::1) could reach a
/// socket listening on `ip`.
fn reached_from_loopback(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => v4.is_loopback() || v4.is_unspecified(),
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.is_loopback() || v4.is_unspecified(),
            None => v6.is_loopback() || v6.is_unspecified(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as a little-endian kernel prints them.
    #[cfg(target_endian = "little")]
    #[test]
    fn the_tables_listeners_are_read_with_their_owners() {
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 4242 1 0000000000000000 100 0 0 10 0\n   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4243 1 0000000000000000 100 0 0 10 0\n   2: 0100007F:1F40 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1001        0 4244 1 0000000000000000 100 0 0 10 0\n   3: 0A00020F:04D2 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1002        0 4245 1 0000000000000000 100 0 0 10 0\n";
        let got = listeners(tcp);
        assert_eq!(
            got,
            vec![
                Listener {
                    shown: "127.0.0.1:8000".into(),
                    port: 8000,
                    uid: 1001,
                    reached_from_loopback: true
                },
                Listener {
                    shown: "0.0.0.0:8080".into(),
                    port: 8080,
                    uid: 0,
                    reached_from_loopback: true
                },
                Listener {
                    shown: "15.2.0.10:1234".into(),
                    port: 1234,
                    uid: 1002,
                    reached_from_loopback: false
                },
            ]
        );
        let tcp6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 00000000000000000000000001000000:2CAA 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 5 1 0 100 0 0 10 0\n   1: 00000000000000000000000000000000:1F40 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1003        0 6 1 0 100 0 0 10 0\n   2: 0000000000000000FFFF00000100007F:04D2 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  7        0 7 1 0 100 0 0 10 0\n";
        let got: Vec<(String, u32, bool)> = listeners(tcp6)
            .into_iter()
            .map(|l| (l.shown, l.uid, l.reached_from_loopback))
            .collect();
        assert_eq!(
            got,
            vec![
                ("[::1]:11434".to_string(), 1001, true),
                ("[::]:8000".to_string(), 1003, true),
                ("[::ffff:127.0.0.1]:1234".to_string(), 7, true),
            ]
        );
    }

    #[test]
    fn a_line_it_cannot_read_is_left_out() {
        assert_eq!(listeners("header\n0: zz:1F40 0 0A 0 0 0 1001\n\n"), vec![]);
    }
}
