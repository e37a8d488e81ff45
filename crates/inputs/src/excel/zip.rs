//! The ZIP container of xlsx, xlsb and ods, read with bounds: the central
//! directory at most `MAX_DIRECTORY` bytes and `MAX_ENTRIES` entries, and
//! each part inflated through a cap the caller sets, whatever sizes the
//! directory states.

use std::io::Read;

use crate::read::Source;

/// The central directory read, at most, and the entries kept of it.
const MAX_DIRECTORY: u64 = 1 << 20;
const MAX_ENTRIES: usize = 10_000;

struct Entry {
    name: String,
    method: u16,
    compressed: u64,
    offset: u64,
    encrypted: bool,
}

pub(super) struct Zip<'a> {
    src: &'a Source,
    entries: Vec<Entry>,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Where the central directory is and how large: (offset, size).
fn directory(src: &Source) -> Result<(u64, u64), String> {
    let tail_len = src.size.min(22 + 0xFFFF) as usize;
    let tail = src.tail(tail_len).map_err(|e| e.to_string())?;
    let at = tail
        .windows(4)
        .rposition(|w| w == b"PK\x05\x06")
        .ok_or("its end of central directory is missing (not a ZIP, or cut short)")?;
    let eocd = &tail[at..];
    let bad = || "its end of central directory is cut short".to_string();
    let mut size = u64::from(u32_at(eocd, 12).ok_or_else(bad)?);
    let mut offset = u64::from(u32_at(eocd, 16).ok_or_else(bad)?);
    if size == 0xFFFF_FFFF || offset == 0xFFFF_FFFF {
        // ZIP64: the locator just before points at the larger record.
        let loc = at
            .checked_sub(20)
            .and_then(|l| tail.get(l..l + 20))
            .filter(|l| l.starts_with(b"PK\x06\x07"))
            .ok_or("its ZIP64 locator is missing")?;
        let at64 = u64_at(loc, 8).ok_or_else(bad)?;
        let rec = src.window(at64, 56).map_err(|e| e.to_string())?;
        if !rec.starts_with(b"PK\x06\x06") {
            return Err("its ZIP64 end of central directory is missing".into());
        }
        size = u64_at(&rec, 40).ok_or_else(bad)?;
        offset = u64_at(&rec, 48).ok_or_else(bad)?;
    }
    if size > MAX_DIRECTORY {
        return Err(format!(
            "its central directory is {}, more than the {} read",
            crate::bytes(size),
            crate::bytes(MAX_DIRECTORY)
        ));
    }
    if offset.saturating_add(size) > src.size {
        return Err("its central directory lies past its end".into());
    }
    Ok((offset, size))
}

impl<'a> Zip<'a> {
    pub(super) fn open(src: &'a Source) -> Result<Zip<'a>, String> {
        let (offset, size) = directory(src)?;
        let dir = src
            .window(offset, size as usize)
            .map_err(|e| e.to_string())?;
        let mut entries = Vec::new();
        let mut at = 0usize;
        while entries.len() < MAX_ENTRIES && dir.get(at..at + 4) == Some(b"PK\x01\x02") {
            let h = &dir[at..];
            let field = |o| u16_at(h, o).map(usize::from);
            let (Some(flags), Some(method), Some(n), Some(e), Some(c)) =
                (u16_at(h, 8), u16_at(h, 10), field(28), field(30), field(32))
            else {
                break;
            };
            let Some(name) = h.get(46..46 + n) else { break };
            let mut compressed = u64::from(u32_at(h, 20).unwrap_or(0));
            let uncompressed = u32_at(h, 24).unwrap_or(0);
            let mut local = u64::from(u32_at(h, 42).unwrap_or(0));
            // ZIP64 sizes and offset, where the 32-bit fields are full.
            let extra = h.get(46 + n..46 + n + e).unwrap_or(&[]);
            let mut x = 0;
            while x + 4 <= extra.len() {
                let id = u16_at(extra, x).unwrap_or(0);
                let len = usize::from(u16_at(extra, x + 2).unwrap_or(0));
                let data = extra.get(x + 4..x + 4 + len).unwrap_or(&[]);
                if id == 1 {
                    let mut f = 0;
                    if uncompressed == 0xFFFF_FFFF {
                        f += 8;
                    }
                    if compressed == 0xFFFF_FFFF {
                        compressed = u64_at(data, f).unwrap_or(compressed);
                        f += 8;
                    }
                    if local == 0xFFFF_FFFF {
                        local = u64_at(data, f).unwrap_or(local);
                    }
                }
                x += 4 + len;
            }
            entries.push(Entry {
                name: String::from_utf8_lossy(&name[..name.len().min(512)]).into_owned(),
                method,
                compressed,
                offset: local,
                encrypted: flags & 1 != 0,
            });
            at += 46 + n + e + c;
        }
        Ok(Zip { src, entries })
    }

    /// Whether a part of this name is in the archive.
    pub(super) fn has(&self, name: &str) -> bool {
        self.entry(name).is_some()
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        let name = name.trim_start_matches('/');
        self.entries
            .iter()
            .find(|e| e.name.eq_ignore_ascii_case(name))
    }

    /// The part `name`, inflated as it is read, at most `cap` bytes of it.
    pub(super) fn part(&self, name: &str, cap: u64) -> Result<Box<dyn Read + 'a>, String> {
        let e = self
            .entry(name)
            .ok_or_else(|| format!("it has no part {name}"))?;
        if e.encrypted {
            return Err("it is encrypted".into());
        }
        let head = self
            .src
            .window(e.offset, 30)
            .map_err(|err| err.to_string())?;
        if !head.starts_with(b"PK\x03\x04") {
            return Err(format!("its part {name} is not where its directory says"));
        }
        let skip = 30
            + u64::from(u16_at(&head, 26).unwrap_or(0))
            + u64::from(u16_at(&head, 28).unwrap_or(0));
        let data = self
            .src
            .reader_at(e.offset + skip)
            .map_err(|err| err.to_string())?
            .take(e.compressed);
        Ok(match e.method {
            0 => Box::new(data.take(cap)),
            8 => Box::new(flate2::read::DeflateDecoder::new(data).take(cap)),
            m => {
                return Err(format!(
                    "its part {name} is compressed in a way not read here ({m})"
                ));
            }
        })
    }
}
