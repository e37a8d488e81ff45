//! Each format described from a real small file written here.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::*;

// A counting global allocator is an `unsafe impl GlobalAlloc` or nothing:
// the one `unsafe` outside the sandbox's `sys.rs`, in test code only.
#[allow(unsafe_code)]
mod alloc;
mod attacks;
pub(crate) use codeloop_testkit::attack_files as files;

use files::{varint, zip_of};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn describe_bytes(name: &str, bytes: &[u8]) -> InputDescription {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), name, bytes);
    describe(&p).unwrap()
}

fn table(d: &InputDescription) -> &Table {
    match &d.what {
        What::Table(t) => t,
        other => panic!("not a table: {other:?}"),
    }
}

#[test]
fn a_csv_has_its_delimiter_header_typed_columns_and_exact_rows() {
    let csv = "id,price,day,paid,city,note\n\
               1,3.5,2024-01-31,true,Oslo,\n\
               2,4,2024-02-01,false,\"Bergen, NO\",x\n\
               3,10.25,2024-02-02,true,Paris,\n";
    let d = describe_bytes("sales.csv", csv.as_bytes());
    let t = table(&d);
    assert_eq!(t.delimiter, ',');
    assert!(t.header);
    assert_eq!(t.rows, Count::exact(3));
    let kinds: Vec<(&str, CellKind)> = t
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.kind))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("id", CellKind::Int),
            ("price", CellKind::Float),
            ("day", CellKind::Date),
            ("paid", CellKind::Bool),
            ("city", CellKind::Text),
            ("note", CellKind::Text),
        ]
    );
    assert_eq!(t.columns[4].samples, vec!["Oslo", "Bergen, NO", "Paris"]);
    assert_eq!(t.columns[5].empty, 2);
    let text = d.render();
    assert!(text.contains("CSV (comma), 6 columns, 3 rows"), "{text}");
    assert!(
        text.contains("- price: float, e.g. 3.5, 4, 10.25"),
        "{text}"
    );
    assert!(
        text.contains("- city: text, e.g. Oslo, \"Bergen, NO\", Paris"),
        "{text}"
    );
}

#[test]
fn a_tsv_without_a_header_and_a_semicolon_table_with_quoted_newlines() {
    let d = describe_bytes("m.tsv", b"1\t2.5\tx\n2\t3.5\ty\n");
    let t = table(&d);
    assert_eq!((t.delimiter, t.header), ('\t', false));
    assert_eq!(t.columns[0].name, "column 1");
    assert_eq!(t.rows, Count::exact(2));
    let d = describe_bytes(
        "q.txt",
        b"name;comment;n\nann;\"two\nlines\";1\nbob;\"a;b\";2\ncid;plain;3\n",
    );
    let t = table(&d);
    assert_eq!((t.delimiter, t.header), (';', true));
    assert_eq!(t.rows, Count::exact(3));
    assert_eq!(t.columns[2].kind, CellKind::Int);
}

#[test]
fn a_large_csv_is_estimated_and_said_to_be() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.csv");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
    writeln!(f, "id,value,label").unwrap();
    let mut rows = 0u64;
    let mut size = 0u64;
    while size <= EXACT_BYTES + (1 << 20) {
        let line = format!("{rows},{}.5,label-{}\n", rows * 7, rows % 13);
        size += line.len() as u64;
        f.write_all(line.as_bytes()).unwrap();
        rows += 1;
    }
    drop(f);
    let d = describe(&p).unwrap();
    let t = table(&d);
    assert_eq!(t.rows.how, Counted::Estimate);
    let off = (t.rows.value as f64 - rows as f64).abs() / rows as f64;
    assert!(off < 0.05, "estimate {} for {rows}", t.rows.value);
    assert!(d.render().contains("(an estimate)"), "{}", d.render());
    // A file just under the bound is counted exactly, in a streamed pass.
    let small = dir.path().join("mid.csv");
    let mut f = std::fs::File::create(&small).unwrap();
    let block = "1,2.5,x\n".repeat(1 << 17);
    for _ in 0..2 {
        f.write_all(block.as_bytes()).unwrap();
    }
    drop(f);
    let d = describe(&small).unwrap();
    assert_eq!(table(&d).rows, Count::exact(2 << 17));
}

#[test]
fn json_shows_keys_and_types_two_levels_deep() {
    let doc = br#"{"name": "demo", "version": 3, "ratio": 0.5, "ok": true,
        "owner": {"id": 7, "address": {"city": "Oslo", "geo": {"lat": 1.0}}},
        "tags": ["a", "b", "c"], "none": null}"#;
    let d = describe_bytes("config.json", doc);
    let What::Json(j) = &d.what else {
        panic!("{:?}", d.what)
    };
    let Shape::Object { fields, .. } = &j.shape else {
        panic!("{:?}", j.shape)
    };
    let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["name", "version", "ratio", "ok", "owner", "tags", "none"]
    );
    let text = d.render();
    assert!(text.contains("- version: int"), "{text}");
    assert!(
        text.contains("- owner: {id: int, address: {city: string, geo: object (1 key)}}"),
        "{text}"
    );
    assert!(text.contains("- tags: array of string (3 items)"), "{text}");
}

#[test]
fn a_json_array_of_objects_has_its_length_and_optional_fields() {
    let doc = br#"[{"id": 1, "score": 2}, {"id": 2, "score": 2.5, "extra": "x"}, {"id": 3, "score": null}]"#;
    let d = describe_bytes("rows.json", doc);
    assert!(
        d.summary().contains("an array of 3 objects"),
        "{}",
        d.summary()
    );
    let text = d.render();
    assert!(text.contains("- score (optional): float"), "{text}");
    assert!(text.contains("- extra (optional): string"), "{text}");
    assert!(text.contains("- id: int"), "{text}");
}

#[test]
fn json_lines_are_counted_and_their_records_merged() {
    let doc = b"{\"t\": \"2024-01-01\", \"v\": 1}\n{\"t\": \"2024-01-02\", \"v\": 2.5}\nnot json\n{\"t\": \"x\", \"v\": 3, \"w\": [1]}\n";
    let d = describe_bytes("events.jsonl", doc);
    let What::JsonLines(j) = &d.what else {
        panic!("{:?}", d.what)
    };
    assert_eq!(j.records, Count::exact(4));
    assert_eq!(j.invalid, 1);
    let text = d.render();
    assert!(text.contains("- v: float"), "{text}");
    assert!(text.contains("- w (optional): array of int"), "{text}");
    // Without the extension, two lines of objects are JSON Lines too.
    let d = describe_bytes("events.log", b"{\"a\": 1}\n{\"a\": 2}\n");
    assert!(matches!(d.what, What::JsonLines(_)), "{:?}", d.what);
}

fn xlsx(path: &Path) {
    let files: &[(&str, &str)] = &[
        (
            "[Content_Types].xml",
            r#"<?xml version="1.0" encoding="UTF-8"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/worksheets/sheet2.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>"#,
        ),
        (
            "_rels/.rels",
            r#"<?xml version="1.0" encoding="UTF-8"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#,
        ),
        (
            "xl/workbook.xml",
            r#"<?xml version="1.0" encoding="UTF-8"?>
<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sales" sheetId="1" r:id="rId1"/><sheet name="Notes" sheetId="2" r:id="rId2"/></sheets></workbook>"#,
        ),
        (
            "xl/_rels/workbook.xml.rels",
            r#"<?xml version="1.0" encoding="UTF-8"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet2.xml"/></Relationships>"#,
        ),
        (
            "xl/worksheets/sheet1.xml",
            r#"<?xml version="1.0" encoding="UTF-8"?>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><dimension ref="A1:C4"/><sheetData>
<row r="1"><c r="A1" t="inlineStr"><is><t>region</t></is></c><c r="B1" t="inlineStr"><is><t>units</t></is></c><c r="C1" t="inlineStr"><is><t>price</t></is></c></row>
<row r="2"><c r="A2" t="inlineStr"><is><t>north</t></is></c><c r="B2"><v>12</v></c><c r="C2"><v>3.5</v></c></row>
<row r="3"><c r="A3" t="inlineStr"><is><t>south</t></is></c><c r="B3"><v>7</v></c><c r="C3"><v>4.25</v></c></row>
<row r="4"><c r="A4" t="inlineStr"><is><t>east</t></is></c><c r="B4"><v>9</v></c><c r="C4"><v>2</v></c></row>
</sheetData></worksheet>"#,
        ),
        (
            "xl/worksheets/sheet2.xml",
            r#"<?xml version="1.0" encoding="UTF-8"?>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><dimension ref="A1:A1"/><sheetData>
<row r="1"><c r="A1" t="inlineStr"><is><t>hello</t></is></c></row>
</sheetData></worksheet>"#,
        ),
    ];
    let parts: Vec<(&str, &[u8])> = files.iter().map(|(n, t)| (*n, t.as_bytes())).collect();
    std::fs::write(path, zip_of(&parts)).unwrap();
}

#[test]
fn an_xlsx_workbook_has_its_sheets_and_typed_columns() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("book.xlsx");
    xlsx(&p);
    let d = describe(&p).unwrap();
    let What::Excel(w) = &d.what else {
        panic!("{:?} {:?}", d.what, d.notes)
    };
    assert_eq!(w.sheets.len(), 2);
    let s = &w.sheets[0];
    assert_eq!(
        (s.name.as_str(), s.rows, s.header),
        ("Sales", Some(4), true)
    );
    let kinds: Vec<(&str, CellKind)> = s
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("region", CellKind::Text),
            ("units", CellKind::Float),
            ("price", CellKind::Float)
        ]
    );
    let text = d.render();
    assert!(
        text.contains("xlsx workbook, 2 sheets: Sales, Notes"),
        "{text}"
    );
    assert!(text.contains("sheet \"Sales\": 4 rows used"), "{text}");
}

/// Thrift compact encoding, as much as a footer needs.
fn field(out: &mut Vec<u8>, last: &mut i16, id: i16, t: u8) {
    out.push((((id - *last) as u8) << 4) | t);
    *last = id;
}
fn zigzag(out: &mut Vec<u8>, v: i64) {
    varint(out, ((v << 1) ^ (v >> 63)) as u64);
}
fn string(out: &mut Vec<u8>, s: &str) {
    varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

#[test]
fn a_parquet_footer_gives_the_schema_and_rows() {
    // schema: root { id: int64 required, name: string optional, geo: { lat: double } }
    let mut m = Vec::new();
    let mut last = 0;
    field(&mut m, &mut last, 1, 5);
    zigzag(&mut m, 1);
    field(&mut m, &mut last, 2, 9);
    m.push((5 << 4) | 12);
    // (physical type, repetition, name, children, converted type)
    type Element<'a> = (Option<i64>, Option<i64>, &'a str, i64, Option<i64>);
    let elements: &[Element] = &[
        (None, None, "schema", 3, None),
        (Some(2), Some(0), "id", 0, None),
        (Some(6), Some(1), "name", 0, Some(0)),
        (None, Some(0), "geo", 1, None),
        (Some(5), Some(1), "lat", 0, None),
    ];
    for (ty, rep, name, children, converted) in elements {
        let mut l = 0;
        if let Some(t) = ty {
            field(&mut m, &mut l, 1, 5);
            zigzag(&mut m, *t);
        }
        if let Some(r) = rep {
            field(&mut m, &mut l, 3, 5);
            zigzag(&mut m, *r);
        }
        field(&mut m, &mut l, 4, 8);
        string(&mut m, name);
        if *children > 0 {
            field(&mut m, &mut l, 5, 5);
            zigzag(&mut m, *children);
        }
        if let Some(c) = converted {
            field(&mut m, &mut l, 6, 5);
            zigzag(&mut m, *c);
        }
        m.push(0);
    }
    field(&mut m, &mut last, 3, 6);
    zigzag(&mut m, 1234);
    field(&mut m, &mut last, 4, 9);
    m.push(12); // an empty list of row groups
    field(&mut m, &mut last, 6, 8);
    string(&mut m, "codeloop test");
    m.push(0);
    let mut file = b"PAR1".to_vec();
    file.extend_from_slice(&[0u8; 16]); // where the data pages would be
    file.extend_from_slice(&m);
    file.extend_from_slice(&(m.len() as u32).to_le_bytes());
    file.extend_from_slice(b"PAR1");
    let d = describe_bytes("t.parquet", &file);
    let What::Parquet(p) = &d.what else {
        panic!("{:?}", d.what)
    };
    assert_eq!(p.rows, Some(1234));
    let cols: Vec<(&str, &str, bool)> = p
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.kind.as_str(), c.optional))
        .collect();
    assert_eq!(
        cols,
        [
            ("id", "int64", false),
            ("name", "string", true),
            ("geo.lat", "double", true)
        ]
    );
    assert!(
        d.summary().contains("3 columns, 1,234 rows"),
        "{}",
        d.summary()
    );
    // A cut file says so, honestly.
    let d = describe_bytes("cut.parquet", &file[..file.len() - 3]);
    assert!(d.summary().contains("schema not read"), "{}", d.summary());
}

#[test]
fn images_have_their_format_and_size() {
    let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    png.extend_from_slice(&640u32.to_be_bytes());
    png.extend_from_slice(&480u32.to_be_bytes());
    png.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    let mut gif = b"GIF89a".to_vec();
    gif.extend_from_slice(&[0x20, 0x00, 0x10, 0x00, 0, 0, 0]);
    let mut bmp = b"BM".to_vec();
    bmp.extend_from_slice(&[0; 12]);
    bmp.extend_from_slice(&40u32.to_le_bytes());
    bmp.extend_from_slice(&100i32.to_le_bytes());
    bmp.extend_from_slice(&(-50i32).to_le_bytes());
    bmp.extend_from_slice(&[0; 8]);
    let mut webp = b"RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00".to_vec();
    webp.extend_from_slice(&[0x1f, 0x03, 0x00, 0xef, 0x01, 0x00]); // 800 x 496
    // JPEG: SOI, an APP0 segment, then SOF0 with 120 high, 160 wide.
    let mut jpg = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10];
    jpg.extend_from_slice(b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00");
    jpg.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00, 0x78, 0x00, 0xA0, 0x03]);
    jpg.extend_from_slice(&[0; 9]);
    for (name, bytes, want) in [
        ("a.png", png, "PNG image, 640 × 480 pixels"),
        ("a.gif", gif, "GIF image, 32 × 16 pixels"),
        ("a.bmp", bmp, "BMP image, 100 × 50 pixels"),
        ("a.webp", webp, "WebP image, 800 × 496 pixels"),
        ("a.jpg", jpg, "JPEG image, 160 × 120 pixels"),
    ] {
        let d = describe_bytes(name, &bytes);
        assert!(d.summary().starts_with(want), "{name}: {}", d.summary());
    }
}

#[test]
fn a_pdf_has_its_version_and_pages() {
    let pdf = b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n\
                2 0 obj\n<< /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >>\nendobj\n\
                3 0 obj\n<< /Type /Page /Parent 2 0 R >>\nendobj\n%%EOF\n";
    let d = describe_bytes("doc.pdf", pdf);
    let What::Pdf(p) = &d.what else {
        panic!("{:?}", d.what)
    };
    assert_eq!(p.version.as_deref(), Some("1.7"));
    assert_eq!(p.pages, Some(Count::exact(3)));
    let d = describe_bytes("odd.pdf", b"%PDF-1.5\n(compressed)\n");
    assert!(d.summary().contains("pages not counted"), "{}", d.summary());
    assert!(
        d.render().contains("note: its page tree was not found"),
        "{}",
        d.render()
    );
}

#[test]
fn text_has_its_encoding_lines_and_first_lines() {
    let d = describe_bytes(
        "poem.txt",
        "first line\nsecond — with a dash\nthird".as_bytes(),
    );
    let What::Text(t) = &d.what else {
        panic!("{:?}", d.what)
    };
    assert_eq!((t.encoding.as_str(), t.lines), ("UTF-8", Count::exact(3)));
    assert_eq!(t.first_lines[1], "second — with a dash");
    let mut utf16 = vec![0xFF, 0xFE];
    for u in "héllo\nworld\n".encode_utf16() {
        utf16.extend_from_slice(&u.to_le_bytes());
    }
    let d = describe_bytes("u.txt", &utf16);
    let What::Text(t) = &d.what else {
        panic!("{:?}", d.what)
    };
    assert_eq!(t.encoding, "UTF-16 LE (BOM)");
    assert_eq!(t.first_lines, ["héllo", "world"]);
    let d = describe_bytes("l.txt", b"caf\xe9 au lait\nna\xefve\n");
    let What::Text(t) = &d.what else {
        panic!("{:?}", d.what)
    };
    assert!(t.encoding.starts_with("latin-1"), "{}", t.encoding);
    assert_eq!(t.first_lines[0], "café au lait");
}

#[test]
fn anything_else_has_a_hex_head_and_a_guess() {
    let d = describe_bytes(
        "blob.bin",
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x00\x01\x02",
    );
    let What::Other(o) = &d.what else {
        panic!("{:?}", d.what)
    };
    assert_eq!(o.guess, "gzip-compressed data");
    assert!(o.hex_head.starts_with("1f 8b 08 00"), "{}", o.hex_head);
    let d = describe_bytes("x.dat", &[0u8, 1, 2, 3, 200, 201]);
    assert!(
        d.render().contains("first bytes: 00 01 02 03 c8 c9"),
        "{}",
        d.render()
    );
}

#[test]
fn the_rendering_is_bounded_and_says_what_it_left_out() {
    let header: Vec<String> = (0..300).map(|i| format!("measurement_{i}")).collect();
    let row: Vec<String> = (0..300).map(|i| i.to_string()).collect();
    let csv = format!("{}\n{}\n", header.join(","), row.join(","));
    let d = describe_bytes("wide.csv", csv.as_bytes());
    let text = d.render();
    assert!(
        text.chars().count() <= RENDER_CHARS,
        "{}",
        text.chars().count()
    );
    assert!(text.contains("more lines left out"), "{text}");
    assert!(d.render().contains("256 columns"), "{text}");
}

#[test]
fn a_description_round_trips_through_serde() {
    let d = describe_bytes("s.csv", b"a,b\n1,x\n");
    let json = serde_json::to_string(&d).unwrap();
    let back: InputDescription = serde_json::from_str(&json).unwrap();
    assert_eq!(back, d);
}

#[test]
fn what_no_run_could_read_is_refused_with_why_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let missing = describe(&dir.path().join("nope.csv")).unwrap_err();
    assert_eq!(missing.why, "does not exist");
    assert!(missing.todo.contains("check the path"), "{missing}");
    let folder = describe(dir.path()).unwrap_err();
    assert!(folder.why.contains("is a folder"), "{folder}");
    // A FIFO is refused at once: nothing waits for a writer.
    let fifo = dir.path().join("pipe");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let refused = describe(&fifo).unwrap_err();
    assert!(refused.why.contains("named pipe"), "{refused}");
    let dev = describe(Path::new("/dev/null")).unwrap_err();
    assert!(dev.why.contains("is a device"), "{dev}");
}

#[test]
fn an_unreadable_file_is_refused_for_an_ordinary_user() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "secret.csv", b"a,b\n1,2\n");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
    if rustix::process::geteuid().is_root() {
        // Root reads everything: tests/run_inputs.rs runs this as an
        // ordinary user through runuser.
        assert!(describe(&p).is_ok());
        return;
    }
    let refused = describe(&p).unwrap_err();
    assert!(refused.why.contains("is not readable by you"), "{refused}");
    assert!(refused.todo.contains("chmod"), "{refused}");
}

#[test]
fn a_pdf_whose_page_tree_is_in_a_compressed_object_stream_has_its_pages() {
    use flate2::write::ZlibEncoder;
    let mut z = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(b"2 0 3 60 <</Type/Pages/Kids[3 0 R]/Count 12>> <</Type/Page/Parent 2 0 R>>")
        .unwrap();
    let packed = z.finish().unwrap();
    let mut pdf =
        b"%PDF-1.5\n5 0 obj\n<</Type/ObjStm/N 2/First 8/Filter/FlateDecode/Length ".to_vec();
    pdf.extend_from_slice(format!("{}>>\nstream\n", packed.len()).as_bytes());
    pdf.extend_from_slice(&packed);
    pdf.extend_from_slice(b"\nendstream\nendobj\n%%EOF\n");
    let d = describe_bytes("packed.pdf", &pdf);
    let What::Pdf(p) = &d.what else {
        panic!("{:?}", d.what)
    };
    assert_eq!(p.pages, Some(Count::exact(12)), "{:?}", d.notes);
}

/// A real file of `scripts/input_fixtures.py`.
fn fixture(name: &str) -> InputDescription {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/inputs")
        .join(name);
    describe(&path).unwrap()
}

#[test]
fn spreadsheet_dates_are_iso_dates_never_serial_numbers() {
    for name in ["book.xlsx", "book.ods"] {
        let text = fixture(name).render();
        assert!(
            text.contains("- when: date, e.g. 2024-01-01, 2024-01-02, 2024-02-29"),
            "{name}: {text}"
        );
        assert!(
            text.contains("- at: datetime, e.g. 2024-01-01 09:30:00, 2024-01-02 14:00:00"),
            "{name}: {text}"
        );
        assert!(!text.contains("4529"), "{name}: {text}");
    }
    // One sheet, one row: said so, not "1 sheets", "1 rows".
    let text = fixture("book.ods").render();
    assert!(text.contains("ods workbook, 1 sheet: Sales"), "{text}");
    assert!(
        fixture("book.xlsx")
            .render()
            .contains("\"Notes\": 1 row used")
    );
}
