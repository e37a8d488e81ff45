//! Files that lie, made for tests and the bench: each is tiny and states
//! a count, a depth or a size a trusting parser would follow into a crash,
//! a huge allocation or a loop without end (issue 33). The inputs crate's
//! own tests (`src/tests/attacks.rs`), the describing child's tests
//! (`tests/inputs_contained.rs`) and `cargo bench --bench inputs` use them,
//! so each attack is written once.

use std::io::Write;

/// A part of a ZIP archive, deflated, with its checksum and length.
pub struct Packed {
    packed: Vec<u8>,
    crc: u32,
    len: u32,
}

impl Packed {
    pub fn of(data: &[u8]) -> Packed {
        Packed::stream(|w| w.write_all(data).unwrap())
    }

    /// A part written piece by piece (never whole in memory).
    pub fn stream(fill: impl FnOnce(&mut dyn Write)) -> Packed {
        struct Counting {
            z: flate2::write::DeflateEncoder<Vec<u8>>,
            crc: flate2::Crc,
        }
        impl Write for Counting {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.crc.update(buf);
                self.z.write_all(buf)?;
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut c = Counting {
            z: flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast()),
            crc: flate2::Crc::new(),
        };
        fill(&mut c);
        Packed {
            crc: c.crc.sum(),
            len: c.crc.amount(),
            packed: c.z.finish().unwrap(),
        }
    }
}

/// A ZIP archive of these parts, each deflated (written here: the
/// container of xlsx, xlsb and ods).
pub fn zip_of(parts: &[(&str, &[u8])]) -> Vec<u8> {
    let packed: Vec<(&str, Packed)> = parts.iter().map(|(n, d)| (*n, Packed::of(d))).collect();
    zip_packed(&packed)
}

pub fn zip_packed(parts: &[(&str, Packed)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, part) in parts {
        let offset = out.len() as u32;
        let head = |sig: &[u8], central: bool| {
            let mut h = sig.to_vec();
            if central {
                h.extend_from_slice(&20u16.to_le_bytes());
            }
            h.extend_from_slice(&20u16.to_le_bytes());
            h.extend_from_slice(&0u16.to_le_bytes());
            h.extend_from_slice(&8u16.to_le_bytes());
            h.extend_from_slice(&[0; 4]);
            h.extend_from_slice(&part.crc.to_le_bytes());
            h.extend_from_slice(&(part.packed.len() as u32).to_le_bytes());
            h.extend_from_slice(&part.len.to_le_bytes());
            h.extend_from_slice(&(name.len() as u16).to_le_bytes());
            h.extend_from_slice(&0u16.to_le_bytes());
            if central {
                h.extend_from_slice(&[0; 10]);
                h.extend_from_slice(&offset.to_le_bytes());
            }
            h.extend_from_slice(name.as_bytes());
            h
        };
        out.extend_from_slice(&head(b"PK\x03\x04", false));
        out.extend_from_slice(&part.packed);
        central.extend_from_slice(&head(b"PK\x01\x02", true));
    }
    let at = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(b"PK\x05\x06\0\0\0\0");
    out.extend_from_slice(&(parts.len() as u16).to_le_bytes());
    out.extend_from_slice(&(parts.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&at.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// The parts of an xlsx workbook whose sheets are these (name, sheet XML),
/// with these shared strings and styles.
pub fn xlsx_of(sheets: &[(&str, &str)], shared: Option<&[u8]>, styles: Option<&str>) -> Vec<u8> {
    xlsx_packed(sheets, shared.map(Packed::of), styles)
}

pub fn xlsx_packed(
    sheets: &[(&str, &str)],
    shared: Option<Packed>,
    styles: Option<&str>,
) -> Vec<u8> {
    let mut parts: Vec<(String, Packed)> = vec![
        (
            "_rels/.rels".into(),
            Packed::of(br#"<?xml version="1.0" encoding="UTF-8"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#),
        ),
    ];
    let mut book = String::from(
        r#"<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>"#,
    );
    let mut rels = String::from(
        r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">"#,
    );
    for (i, (name, xml)) in sheets.iter().enumerate() {
        book.push_str(&format!(
            r#"<sheet name="{name}" sheetId="{}" r:id="rId{}"/>"#,
            i + 1,
            i + 1
        ));
        rels.push_str(&format!(r#"<Relationship Id="rId{}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet{}.xml"/>"#, i + 1, i + 1));
        parts.push((
            format!("xl/worksheets/sheet{}.xml", i + 1),
            Packed::of(xml.as_bytes()),
        ));
    }
    book.push_str("</sheets></workbook>");
    if let Some(sst) = shared {
        rels.push_str(r#"<Relationship Id="rS" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/>"#);
        parts.push(("xl/sharedStrings.xml".into(), sst));
    }
    if let Some(st) = styles {
        rels.push_str(r#"<Relationship Id="rY" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>"#);
        parts.push(("xl/styles.xml".into(), Packed::of(st.as_bytes())));
    }
    rels.push_str("</Relationships>");
    parts.push(("xl/workbook.xml".into(), Packed::of(book.as_bytes())));
    parts.push((
        "xl/_rels/workbook.xml.rels".into(),
        Packed::of(rels.as_bytes()),
    ));
    let refs: Vec<(&str, Packed)> = parts.into_iter().map(|(n, d)| (leak(n), d)).collect();
    zip_packed(&refs)
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// Shared strings of `n` entries (17 bytes each inflated), the last of them
/// `last`, written into their part piece by piece.
pub fn many_strings(n: u64, last: &str) -> Packed {
    Packed::stream(|w| {
        w.write_all(br#"<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">"#)
            .unwrap();
        let block = "<si><t>a</t></si>".repeat(1000);
        let mut left = n - 1;
        while left >= 1000 {
            w.write_all(block.as_bytes()).unwrap();
            left -= 1000;
        }
        for _ in 0..left {
            w.write_all(b"<si><t>a</t></si>").unwrap();
        }
        write!(w, "<si><t>{last}</t></si></sst>").unwrap();
    })
}

/// A PDF of 600,000 names /Pages (4.2 MB) in a page-tree dictionary of
/// /Count 7: a scan that looks for each one's dictionary end from it reads
/// the file 600,000 times.
pub fn many_pages_pdf() -> Vec<u8> {
    let mut pdf = b"%PDF-1.4\n1 0 obj\n<< /Type /Pages /Count 7 ".to_vec();
    for _ in 0..600_000 {
        pdf.extend_from_slice(b"/Pages ");
    }
    pdf.extend_from_slice(b">>\nendobj\n");
    pdf
}

pub fn varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// A sheet whose first cell names shared string `index`.
pub fn sheet_naming(index: u64) -> String {
    format!(
        r#"<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><dimension ref="A1:B2"/><sheetData><row r="1"><c r="A1" t="s"><v>{index}</v></c><c r="B1" t="inlineStr"><is><t>n</t></is></c></row><row r="2"><c r="A2" t="inlineStr"><is><t>x</t></is></c><c r="B2"><v>2</v></c></row></sheetData></worksheet>"#
    )
}

/// An ODS package whose content is `body` (inside the spreadsheet).
pub fn ods_of(body: &str) -> Vec<u8> {
    let content = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:spreadsheet>{body}</office:spreadsheet></office:body></office:document-content>"#
    );
    zip_of(&[
        (
            "mimetype",
            b"application/vnd.oasis.opendocument.spreadsheet".as_slice(),
        ),
        ("content.xml", content.as_bytes()),
        (
            "META-INF/manifest.xml",
            br#"<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>"#.as_slice(),
        ),
    ])
}

/// BIFF records.
pub fn rec(kind: u16, data: &[u8]) -> Vec<u8> {
    let mut r = kind.to_le_bytes().to_vec();
    r.extend_from_slice(&(data.len() as u16).to_le_bytes());
    r.extend_from_slice(data);
    r
}

pub fn bof(dt: u16) -> Vec<u8> {
    let mut d = 0x0600u16.to_le_bytes().to_vec();
    d.extend_from_slice(&dt.to_le_bytes());
    d.extend_from_slice(&[0; 12]);
    rec(0x0809, &d)
}

/// An xls workbook (BIFF8 in a compound file) of one sheet: its shared
/// strings, its DIMENSIONS (first row, last row + 1, first and last col +
/// 1), and its cell records.
pub fn xls_of(strings: &[&str], dims: (u32, u32, u16, u16), cells: &[Vec<u8>]) -> Vec<u8> {
    let mut sst = Vec::new();
    sst.extend_from_slice(&(strings.len() as u32).to_le_bytes());
    sst.extend_from_slice(&(strings.len() as u32).to_le_bytes());
    for s in strings {
        sst.extend_from_slice(&(s.len() as u16).to_le_bytes());
        sst.push(0);
        sst.extend_from_slice(s.as_bytes());
    }
    let sheet_name = b"Data";
    let boundsheet = |pos: u32| {
        let mut d = pos.to_le_bytes().to_vec();
        d.extend_from_slice(&[0, 0, sheet_name.len() as u8, 0]);
        d.extend_from_slice(sheet_name);
        rec(0x0085, &d)
    };
    let globals_len = bof(5).len() + boundsheet(0).len() + rec(0x00FC, &sst).len() + 4;
    let mut stream = bof(5);
    stream.extend(boundsheet(globals_len as u32));
    stream.extend(rec(0x00FC, &sst));
    stream.extend(rec(0x000A, &[]));
    stream.extend(bof(0x10));
    let mut d = dims.0.to_le_bytes().to_vec();
    d.extend_from_slice(&dims.1.to_le_bytes());
    d.extend_from_slice(&dims.2.to_le_bytes());
    d.extend_from_slice(&dims.3.to_le_bytes());
    d.extend_from_slice(&[0, 0]);
    stream.extend(rec(0x0200, &d));
    for c in cells {
        stream.extend_from_slice(c);
    }
    stream.extend(rec(0x000A, &[]));
    // Past the small-stream cutoff, so it lives in ordinary sectors.
    stream.resize(stream.len().max(4096), 0);
    cfb_of(&stream)
}

/// A compound file (512-byte sectors) holding one stream, `Workbook`.
pub fn cfb_of(stream: &[u8]) -> Vec<u8> {
    let n = stream.len().div_ceil(512);
    assert!(n < 126);
    let mut h = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1".to_vec();
    h.resize(0x18, 0);
    for v in [0x3Eu16, 3, 0xFFFE, 9, 6] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    h.resize(0x2C, 0);
    for v in [1u32, 1, 0, 4096, 0xFFFF_FFFE, 0, 0xFFFF_FFFE, 0, 0] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    while h.len() < 512 {
        h.extend_from_slice(&0xFFFF_FFFFu32.to_le_bytes());
    }
    // FAT: itself, the directory, then the stream's chain.
    let mut fat = vec![0xFFFF_FFFDu32, 0xFFFF_FFFE];
    for i in 0..n {
        fat.push(if i + 1 == n {
            0xFFFF_FFFE
        } else {
            (i + 3) as u32
        });
    }
    fat.resize(128, 0xFFFF_FFFF);
    for v in fat {
        h.extend_from_slice(&v.to_le_bytes());
    }
    let entry = |name: &str, kind: u8, start: u32, size: u32| {
        let mut e = Vec::new();
        let units: Vec<u16> = name.encode_utf16().chain([0]).collect();
        for u in &units {
            e.extend_from_slice(&u.to_le_bytes());
        }
        e.resize(0x40, 0);
        e.extend_from_slice(&((units.len() * 2) as u16).to_le_bytes());
        e.push(kind);
        e.push(1);
        e.extend_from_slice(&[0xFF; 12]);
        e.resize(0x74, 0);
        e.extend_from_slice(&start.to_le_bytes());
        e.extend_from_slice(&size.to_le_bytes());
        e.resize(128, 0);
        e
    };
    h.extend(entry("Root Entry", 5, 0xFFFF_FFFE, 0));
    h.extend(entry("Workbook", 2, 2, stream.len() as u32));
    h.resize(512 * 3, 0);
    h.extend_from_slice(stream);
    h.resize(512 * (3 + n), 0);
    h
}

pub fn labelsst(r: u16, c: u16, i: u32) -> Vec<u8> {
    let mut d = r.to_le_bytes().to_vec();
    d.extend_from_slice(&c.to_le_bytes());
    d.extend_from_slice(&0u16.to_le_bytes());
    d.extend_from_slice(&i.to_le_bytes());
    rec(0x00FD, &d)
}

pub fn number(r: u16, c: u16, v: f64) -> Vec<u8> {
    let mut d = r.to_le_bytes().to_vec();
    d.extend_from_slice(&c.to_le_bytes());
    d.extend_from_slice(&0u16.to_le_bytes());
    d.extend_from_slice(&v.to_le_bytes());
    rec(0x0203, &d)
}

/// A Parquet file around `footer`.
pub fn parquet_of(footer: &[u8]) -> Vec<u8> {
    let mut file = b"PAR1".to_vec();
    file.extend_from_slice(footer);
    file.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    file.extend_from_slice(b"PAR1");
    file
}

/// A BIFF12 record: its type and size as variable-length numbers.
pub fn brt(kind: u32, data: &[u8]) -> Vec<u8> {
    let mut r = Vec::new();
    let mut v = kind;
    loop {
        let b = (v & 0x7F) as u8;
        v >>= 7;
        if v == 0 {
            r.push(b);
            break;
        }
        r.push(b | 0x80);
    }
    let mut n = data.len() as u32;
    loop {
        let b = (n & 0x7F) as u8;
        n >>= 7;
        if n == 0 {
            r.push(b);
            break;
        }
        r.push(b | 0x80);
    }
    r.extend_from_slice(data);
    r
}

pub fn wide(s: &str) -> Vec<u8> {
    let units: Vec<u16> = s.encode_utf16().collect();
    let mut out = (units.len() as u32).to_le_bytes().to_vec();
    for u in units {
        out.extend_from_slice(&u.to_le_bytes());
    }
    out
}

/// The attacks of issue 33, by name (with the extension that picks the
/// reader), each a few bytes to a few MB.
pub fn all() -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    // 400 KB of nesting.
    let depth = 200_000;
    let mut deep = "[".repeat(depth);
    deep.push_str(&"]".repeat(depth));
    out.push(("nested.json", deep.into_bytes()));
    // Shared strings claiming 10^18 and 2×10^9 of them.
    for (name, claim) in [
        ("sst-1e18.xlsx", "1000000000000000000"),
        ("sst-2e9.xlsx", "2000000000"),
    ] {
        let sst = format!(
            r#"<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="{claim}" uniqueCount="{claim}"><si><t>region</t></si></sst>"#
        );
        out.push((
            name,
            xlsx_of(&[("S", &sheet_naming(0))], Some(sst.as_bytes()), None),
        ));
    }
    // Ten million shared strings (170 MB inflated); the first row names the last.
    let n = 10_000_000u64;
    out.push((
        "sst-10m.xlsx",
        xlsx_packed(
            &[("S", &sheet_naming(n - 1))],
            Some(many_strings(n, "last")),
            None,
        ),
    ));
    // 800 bytes of ODS: a row repeated a million times, a cell 16,384 times.
    let body = r#"<table:table table:name="R"><table:table-row><table:table-cell office:value-type="string"><text:p>id</text:p></table:table-cell></table:table-row><table:table-row table:number-rows-repeated="1048575"><table:table-cell office:value-type="float" office:value="7" table:number-columns-repeated="16384"><text:p>7</text:p></table:table-cell></table:table-row></table:table>"#;
    out.push(("repeated.ods", ods_of(body)));
    // A sparse XLS: a cell at each end of 65,536 rows × 256 columns.
    out.push((
        "sparse.xls",
        xls_of(
            &["n"],
            (0, 65_536, 0, 256),
            &[
                labelsst(0, 0, 0),
                number(1, 0, 1.0),
                number(65_535, 255, 2.0),
            ],
        ),
    ));
    // A 23-byte Parquet whose footer declares a map of 2^62 booleans.
    out.push((
        "endless.parquet",
        parquet_of(&[
            0x7B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x3F, 0x11,
        ]),
    ));
    // Four million schema elements.
    let n = 4_000_000u64;
    let mut m = vec![0x29, 0xFC];
    varint(&mut m, n);
    m.resize(m.len() + n as usize, 0);
    m.push(0);
    out.push(("schema-4m.parquet", parquet_of(&m)));
    out.push(("pages-600k.pdf", many_pages_pdf()));
    // A CSV of a million columns (in its first 1 MB: 300,000 a row).
    let mut csv = ",".repeat(299_999);
    csv.push('\n');
    csv.push_str(&"1,".repeat(299_999));
    csv.push_str("1\n");
    out.push(("columns.csv", csv.into_bytes()));
    out
}
