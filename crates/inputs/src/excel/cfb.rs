//! The OLE compound file that holds an xls workbook, read with bounds:
//! every chain of sectors is followed at most as many steps as the file has
//! sectors (a loop in it ends there), the directory at most
//! `MAX_DIRECTORY` bytes, and a stream at most the cap its reader sets.

use crate::read::Source;

const MAX_DIRECTORY: usize = 1 << 20;
const END: u32 = 0xFFFF_FFFE;
/// Sector numbers from here up are markers, not sectors.
const MARKERS: u32 = 0xFFFF_FFFA;

fn u16_at(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2)
        .map_or(0, |s| u16::from_le_bytes([s[0], s[1]]))
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(END, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

pub(super) struct Cfb<'a> {
    src: &'a Source,
    sector: u64,
    sectors: u64,
    /// The sectors holding the allocation table, in order.
    fat: Vec<u32>,
    mini_cutoff: u64,
    first_mini_fat: u32,
    /// The root entry's stream: where the small streams live.
    root: (u32, u64),
    directory: Vec<u8>,
}

impl<'a> Cfb<'a> {
    pub(super) fn open(src: &'a Source) -> Result<Cfb<'a>, String> {
        let h = src.window(0, 512).map_err(|e| e.to_string())?;
        if h.len() < 512 || !h.starts_with(super::OLE) {
            return Err("its compound-file header is cut short".into());
        }
        let sector = match u16_at(&h, 0x1E) {
            9 => 512u64,
            12 => 4096,
            s => {
                return Err(format!(
                    "its sector size (2^{s}) is not one of a compound file"
                ));
            }
        };
        let sectors = src.size.saturating_sub(sector) / sector;
        let per = sector / 4;
        // The allocation table's sectors: 109 in the header, the rest in a
        // chain of DIFAT sectors; no more than the file's sectors need.
        let needed = sectors.div_ceil(per) as usize;
        let mut fat: Vec<u32> = (0..109)
            .map(|i| u32_at(&h, 0x4C + i * 4))
            .take_while(|&s| s < MARKERS)
            .take(needed)
            .collect();
        let mut next = u32_at(&h, 0x44);
        let mut steps = 0u64;
        while fat.len() < needed && next < MARKERS && steps < sectors {
            steps += 1;
            let s = src
                .window((u64::from(next) + 1) * sector, sector as usize)
                .map_err(|e| e.to_string())?;
            for i in 0..(per as usize - 1) {
                let v = u32_at(&s, i * 4);
                if v < MARKERS && fat.len() < needed {
                    fat.push(v);
                }
            }
            next = u32_at(&s, (per as usize - 1) * 4);
        }
        let mut cfb = Cfb {
            src,
            sector,
            sectors,
            fat,
            mini_cutoff: u64::from(u32_at(&h, 0x38)),
            first_mini_fat: u32_at(&h, 0x3C),
            root: (END, 0),
            directory: Vec::new(),
        };
        cfb.directory = cfb.chain(u32_at(&h, 0x30), MAX_DIRECTORY as u64)?;
        let root = cfb.directory.get(..128).unwrap_or(&[]);
        cfb.root = (u32_at(root, 0x74), u64::from(u32_at(root, 0x78)));
        Ok(cfb)
    }

    /// The sector after `s` in its chain (END at the end or on a bad entry).
    fn next(&self, s: u32) -> u32 {
        let per = self.sector / 4;
        let Some(&fat_sector) = self.fat.get((u64::from(s) / per) as usize) else {
            return END;
        };
        let at = (u64::from(fat_sector) + 1) * self.sector + (u64::from(s) % per) * 4;
        match self.src.window(at, 4) {
            Ok(b) => u32_at(&b, 0),
            Err(_) => END,
        }
    }

    /// The bytes of the chain from `start`, at most `cap`.
    fn chain(&self, start: u32, cap: u64) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let mut s = start;
        let mut steps = 0u64;
        while s < MARKERS && (out.len() as u64) < cap && steps <= self.sectors {
            steps += 1;
            let want = (cap - out.len() as u64).min(self.sector) as usize;
            let data = self
                .src
                .window((u64::from(s) + 1) * self.sector, want)
                .map_err(|e| e.to_string())?;
            if data.is_empty() {
                break;
            }
            out.extend_from_slice(&data);
            s = self.next(s);
        }
        Ok(out)
    }

    /// The stream named `name` (a top-level entry), at most `cap` bytes,
    /// and its size as the directory states it.
    pub(super) fn stream(&self, name: &str, cap: u64) -> Option<(Vec<u8>, u64)> {
        let entry = self.directory.chunks_exact(128).find(|e| {
            let len = usize::from(u16_at(e, 0x40)).min(64);
            let units: Vec<u16> = e[..len]
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .take_while(|&u| u != 0)
                .collect();
            e[0x42] == 2 && String::from_utf16_lossy(&units).eq_ignore_ascii_case(name)
        })?;
        let start = u32_at(entry, 0x74);
        let size = u64::from(u32_at(entry, 0x78));
        let want = size.min(cap);
        let mut data = if size < self.mini_cutoff {
            self.mini(start, want).ok()?
        } else {
            self.chain(start, want).ok()?
        };
        data.truncate(want as usize);
        Some((data, size))
    }

    /// A small stream: 64-byte sectors inside the root entry's stream,
    /// chained by the mini allocation table.
    fn mini(&self, start: u32, cap: u64) -> Result<Vec<u8>, String> {
        // The mini table read whole (bounded like any chain); of the root
        // stream only the list of its sectors, each mini sector read alone.
        let table = self.chain(self.first_mini_fat, 1 << 20)?;
        let mut root = Vec::new();
        let mut r = self.root.0;
        while r < MARKERS && (root.len() as u64) <= self.sectors && root.len() < 1 << 18 {
            root.push(r);
            r = self.next(r);
        }
        let per = (self.sector / 64) as usize;
        let mut out = Vec::new();
        let mut s = start;
        let mut steps = 0;
        while s < MARKERS && (out.len() as u64) < cap && steps <= table.len() / 4 {
            steps += 1;
            let Some(&host) = root.get(s as usize / per) else {
                break;
            };
            let at = (u64::from(host) + 1) * self.sector + (s as usize % per) as u64 * 64;
            let piece = self.src.window(at, 64).map_err(|e| e.to_string())?;
            if piece.is_empty() {
                break;
            }
            out.extend_from_slice(&piece);
            s = u32_at(&table, s as usize * 4);
        }
        Ok(out)
    }
}
