//! Files that lie: each is tiny, made here, and states a count, a depth or
//! a size that a parser trusting it would follow into a crash, a huge
//! allocation or a loop without end. Each is described, within
//! `BUDGET` bytes of heap, saying what it could not tell.

use super::alloc::peak_of;
use super::files::*;
use super::*;

/// The heap one description may take at once (the goal: 16 MB in all).
const BUDGET: usize = 12 << 20;

fn described(name: &str, bytes: &[u8]) -> (InputDescription, usize) {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), name, bytes);
    let (d, peak) = peak_of(|| describe(&p).unwrap());
    eprintln!(
        "{name}: {} bytes, peak heap {:.2} MiB",
        bytes.len(),
        peak as f64 / f64::from(1 << 20)
    );
    assert!(
        peak <= BUDGET,
        "{name}: describing it took {} MiB of heap",
        peak >> 20
    );
    (d, peak)
}

fn workbook(d: &InputDescription) -> &Workbook {
    match &d.what {
        What::Excel(w) => w,
        other => panic!("not a workbook: {other:?} {:?}", d.notes),
    }
}

#[test]
fn json_nested_deeper_than_any_stack_is_counted_not_recursed() {
    // 400 KB of nesting: a recursive parser overflows its stack and aborts.
    let depth = 200_000;
    let mut doc = "[".repeat(depth);
    doc.push_str(&"]".repeat(depth));
    let (d, _) = described("deep.json", doc.as_bytes());
    assert!(matches!(d.what, What::Json(_)), "{:?}", d.what);
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("more than 64 levels deep")),
        "{:?}",
        d.notes
    );
    let text = d.render();
    assert!(text.contains("array"), "{text}");
    // Objects too, and in JSON Lines.
    let mut obj = "{\"a\":".repeat(depth);
    obj.push('1');
    obj.push_str(&"}".repeat(depth));
    let (d, _) = described("deep2.json", obj.as_bytes());
    assert!(matches!(d.what, What::Json(_)), "{:?}", d.what);
    let mut lines = String::new();
    for _ in 0..2 {
        lines.push_str(&"[".repeat(50_000));
        lines.push_str(&"]".repeat(50_000));
        lines.push('\n');
    }
    let (d, _) = described("deep.jsonl", lines.as_bytes());
    assert!(matches!(d.what, What::JsonLines(_)), "{:?}", d.what);
}

#[test]
fn json_with_many_keys_keeps_a_bounded_shape() {
    // 40 keys of 40 keys of 40 keys: 64,000 fields if all were kept.
    let leaf: String = (0..40)
        .map(|i| format!("\"k{i}\":1"))
        .collect::<Vec<_>>()
        .join(",");
    let mid: String = (0..40)
        .map(|i| format!("\"m{i}\":{{{leaf}}}"))
        .collect::<Vec<_>>()
        .join(",");
    let top: String = (0..40)
        .map(|i| format!("\"t{i}\":{{{mid}}}"))
        .collect::<Vec<_>>()
        .join(",");
    let (d, _) = described("wide.json", format!("{{{top}}}").as_bytes());
    let What::Json(j) = &d.what else {
        panic!("{:?}", d.what)
    };
    assert!(j.shape.fields() <= 512, "{}", j.shape.fields());
}

#[test]
fn an_xlsx_whose_shared_strings_claim_any_count_is_described() {
    // The count a reader would reserve for: 10^18 (a capacity overflow,
    // a panic) and 2×10^9 (a 48 GB allocation, an abort).
    for claim in ["1000000000000000000", "2000000000", "18446744073709551615"] {
        let sst = format!(
            r#"<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="{claim}" uniqueCount="{claim}"><si><t>region</t></si></sst>"#
        );
        let book = xlsx_of(&[("S", &sheet_naming(0))], Some(sst.as_bytes()), None);
        let (d, _) = described("claim.xlsx", &book);
        let w = workbook(&d);
        assert_eq!(
            w.sheets[0].columns[0].name, "region",
            "{claim}: {:?}",
            w.sheets
        );
    }
}

#[test]
fn an_xlsx_of_many_shared_strings_keeps_only_those_its_first_rows_name() {
    // 6.8 MB of shared strings once inflated (a reader keeping them all
    // holds ~15 MB); the first row names the last of them.
    let n = 400_000u64;
    let mut sst =
        String::from(r#"<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">"#);
    for i in 0..n {
        if i == n - 1 {
            sst.push_str("<si><t>last</t></si>");
        } else {
            sst.push_str("<si><t>a</t></si>");
        }
    }
    sst.push_str("</sst>");
    let book = xlsx_of(&[("S", &sheet_naming(n - 1))], Some(sst.as_bytes()), None);
    drop(sst);
    let (d, peak) = described("many.xlsx", &book);
    let w = workbook(&d);
    assert_eq!(w.sheets[0].columns[0].name, "last", "{:?}", w.sheets);
    assert!(peak < 4 << 20, "{peak}");
    // Ten million (170 MB inflated): read up to 8 MB of them, and said.
    let n = 10_000_000u64;
    let book = xlsx_packed(
        &[("S", &sheet_naming(n - 1))],
        Some(many_strings(n, "last")),
        None,
    );
    let (d, _) = described("10m.xlsx", &book);
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("shared strings past the")),
        "{:?}",
        d.notes
    );
}

#[test]
fn an_xlsx_sheet_whose_dimension_and_rows_say_a_million_keeps_its_sample() {
    let mut xml = String::from(r#"<worksheet><dimension ref="A1:XFD1048576"/><sheetData>"#);
    for r in [1u64, 2, 3, 1_048_576] {
        xml.push_str(&format!(
            r#"<row r="{r}"><c r="A{r}"><v>{r}</v></c><c r="XFD{r}"><v>1</v></c></row>"#
        ));
    }
    xml.push_str("</sheetData></worksheet>");
    let book = xlsx_of(&[("Big", &xml)], None, None);
    let (d, _) = described("big.xlsx", &book);
    let s = &workbook(&d).sheets[0];
    assert_eq!(s.rows, Some(1_048_576));
    assert_eq!(s.columns.len(), 1, "{:?}", s.columns);
}

#[test]
fn an_ods_of_rows_repeated_a_million_times_is_counted_not_expanded() {
    // 800 bytes: a reader that expands repeats holds 16 billion cells.
    let body = r#"<table:table table:name="R"><table:table-row><table:table-cell office:value-type="string"><text:p>id</text:p></table:table-cell><table:table-cell office:value-type="string"><text:p>v</text:p></table:table-cell></table:table-row><table:table-row table:number-rows-repeated="1048575"><table:table-cell office:value-type="float" office:value="7" table:number-columns-repeated="16384"><text:p>7</text:p></table:table-cell></table:table-row></table:table>"#;
    let file = ods_of(body);
    assert!(file.len() < 1600, "{}", file.len());
    let (d, _) = described("rep.ods", &file);
    let s = &workbook(&d).sheets[0];
    assert_eq!(s.name, "R");
    assert_eq!(s.rows, Some(1_048_576));
    assert!(s.header);
    assert_eq!(s.columns.len(), 64);
    assert_eq!(s.columns[0].name, "id");
    assert_eq!(s.columns[0].kind, CellKind::Float);
}

#[test]
fn an_ods_has_its_sheets_and_typed_columns() {
    let body = r#"<table:table table:name="Sales"><table:table-row><table:table-cell office:value-type="string"><text:p>day</text:p></table:table-cell><table:table-cell office:value-type="string"><text:p>paid</text:p></table:table-cell><table:table-cell office:value-type="string"><text:p>note</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell office:value-type="date" office:date-value="2024-01-31"><text:p>31/01/24</text:p></table:table-cell><table:table-cell office:value-type="boolean" office:boolean-value="true"><text:p>TRUE</text:p></table:table-cell><table:table-cell office:value-type="string"><text:p>a<text:s text:c="2"/>b</text:p></table:table-cell></table:table-row><table:table-row table:number-rows-repeated="1000"><table:table-cell table:number-columns-repeated="1024"/></table:table-row></table:table><table:table table:name="Empty"/>"#;
    let (d, _) = described("s.ods", &ods_of(body));
    let w = workbook(&d);
    assert_eq!(w.sheets.len(), 2);
    let s = &w.sheets[0];
    assert_eq!(s.rows, Some(2), "trailing empty rows are not used");
    let kinds: Vec<(&str, CellKind)> = s
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("day", CellKind::Date),
            ("paid", CellKind::Bool),
            ("note", CellKind::Text)
        ]
    );
    assert_eq!(s.columns[2].samples, ["a  b"]);
}

#[test]
fn an_xls_has_its_sheet_and_typed_columns() {
    let cells = [
        labelsst(0, 0, 0),
        labelsst(0, 1, 1),
        labelsst(1, 0, 2),
        number(1, 1, 12.0),
        labelsst(2, 0, 3),
        number(2, 1, 7.5),
    ];
    let (d, _) = described(
        "b.xls",
        &xls_of(&["city", "units", "Oslo", "Rome"], (0, 3, 0, 2), &cells),
    );
    let w = workbook(&d);
    let s = &w.sheets[0];
    assert_eq!((s.name.as_str(), s.rows, s.header), ("Data", Some(3), true));
    let kinds: Vec<(&str, CellKind)> = s
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.kind))
        .collect();
    assert_eq!(
        kinds,
        [("city", CellKind::Text), ("units", CellKind::Float)]
    );
    assert_eq!(s.columns[0].samples, ["Oslo", "Rome"]);
}

#[test]
fn a_sparse_xls_is_described_from_its_first_rows() {
    // A cell at the first row and one at the last of 65,536 rows × 256
    // columns: a reader that makes the range dense holds 1 GiB.
    let cells = [
        labelsst(0, 0, 0),
        number(1, 0, 1.0),
        number(65_535, 255, 2.0),
    ];
    let (d, _) = described("sparse.xls", &xls_of(&["n"], (0, 65_536, 0, 256), &cells));
    let s = &workbook(&d).sheets[0];
    assert_eq!(s.rows, Some(65_536));
    assert_eq!(s.columns.len(), 1);
}

#[test]
fn a_compound_file_whose_chains_loop_or_lie_ends() {
    let mut file = xls_of(&["a"], (0, 1, 0, 1), &[labelsst(0, 0, 0)]);
    // The stream's first sector points at itself.
    let fat = 512;
    file[fat + 2 * 4..fat + 3 * 4].copy_from_slice(&2u32.to_le_bytes());
    let (d, _) = described("loop.xls", &file);
    assert!(
        matches!(d.what, What::Excel(_) | What::Other(_)),
        "{:?}",
        d.what
    );
    // A directory that says its stream is 4 GB long.
    let mut file = xls_of(&["a"], (0, 1, 0, 1), &[labelsst(0, 0, 0)]);
    let size_at = 512 * 2 + 128 + 0x78;
    file[size_at..size_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let (d, _) = described("long.xls", &file);
    assert!(
        d.notes.iter().any(|n| n.contains("sheets after its first")),
        "{:?}",
        d.notes
    );
}

#[test]
fn a_parquet_footer_declaring_endless_lists_ends_at_its_bytes() {
    // A field (id 7) of a map of 2^62 booleans, then of a list of 2^62:
    // booleans in a map take no bytes to a reader that forgets they take
    // one, so it loops 2^62 times.
    for body in [
        vec![
            0x7B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x3F, 0x11,
        ],
        vec![
            0x79, 0xF1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x3F,
        ],
    ] {
        let (d, _) = described("lie.parquet", &parquet_of(&body));
        assert!(d.summary().contains("schema not read"), "{}", d.summary());
        assert!(parquet_of(&body).len() <= 24);
    }
}

#[test]
fn a_parquet_schema_of_millions_of_elements_keeps_its_first() {
    // 4M schema elements of one byte each (an empty struct).
    let n = 4_000_000u64;
    let mut m = vec![0x29, 0xFC];
    varint(&mut m, n);
    m.resize(m.len() + n as usize, 0);
    m.push(0);
    let (d, _) = described("wide.parquet", &parquet_of(&m));
    let What::Parquet(p) = &d.what else {
        panic!("{:?} {:?}", d.what, d.notes)
    };
    assert!(p.columns.len() <= 1000);
    assert!(
        d.notes.iter().any(|n| n.contains("4000000 elements")),
        "{:?}",
        d.notes
    );
}

#[test]
fn a_pdf_of_many_page_tree_nodes_is_scanned_once() {
    // 600,000 names /Pages with no dictionary end after them: a scan that
    // looks for the end from each one reads the file 600,000 times.
    let mut pdf = b"%PDF-1.4\n1 0 obj\n<< /Type /Pages /Count 7 ".to_vec();
    for _ in 0..600_000 {
        pdf.extend_from_slice(b"/Pages ");
    }
    let (d, _) = described("many.pdf", &pdf);
    let What::Pdf(p) = &d.what else {
        panic!("{:?}", d.what)
    };
    assert_eq!(p.pages, None, "the dictionary never ends");
    pdf.extend_from_slice(b">>\nendobj\n");
    let (d, _) = described("many2.pdf", &pdf);
    let What::Pdf(p) = &d.what else {
        panic!("{:?}", d.what)
    };
    assert_eq!(p.pages, Some(Count::exact(7)));
}

#[test]
fn a_csv_of_a_million_columns_keeps_its_first() {
    // Two rows of 300,000 fields: a reader keeping every field holds
    // 14 MB of strings, most of them empty.
    let mut csv = ",".repeat(299_999);
    csv.push('\n');
    csv.push_str(&"1,".repeat(299_999));
    csv.push_str("1\n");
    let (d, peak) = described("wide.csv", csv.as_bytes());
    let What::Table(t) = &d.what else {
        panic!("{:?}", d.what)
    };
    assert_eq!(t.columns.len(), 256);
    assert!(peak < 8 << 20, "{peak}");
}

#[test]
fn an_xlsb_has_its_sheet_and_typed_columns_and_a_record_that_lies_is_skipped() {
    let mut sheet_rec = vec![0u8; 8];
    sheet_rec.extend(wide("rId1"));
    sheet_rec.extend(wide("Data"));
    let book = brt(0x9C, &sheet_rec);
    let cell = |col: u32, kind: u32, value: &[u8]| {
        let mut d = col.to_le_bytes().to_vec();
        d.extend_from_slice(&0u32.to_le_bytes());
        d.extend_from_slice(value);
        brt(kind, &d)
    };
    let row = |r: u32| brt(0x00, &r.to_le_bytes());
    let mut sheet = Vec::new();
    let mut dim = 0u32.to_le_bytes().to_vec();
    dim.extend_from_slice(&999_999u32.to_le_bytes());
    dim.extend_from_slice(&0u32.to_le_bytes());
    dim.extend_from_slice(&1u32.to_le_bytes());
    sheet.extend(brt(0x94, &dim));
    sheet.extend(row(0));
    sheet.extend(cell(0, 0x07, &0u32.to_le_bytes()));
    sheet.extend(cell(1, 0x07, &1u32.to_le_bytes()));
    sheet.extend(row(1));
    sheet.extend(cell(0, 0x06, &wide("Oslo")));
    sheet.extend(cell(1, 0x05, &12.5f64.to_le_bytes()));
    // A record stating 256 MiB: read past by its length, never allocated
    // (the part ends first, and so does the sheet).
    sheet.extend_from_slice(&[0x05, 0xFF, 0xFF, 0xFF, 0x7F]);
    let mut strings = Vec::new();
    for s in ["city", "amount"] {
        let mut d = vec![0u8];
        d.extend(wide(s));
        strings.extend(brt(0x13, &d));
    }
    let rels = r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.bin"/><Relationship Id="rS" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.bin"/></Relationships>"#;
    let top = r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.bin"/></Relationships>"#;
    let file = zip_of(&[
        ("_rels/.rels", top.as_bytes()),
        ("xl/workbook.bin", &book),
        ("xl/_rels/workbook.bin.rels", rels.as_bytes()),
        ("xl/worksheets/sheet1.bin", &sheet),
        ("xl/sharedStrings.bin", &strings),
    ]);
    let (d, _) = described("b.xlsb", &file);
    let s = &workbook(&d).sheets[0];
    assert_eq!(
        (s.name.as_str(), s.rows, s.header),
        ("Data", Some(1_000_000), true)
    );
    let kinds: Vec<(&str, CellKind)> = s
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.kind))
        .collect();
    assert_eq!(
        kinds,
        [("city", CellKind::Text), ("amount", CellKind::Float)]
    );
}
