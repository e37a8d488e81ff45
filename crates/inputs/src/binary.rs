//! Anything else: the first bytes in hex and a guess from them.

use crate::{Other, What};

const MAGIC: &[(&[u8], usize, &str)] = &[
    (
        b"PK\x03\x04",
        0,
        "a ZIP archive (or a file built on one: .docx, .xlsx, .jar, .whl)",
    ),
    (b"PK\x05\x06", 0, "an empty ZIP archive"),
    (b"\x1f\x8b", 0, "gzip-compressed data"),
    (b"BZh", 0, "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", 0, "xz-compressed data"),
    (b"(\xb5/\xfd", 0, "zstd-compressed data"),
    (b"7z\xbc\xaf\x27\x1c", 0, "a 7-Zip archive"),
    (b"ustar", 257, "a tar archive"),
    (b"SQLite format 3\x00", 0, "an SQLite database"),
    (b"\x89HDF\r\n\x1a\n", 0, "an HDF5 file"),
    (b"\x93NUMPY", 0, "a NumPy array (.npy)"),
    (b"ARROW1", 0, "an Arrow IPC / Feather file"),
    (b"\x7fELF", 0, "an ELF executable or library"),
    (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
        0,
        "an OLE compound file (old Office: .doc, .xls, .msg)",
    ),
    (b"ID3", 0, "an MP3 audio file"),
    (b"OggS", 0, "an Ogg media file"),
    (b"fLaC", 0, "a FLAC audio file"),
    (b"ftyp", 4, "an MP4 / QuickTime media file"),
    (b"RIFF", 0, "a RIFF file (WAV audio or AVI video)"),
    (b"\x00\x00\x01\x00", 0, "a Windows icon (.ico)"),
    (b"II*\x00", 0, "a TIFF image (little-endian)"),
    (b"MM\x00*", 0, "a TIFF image (big-endian)"),
    (b"Obj\x01", 0, "an Avro data file"),
    (b"ORC", 0, "an ORC file"),
];

pub(crate) fn guess(head: &[u8]) -> String {
    for (magic, at, what) in MAGIC {
        if head.len() >= at + magic.len() && &head[*at..at + magic.len()] == *magic {
            return (*what).to_string();
        }
    }
    if head.len() >= 2 && head[0] == 0x80 && (2..=5).contains(&head[1]) {
        return "a Python pickle (do not unpickle what you do not trust)".into();
    }
    if head.is_empty() {
        return "an empty file".into();
    }
    "binary data of a kind not recognized".into()
}

pub(crate) fn describe(head: &[u8]) -> What {
    let hex_head = head
        .iter()
        .take(32)
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ");
    What::Other(Other {
        guess: guess(head),
        hex_head,
    })
}
