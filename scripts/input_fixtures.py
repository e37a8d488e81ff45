"""Write tests/fixtures/inputs/: one small real file of each kind codeloop
describes, made by the libraries people make them with.

Run once when a fixture must change (the files are committed):

    python3 -m venv /tmp/fixvenv
    /tmp/fixvenv/bin/pip install pillow openpyxl pyarrow odfpy
    /tmp/fixvenv/bin/python scripts/input_fixtures.py
"""

import datetime as dt
import gzip
import json
import os
import sys

from PIL import Image, ImageDraw
import openpyxl
import pyarrow as pa
import pyarrow.parquet as pq
from odf.opendocument import OpenDocumentSpreadsheet
from odf.table import Table, TableRow, TableCell
from odf.text import P

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "inputs")

ROWS = [
    ("north", dt.date(2024, 1, 1), dt.datetime(2024, 1, 1, 9, 30), 12, 3.5),
    ("south", dt.date(2024, 1, 2), dt.datetime(2024, 1, 2, 14, 0), 7, 4.25),
    ("east", dt.date(2024, 2, 29), dt.datetime(2024, 2, 29, 18, 45), 9, 2.0),
]
HEADER = ("region", "when", "at", "units", "price")


def table(path, sep):
    with open(path, "w", newline="") as f:
        f.write(sep.join(HEADER) + "\n")
        for r, d, t, u, p in ROWS:
            f.write(sep.join([r, d.isoformat(), t.isoformat(sep=" "), str(u), str(p)]) + "\n")


def xlsx(path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sales"
    ws.append(HEADER)
    for row in ROWS:
        ws.append(list(row))
    for cell in ws["B"][1:]:
        cell.number_format = "yyyy-mm-dd"
    for cell in ws["C"][1:]:
        cell.number_format = "yyyy-mm-dd hh:mm"
    wb.create_sheet("Notes").append(["hello"])
    wb.save(path)


def ods(path):
    doc = OpenDocumentSpreadsheet()
    sheet = Table(name="Sales")

    def text_cell(s):
        c = TableCell(valuetype="string")
        c.addElement(P(text=s))
        return c

    head = TableRow()
    for h in HEADER:
        head.addElement(text_cell(h))
    sheet.addElement(head)
    for r, d, t, u, p in ROWS:
        row = TableRow()
        row.addElement(text_cell(r))
        c = TableCell(valuetype="date", datevalue=d.isoformat())
        c.addElement(P(text=d.isoformat()))
        row.addElement(c)
        c = TableCell(valuetype="date", datevalue=t.isoformat())
        c.addElement(P(text=t.isoformat(sep=" ")))
        row.addElement(c)
        for v in (u, p):
            c = TableCell(valuetype="float", value=v)
            c.addElement(P(text=str(v)))
            row.addElement(c)
        sheet.addElement(row)
    doc.spreadsheet.addElement(sheet)
    doc.save(path)


def parquet(path):
    cols = list(zip(*ROWS))
    t = pa.table({h: list(c) for h, c in zip(HEADER, cols)})
    pq.write_table(t, path)


def pictures(out):
    im = Image.new("RGB", (16, 12), (30, 60, 90))
    ImageDraw.Draw(im).line((0, 0, 15, 11), fill=(250, 200, 40))
    im.save(os.path.join(out, "pic.png"))
    im.save(os.path.join(out, "pic.jpg"), quality=90)
    im.save(os.path.join(out, "pic.gif"))
    im.save(os.path.join(out, "doc.pdf"))


def main():
    os.makedirs(OUT, exist_ok=True)
    table(os.path.join(OUT, "table.csv"), ",")
    table(os.path.join(OUT, "table.tsv"), "\t")
    with open(os.path.join(OUT, "doc.json"), "w") as f:
        json.dump({"name": "sales", "rows": [{"region": r, "units": u} for r, _, _, u, _ in ROWS]}, f, indent=1)
    with open(os.path.join(OUT, "records.jsonl"), "w") as f:
        for r, d, _, u, p in ROWS:
            f.write(json.dumps({"region": r, "when": d.isoformat(), "units": u, "price": p}) + "\n")
    xlsx(os.path.join(OUT, "book.xlsx"))
    ods(os.path.join(OUT, "book.ods"))
    parquet(os.path.join(OUT, "data.parquet"))
    pictures(OUT)
    with open(os.path.join(OUT, "notes.txt"), "w") as f:
        f.write("first line\nsecond line, with a comma\nthird\n")
    with open(os.path.join(OUT, "blob.bin"), "wb") as f:
        f.write(gzip.compress(b"codeloop", mtime=0))
    print("\n".join(sorted(os.listdir(OUT))), file=sys.stderr)


if __name__ == "__main__":
    main()
