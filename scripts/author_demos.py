"""Writes the bundled demos' scripted replies (assets/demos/NAME/replies.jsonl).

The replies are authored fixtures: what a model might answer, written by hand
so the demos run offline. The failures they lead to are real: the code runs in
the sandbox and fails its tests for real, and the repairs pass for real.
Run: python3 scripts/author_demos.py   (then re-record the tapes, see README)
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "assets", "demos")


def plan(*functions):
    body = json.dumps({"functions": list(functions)}, indent=1)
    return "Here is the plan.\n```json\n" + body + "\n```\n"


def fn(name, purpose, inputs, output, deps=()):
    return {"name": name, "purpose": purpose, "inputs": inputs, "output": output, "depends_on": list(deps)}


def py(code, before=""):
    return (before + "\n" if before else "") + "```python\n" + code.strip("\n") + "\n```\n"


DEMOS = {}

DEMOS["wordfreq"] = {
    "title": "Top words: a wrong tie order, pinned to the line that returned it",
    "task": "Count the words in a text (case-insensitive, punctuation ignored) and return the n most frequent with their counts, most frequent first, ties in alphabetical order.",
    "replies": [
        ("plan", plan(
            fn("tokenize", "Split text into lowercase words, dropping punctuation", "text: str", "list[str]"),
            fn("top_words", "The n most frequent words with counts, most frequent first, ties alphabetical", "text: str, n: int", "list[tuple[str, int]]", ["tokenize"]),
        )),
        ("tests/tokenize", py('''
def test_simple():
    assert tokenize("Hello, world!") == ["hello", "world"]

def test_apostrophes_and_digits():
    assert tokenize("It's 2 o'clock") == ["it's", "2", "o'clock"]

def test_blank():
    assert tokenize("   ") == []
''')),
        ("code/tokenize/1", py('''
import re


def tokenize(text):
    return re.findall(r"[a-z0-9']+", text.lower())
''')),
        ("tests/top_words", py('''
def test_counts():
    assert top_words("a b a c a b", 2) == [("a", 3), ("b", 2)]

def test_ties_alphabetical():
    assert top_words("pear apple pear apple fig", 2) == [("apple", 2), ("pear", 2)]

def test_n_larger_than_vocabulary():
    assert top_words("one", 5) == [("one", 1)]

def test_negative_n():
    try:
        top_words("a", -1)
    except ValueError:
        return
    assert False, "expected ValueError"
''')),
        ("code/top_words/1", py('''
from collections import Counter


def top_words(text, n):
    if n < 0:
        raise ValueError("n must be >= 0")
    counts = Counter(tokenize(text))
    return counts.most_common(n)
''')),
        ("repair/top_words/2", py('''
from collections import Counter


def top_words(text, n):
    if n < 0:
        raise ValueError("n must be >= 0")
    counts = Counter(tokenize(text))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ranked[:n]
''', before="Counter.most_common keeps equal counts in the order the words first appeared, so 'pear' comes before 'apple'. Sort by count descending and then by the word itself to break ties alphabetically.")),
    ],
}

DEMOS["csvmeans"] = {
    "title": "Mean per city: a crash in a dependency blocks its dependent until repaired",
    "task": "Given CSV text with a header line 'city,temp', return the mean temperature per city rounded to one decimal, as a dict.",
    "replies": [
        ("plan", plan(
            fn("parse_rows", "Parse the CSV text into (city, temperature) pairs, skipping blank lines", "text: str", "list[tuple[str, float]]"),
            fn("mean_by_city", "Mean temperature per city, rounded to one decimal", "text: str", "dict[str, float]", ["parse_rows"]),
        )),
        ("tests/parse_rows", py('''
def test_rows():
    assert parse_rows("city,temp\\nOslo,3.5\\nRome,18\\n") == [("Oslo", 3.5), ("Rome", 18.0)]

def test_blank_lines_ignored():
    assert parse_rows("city,temp\\n\\nOslo,1\\n\\n") == [("Oslo", 1.0)]

def test_bad_number():
    try:
        parse_rows("city,temp\\nOslo,warm\\n")
    except ValueError:
        return
    assert False, "expected ValueError"
''')),
        ("code/parse_rows/1", py('''
def parse_rows(text):
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        city, temp = line.split(",")
        rows.append((city.strip(), float(temp)))
    return rows
''')),
        ("repair/parse_rows/2", py('''
def parse_rows(text):
    rows = []
    lines = text.splitlines()
    for line in lines[1:]:
        if not line.strip():
            continue
        city, temp = line.split(",")
        rows.append((city.strip(), float(temp)))
    return rows
''', before="The first line is the header 'city,temp', and float('temp') raises the ValueError. The header must be skipped before the rows are parsed.")),
        ("tests/mean_by_city", py('''
def test_means():
    assert mean_by_city("city,temp\\nOslo,2\\nOslo,4\\nRome,18\\n") == {"Oslo": 3.0, "Rome": 18.0}

def test_rounding():
    assert mean_by_city("city,temp\\nA,1\\nA,2\\nA,2\\n") == {"A": 1.7}

def test_header_only():
    assert mean_by_city("city,temp\\n") == {}
''')),
        ("code/mean_by_city/1", py('''
def mean_by_city(text):
    sums = {}
    counts = {}
    for city, temp in parse_rows(text):
        sums[city] = sums.get(city, 0.0) + temp
        counts[city] = counts.get(city, 0) + 1
    return {city: round(sums[city] / counts[city], 1) for city in sums}
''')),
    ],
}

DEMOS["roman"] = {
    "title": "Roman numerals: two repairs in a row, two nodes in parallel",
    "task": "Convert integers (1 to 3999) to Roman numerals and Roman numerals (any case) back to integers; reject invalid input with ValueError.",
    "replies": [
        ("plan", plan(
            fn("int_to_roman", "The Roman numeral of an integer from 1 to 3999", "n: int", "str"),
            fn("roman_to_int", "The integer value of a Roman numeral, upper or lower case", "s: str", "int"),
        )),
        ("tests/int_to_roman", py('''
def test_basic():
    assert int_to_roman(1994) == "MCMXCIV"

def test_small():
    assert int_to_roman(4) == "IV"

def test_zero_rejected():
    try:
        int_to_roman(0)
    except ValueError:
        return
    assert False, "expected ValueError for 0"
''')),
        ("code/int_to_roman/1", py('''
TABLE = [
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
    (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
]


def int_to_roman(n):
    if not 0 < n < 4000:
        raise ValueError("n must be between 1 and 3999")
    out = []
    for value, letters in TABLE:
        while n >= value:
            out.append(letters)
            n -= value
    return "".join(out)
''')),
        ("tests/roman_to_int", py('''
def test_simple():
    assert roman_to_int("III") == 3

def test_subtractive():
    assert roman_to_int("MCMXCIV") == 1994

def test_lowercase():
    assert roman_to_int("xiv") == 14

def test_invalid():
    try:
        roman_to_int("ABC")
    except ValueError:
        return
    assert False, "expected ValueError"
''')),
        ("code/roman_to_int/1", py('''
VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def roman_to_int(s):
    total = 0
    for ch in s:
        total += VALUES[ch]
    return total
''')),
        ("repair/roman_to_int/2", py('''
VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def roman_to_int(s):
    total = 0
    for i, ch in enumerate(s):
        value = VALUES[ch]
        if i + 1 < len(s) and value < VALUES[s[i + 1]]:
            total -= value
        else:
            total += value
    return total
''', before="Subtractive pairs such as CM and IV were added instead of subtracted, so MCMXCIV came out as 2216. A numeral smaller than the one after it must be subtracted.")),
        ("repair/roman_to_int/3", py('''
VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def roman_to_int(s):
    s = s.upper()
    for ch in s:
        if ch not in VALUES:
            raise ValueError("not a Roman numeral: %r" % ch)
    total = 0
    for i, ch in enumerate(s):
        value = VALUES[ch]
        if i + 1 < len(s) and value < VALUES[s[i + 1]]:
            total -= value
        else:
            total += value
    return total
''', before="Lower-case letters are not keys of VALUES, so VALUES[ch] raises KeyError for 'x'; letters that are not numerals raise KeyError too, where the caller expects ValueError. Upper-case the input and reject unknown letters with ValueError first.")),
        # With --candidates 3 (functional consensus): two more candidates of
        # each function and the calls that tell them apart. int_to_roman's
        # #2 forgets the subtractive pairs (4 is IIII) and is outvoted;
        # roman_to_int's #2 and #3 agree where #1 is wrong, and #2 is kept:
        # no repair is needed.
        ("code/int_to_roman/1/c2", py('''
def int_to_roman(n):
    if not 0 < n < 4000:
        raise ValueError("n must be between 1 and 3999")
    out = ""
    for value, letter in [(1000, "M"), (500, "D"), (100, "C"), (50, "L"), (10, "X"), (5, "V"), (1, "I")]:
        out += letter * (n // value)
        n %= value
    return out
''')),
        ("code/int_to_roman/1/c3", py('''
ONES = ["", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"]
TENS = ["", "X", "XX", "XXX", "XL", "L", "LX", "LXX", "LXXX", "XC"]
HUNDREDS = ["", "C", "CC", "CCC", "CD", "D", "DC", "DCC", "DCCC", "CM"]


def int_to_roman(n):
    if not 1 <= n <= 3999:
        raise ValueError("out of range: %r" % n)
    return "M" * (n // 1000) + HUNDREDS[n // 100 % 10] + TENS[n // 10 % 10] + ONES[n % 10]
''')),
        ("inputs/int_to_roman", json.dumps({"calls": [
            "int_to_roman(4)", "int_to_roman(9)", "int_to_roman(14)", "int_to_roman(40)",
            "int_to_roman(90)", "int_to_roman(400)", "int_to_roman(3999)", "int_to_roman(1)",
        ]})),
        ("code/roman_to_int/1/c2", py('''
VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def roman_to_int(s):
    s = s.upper()
    if not s or any(ch not in VALUES for ch in s):
        raise ValueError("not a Roman numeral: %r" % s)
    total = 0
    for here, after in zip(s, s[1:] + " "):
        value = VALUES[here]
        total += -value if value < VALUES.get(after, 0) else value
    return total
''')),
        ("code/roman_to_int/1/c3", py('''
PAIRS = {"CM": 900, "CD": 400, "XC": 90, "XL": 40, "IX": 9, "IV": 4}
SINGLES = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}


def roman_to_int(s):
    s = s.upper()
    if not s:
        raise ValueError("an empty numeral")
    total, i = 0, 0
    while i < len(s):
        if s[i:i + 2] in PAIRS:
            total += PAIRS[s[i:i + 2]]
            i += 2
        elif s[i] in SINGLES:
            total += SINGLES[s[i]]
            i += 1
        else:
            raise ValueError("not a Roman numeral: %r" % s)
    return total
''')),
        ("inputs/roman_to_int", json.dumps({"calls": [
            "roman_to_int('IV')", "roman_to_int('ix')", "roman_to_int('MCMXCIV')",
            "roman_to_int('XLII')", "roman_to_int('MMMCMXCIX')", "roman_to_int('CD')",
        ]})),
    ],
}

DEMOS["collatz"] = {
    "title": "Collatz steps: a hang, stopped and shown at the looping line",
    "task": "Return the number of steps the Collatz sequence takes to reach 1 from a positive integer n (ValueError for n < 1).",
    "replies": [
        ("plan", plan(
            fn("collatz_steps", "Steps of the Collatz sequence from n down to 1", "n: int", "int"),
        )),
        ("tests/collatz_steps", py('''
def test_one():
    assert collatz_steps(1) == 0

def test_six():
    assert collatz_steps(6) == 8

def test_invalid():
    try:
        collatz_steps(0)
    except ValueError:
        return
    assert False, "expected ValueError"
''')),
        ("code/collatz_steps/1", py('''
def collatz_steps(n):
    if n < 1:
        raise ValueError("n must be positive")
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps
''')),
        ("repair/collatz_steps/2", py('''
def collatz_steps(n):
    if n < 1:
        raise ValueError("n must be positive")
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps
''', before="For even n the line `n // 2` computes the half but never stores it, so n never changes and the loop never ends. Assign it: n = n // 2.")),
    ],
}

DEMOS["sales"] = {
    "title": "Sales by region: the CSV described, a review, lines that ran, a chart in the terminal",
    "task": "Total the sales in sales.csv by region and draw the totals as a bar chart in chart.png; return the (region, total) pairs, largest total first.",
    "replies": [
        ("plan", plan(
            fn("load_sales", "Read the (region, amount) pairs of a sales CSV file with a header date,region,amount; rows without a region are skipped", "path: str", "list[tuple[str, float]]"),
            fn("totals_by_region", "Total the amounts per region, largest total first, ties by region name", "rows: list[tuple[str, float]]", "list[tuple[str, float]]"),
            fn("draw_chart", "Draw the totals as a bar chart in a PNG file, using the standard library only", "totals: list[tuple[str, float]], path: str", "tuple[int, int]"),
            fn("main", "Total sales.csv by region, draw chart.png, return the totals", "", "list[tuple[str, float]]", ["load_sales", "totals_by_region", "draw_chart"]),
        )),
        ("tests/load_sales", py(r'''
def write(text):
    with open("t.csv", "w") as fh:
        fh.write(text)
    return "t.csv"

def test_rows():
    assert load_sales(write("date,region,amount\n2026-01-01,North,10.5\n")) == [("North", 10.5)]

def test_thousands_separator():
    assert load_sales(write('date,region,amount\n2026-01-06,West,"2,040.75"\n')) == [("West", 2040.75)]

def test_row_without_region_skipped():
    assert load_sales(write("date,region,amount\n2026-01-01,,5\n2026-01-02,East,1\n")) == [("East", 1.0)]
''')),
        ("code/load_sales/1", py(r'''
import csv


def load_sales(path):
    rows = []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if not row["region"]:
                continue
            rows.append((row["region"], float(row["amount"])))
    return rows
''')),
        ("review/load_sales/1", json.dumps({"verdict": "concerns", "findings": [
            {"severity": "serious", "line": 10, "what": "float() of an amount written with a thousands separator, such as \"1,250.00\" in sales.csv, raises ValueError"}]})),
        ("repair/load_sales/2", py(r'''
import csv


def load_sales(path):
    rows = []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if not row["region"]:
                continue
            amount = float(row["amount"].replace(",", ""))
            rows.append((row["region"], amount))
    return rows
''', before="The amount '2,040.75' is written with a thousands separator, and float() does not take the comma: line 10 raised the ValueError on it. Remove the separators before converting.")),
        ("review/load_sales/2", json.dumps({"verdict": "ok", "findings": []})),
        ("tests/totals_by_region", py(r'''
def test_sums_largest_first():
    rows = [("North", 10.0), ("South", 5.5), ("North", 2.5)]
    assert totals_by_region(rows) == [("North", 12.5), ("South", 5.5)]

def test_ties_by_name():
    assert totals_by_region([("B", 1.0), ("A", 1.0)]) == [("A", 1.0), ("B", 1.0)]

def test_empty():
    assert totals_by_region([]) == []
''')),
        ("code/totals_by_region/1", py(r'''
def totals_by_region(rows):
    totals = {}
    for region, amount in rows:
        totals[region] = round(totals.get(region, 0.0) + amount, 2)
    return sorted(totals.items(), key=lambda item: (-item[1], item[0]))
''')),
        ("review/totals_by_region/1", json.dumps({"verdict": "ok", "findings": []})),
        ("tests/draw_chart", py(r'''
import struct

def test_png_of_the_size_returned():
    assert draw_chart([("A", 3.0), ("B", 1.0)], "t.png") == (240, 120)
    with open("t.png", "rb") as fh:
        data = fh.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (240, 120)

def test_no_totals_still_draws():
    assert draw_chart([], "empty.png") == (240, 120)
''')),
        ("code/draw_chart/1", py(r'''
import struct
import zlib

COLORS = [(66, 133, 244), (219, 68, 55), (244, 180, 0), (15, 157, 88)]


def draw_chart(totals, path, width=240, height=120):
    pixels = [[(255, 255, 255)] * width for _ in range(height)]
    if totals:
        top = max(amount for _, amount in totals) or 1.0
        slot = width // len(totals)
        for i, (_, amount) in enumerate(totals):
            bar = int((height - 10) * amount / top)
            for y in range(height - bar, height):
                for x in range(i * slot + slot // 5, (i + 1) * slot - slot // 5):
                    pixels[y][x] = COLORS[i % len(COLORS)]
    raw = b"".join(b"\x00" + bytes(c for p in row for c in p) for row in pixels)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    with open(path, "wb") as fh:
        fh.write(png)
    return (width, height)
''')),
        ("review/draw_chart/1", json.dumps({"verdict": "ok", "findings": []})),
        ("tests/main", py(r'''
def test_totals_and_chart():
    totals = main()
    assert [region for region, _ in totals] == ["West", "East", "North", "South"]
    assert totals[0] == ("West", 2128.85)
    with open("chart.png", "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
''')),
        ("code/main/1", py(r'''
def main():
    totals = totals_by_region(load_sales("sales.csv"))
    draw_chart(totals, "chart.png")
    return totals
''')),
        ("review/main/1", json.dumps({"verdict": "ok", "findings": []})),
    ],
}


def main():
    for name, demo in DEMOS.items():
        folder = os.path.join(OUT, name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "task.txt"), "w") as fh:
            fh.write(demo["task"] + "\n")
        with open(os.path.join(folder, "title.txt"), "w") as fh:
            fh.write(demo["title"] + "\n")
        with open(os.path.join(folder, "replies.jsonl"), "w") as fh:
            for tag, text in demo["replies"]:
                fh.write(json.dumps({"tag": tag, "text": text}) + "\n")
    print("wrote", ", ".join(DEMOS))


main()
