"""A table question set: PDFs made here (ruled and borderless tables, one and two columns of
text, a table running over a page break; three of the five tables drawn a column at a time,
as some producers write them) and questions whose answer is one cell, each
naming its row and its column in words. Deterministic: the same files and questions on
every run (benchmarks/table_questions.py, tests/unit/test_pdf_layout.py)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from citewell.testing.pdf_pages import HEIGHT, Page, pdf_bytes
from citewell.types import table_heading

FILLER = (
    "The figures below were collected by the operations office from the regional teams "
    "and checked against the ledger before publication. Where a value was revised after "
    "the first release the revised value is shown. Questions about the method should go "
    "to the office that prepared the report, which keeps the working files for two years."
)


@dataclass(frozen=True)
class TableQuestion:
    file: str
    question: str
    answer: str  # the cell
    row: str  # the row's label, as the table writes it
    column: str  # the column's header


@dataclass(frozen=True)
class TableFile:
    name: str
    data: bytes


def table_question_set() -> tuple[list[TableFile], list[TableQuestion]]:
    rng = random.Random(50)
    files, questions = [], []
    for make in (_sales, _directory, _reagents, _flights, _parts):
        name, data, header, rows, subject = make(rng)
        files.append(TableFile(name, data))
        for row in rows:
            for column, cell in list(zip(header, row, strict=True))[1:]:
                question = f"What is the {column.lower()} of {row[0]} in the {subject}?"
                questions.append(TableQuestion(name, question, cell, row[0], column))
    rng.shuffle(questions)
    return files, questions


def is_hit(question: TableQuestion, chunk_text: str) -> bool:
    """The answer cell in one Markdown row with its row label, the column's header in the
    same text."""
    rows = [_cells(line) for line in chunk_text.splitlines() if line.strip().startswith("|")]
    in_row = any(question.row in row and question.answer in row for row in rows)
    return in_row and any(question.column in row for row in rows)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def as_read(text: str, headings: tuple[str, ...]) -> str:
    """A chunk as the LLM reads it: with the table header a chunk of later rows carries."""
    lead = table_heading(headings)
    return f"{lead}\n{text}" if lead else text


def has_cells(question: TableQuestion, chunk_text: str) -> bool:
    """The weaker test: the row label and the answer are somewhere in the chunk."""
    return question.row in chunk_text and question.answer in chunk_text


def answered(question: TableQuestion, answer: str, labels: set[str]) -> bool:
    """A quote holds the row label and the answer and no other row's label (else a reader
    cannot tell which row the answer belongs to)."""
    others = labels - {question.row}
    quotes = answer.split("\u201d")
    return any(
        question.row in q and question.answer in q and not any(o in q for o in others)
        for q in quotes
    )


Made = tuple[str, bytes, list[str], list[list[str]], str]


def _sales(rng: random.Random) -> Made:
    regions = ["Northland", "Southmere", "Eastvale", "Westbrook", "Highpoint", "Lowfield"]
    regions += ["Riverside", "Lakeshore", "Stonegate", "Fairhaven"]
    header = ["Region", "Q1 revenue", "Q2 revenue", "Q3 revenue", "Q4 revenue", "Growth"]
    rows = [
        [r, *(f"{rng.randint(100, 990)},{rng.randint(100, 999)}" for _ in range(4))]
        + [f"{rng.uniform(-9, 19):+.1f}%"]
        for r in regions
    ]
    page = Page()
    page.text(72, 60, "Annual Sales Review 2025", 16, bold=True)
    y = page.paragraph(72, 100, FILLER, 468)
    page.text(72, y, "Table 1: Revenue by region, 2025 (EUR)", 10, bold=True)
    y = page.table(72, y + 22, [header, *rows], ruled=True, by_column=True)
    page.paragraph(72, y + 10, FILLER, 468)
    return "sales-review.pdf", pdf_bytes([page]), header, rows, "revenue by region table"


def _directory(rng: random.Random) -> Made:
    first = ["Ana", "Bruno", "Chloe", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines"]
    last = ["Alvarez", "Berg", "Costa", "Dahl", "Eriksen", "Fischer", "Guerra", "Holm"]
    departments = ["Finance", "Legal", "Research", "Logistics", "Support", "Design"]
    header = ["Name", "Department", "Office", "Extension", "Start year"]
    names = rng.sample([f"{f} {s}" for f in first for s in last], 12)
    rows = [
        [
            n,
            rng.choice(departments),
            f"{rng.choice('ABCD')}-{rng.randint(100, 499)}",
            str(rng.randint(2000, 7999)),
            str(rng.randint(1998, 2025)),
        ]
        for n in names
    ]
    page = Page()
    page.text(72, 60, "Staff Directory", 16, bold=True)
    y = page.paragraph(72, 100, "Everyone at the Harbour Street site, by name.", 468)
    page.table(72, y + 10, [header, *rows], ruled=False)
    return "staff-directory.pdf", pdf_bytes([page]), header, rows, "staff directory"


def _reagents(rng: random.Random) -> Made:
    """Two columns of text; a narrow borderless table in the left one."""
    names = ["Acetone", "Ethanol", "Hexane", "Toluene", "Methanol", "Glycerol", "Xylene"]
    header = ["Reagent", "Shelf", "Stock", "Expiry"]
    rows = [
        [n, f"S{rng.randint(1, 30)}", f"{rng.randint(1, 40)} L", f"2027-{rng.randint(1, 12):02d}"]
        for n in names
    ]
    page = Page()
    page.text(72, 50, "Laboratory Bulletin", 16, bold=True)
    y = page.paragraph(72, 90, FILLER, 220)
    page.text(72, y, "Table 2: Reagent stock", 9, bold=True)
    y = page.table(72, y + 18, [header, *rows], ruled=False, size=8, gap=10)
    page.paragraph(72, y + 6, FILLER, 220)
    right = page.paragraph(320, 90, FILLER, 220)
    right = page.paragraph(320, right, FILLER, 220)
    page.paragraph(320, right, FILLER, 220)
    return "lab-bulletin.pdf", pdf_bytes([page]), header, rows, "reagent stock table"


def _flights(rng: random.Random) -> Made:
    """A ruled table over two pages (the header only on the first), a running header and
    page numbers."""
    cities = ["Lisbon", "Oslo", "Vienna", "Dublin", "Prague", "Athens", "Riga", "Malta"]
    header = ["Flight", "Origin", "Destination", "Departure", "Gate"]
    codes = rng.sample(range(100, 999), 44)
    rows = []
    for code in codes:
        origin, destination = rng.sample(cities, 2)
        departure = f"{rng.randint(5, 22):02d}:{rng.choice(['00', '15', '30', '45'])}"
        gate = f"{rng.choice('ABC')}{rng.randint(1, 40)}"
        rows.append([f"CW {code}", origin, destination, departure, gate])
    first, second = Page(), Page()
    for number, page in enumerate((first, second), start=1):
        page.text(72, 30, "Flight operations - weekly schedule", 8)
        page.text(290, HEIGHT - 40, f"Page {number} of 2", 8)
    first.text(72, 60, "Weekly Flight Schedule", 16, bold=True)
    first.text(72, 90, "Table 3: Departures, week 48", 10, bold=True)
    first.table(72, 112, [header, *rows[:30]], ruled=True, by_column=True)
    second.table(72, 60, [header, *rows[30:]], ruled=True, by_column=True)
    # the second page's part starts without a header row, as printed tables often do
    second.ops = [op for op in second.ops if "/F2" not in op]
    return "flight-schedule.pdf", pdf_bytes([first, second]), header, rows, "flight schedule"


def _parts(rng: random.Random) -> Made:
    """A full-width borderless table above two columns of text."""
    names = ["Bracket", "Hinge", "Spindle", "Gasket", "Bushing", "Flange", "Sprocket"]
    names += ["Coupling", "Washer", "Pulley"]
    materials = ["Steel", "Brass", "Nylon", "Aluminium", "Copper", "Titanium"]
    header = ["Part", "Material", "Weight", "Unit price"]
    rows = [
        [
            n,
            rng.choice(materials),
            f"{rng.randint(5, 900)} g",
            f"${rng.randint(1, 99)}.{rng.randint(10, 99)}",
        ]
        for n in names
    ]
    page = Page()
    page.text(72, 50, "Parts Catalogue", 16, bold=True)
    page.text(72, 80, "Table 4: Spare parts", 10, bold=True)
    y = page.table(72, 102, [header, *rows], ruled=False, gap=40, by_column=True)
    left = page.paragraph(72, y + 20, FILLER, 220)
    page.paragraph(72, left, FILLER, 220)
    right = page.paragraph(320, y + 20, FILLER, 220)
    page.paragraph(320, right, FILLER, 220)
    return "parts-catalogue.pdf", pdf_bytes([page]), header, rows, "spare parts table"
