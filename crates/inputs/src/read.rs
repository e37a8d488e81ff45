//! Bounded reads of one open file: its head, a window at an offset, and a
//! streamed pass in fixed-size chunks.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;

/// The size of a streamed pass's one buffer.
pub(crate) const CHUNK: usize = 64 << 10;

pub(crate) struct Source {
    pub(crate) file: File,
    pub(crate) size: u64,
    head: Option<Vec<u8>>,
}

impl Source {
    pub(crate) fn new(file: File) -> io::Result<Source> {
        let size = file.metadata()?.len();
        Ok(Source {
            file,
            size,
            head: None,
        })
    }

    /// The first `max` bytes (fewer for a smaller file), read once.
    pub(crate) fn head(&mut self, max: usize) -> io::Result<Vec<u8>> {
        if let Some(h) = &self.head
            && (h.len() >= max || (h.len() as u64) >= self.size)
        {
            return Ok(h[..h.len().min(max)].to_vec());
        }
        let h = self.window(0, max)?;
        self.head = Some(h.clone());
        Ok(h)
    }

    /// Up to `len` bytes from `offset` (fewer at the end of the file).
    pub(crate) fn window(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.append(offset, len, &mut buf)?;
        Ok(buf)
    }

    /// Up to `len` bytes from `offset` added to `out` (which should have
    /// room for them: it grows by exactly what is read).
    pub(crate) fn append(&self, offset: u64, len: usize, out: &mut Vec<u8>) -> io::Result<()> {
        let want = (self.size.saturating_sub(offset)).min(len as u64) as usize;
        let start = out.len();
        out.reserve_exact(want);
        out.resize(start + want, 0);
        let mut got = 0;
        while got < want {
            match self
                .file
                .read_at(&mut out[start + got..], offset + got as u64)
            {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        out.truncate(start + got);
        Ok(())
    }

    /// The last `len` bytes.
    pub(crate) fn tail(&self, len: usize) -> io::Result<Vec<u8>> {
        let start = self.size.saturating_sub(len as u64);
        self.window(start, len)
    }

    /// Every byte from `offset` to the end, handed over a chunk at a time.
    pub(crate) fn stream(&self, offset: u64, mut each: impl FnMut(&[u8])) -> io::Result<()> {
        let mut buf = vec![0u8; CHUNK];
        let mut at = offset;
        loop {
            let n = match self.file.read_at(&mut buf, at) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                return Ok(());
            }
            each(&buf[..n]);
            at += n as u64;
        }
    }

    /// A reader from `offset` on (for parsers that pull bytes).
    pub(crate) fn reader_at(&self, offset: u64) -> io::Result<impl Read + '_> {
        Ok(At {
            file: &self.file,
            at: offset,
        })
    }
}

struct At<'a> {
    file: &'a File,
    at: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// Newlines in `bytes` (vectorizes well).
pub(crate) fn newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}
