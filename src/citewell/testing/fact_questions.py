"""A question set for answers and their citations, made for it: audit reports of fictional
sites that look alike (the same filler sentences, the same kinds of facts with other
values), so every question has near-miss passages beside the one that answers it.

Each report has a parts table (part code → bin and quantity), prose facts (who was
appointed to what, how many pallets were damaged, when the audit closed) and filler. The
answerable questions name their report and ask for one value; the unanswerable ones ask
about a part, site or role no report has, so no passage answers them. Deterministic for a
seed, so a run can be repeated and split into a calibration and a test half.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

SITES = (
    "Harbor Point", "Millbrook", "Cedar Flats", "Ironwood", "Stonegate", "Willow Creek",
    "Redfield", "Ashby Cross", "Northhaven", "Brightwater", "Kestrel Park", "Foxmoor",
    "Larkspur", "Oakhurst", "Pinecrest", "Silverlake",
)  # fmt: skip
NAMES = (
    "Maria Okafor", "Tomasz Lindqvist", "Aiko Brennan", "Rafael Duarte", "Ingrid Mbeki",
    "Samuel Achterberg", "Leila Kovac", "Pedro Hallström", "Yuki Abernathy", "Nadia Ferreira",
    "Jonas Whitfield", "Chen Osei", "Greta Valdez", "Omar Lindahl", "Priya Castellano",
    "Felix Nakamura", "Hana Oyelaran", "Victor Raskin", "Elena Thorsby", "Kofi Marchetti",
)  # fmt: skip
ROLES = ("site manager", "safety officer", "inventory lead", "night supervisor")
MONTHS = ("January", "March", "May", "July", "September", "November")
FILLER = (
    "This section of the {title} summarises observations.",
    "The {title} follows the standard audit procedure of the group.",
    "Figures in the {title} were checked by two auditors.",
)


@dataclass(frozen=True)
class FactQuestion:
    question: str
    answers: tuple[str, ...]  # empty: nothing in the reports answers it
    file: str = ""  # the report that answers it
    passage: str = ""  # the sentence or row that answers it


@dataclass(frozen=True)
class Report:
    name: str  # file name
    text: str  # Markdown


def fact_set(
    seed: int = 7, sites: int = 12, unanswerable: int = 15
) -> tuple[list[Report], list[FactQuestion]]:
    """The reports, then the questions: three per report and ``unanswerable`` more."""
    rng = random.Random(seed)
    chosen = rng.sample(SITES, sites)
    reports, questions = [], []
    used_parts: set[str] = set()
    for site in chosen:
        report, asked = _report(rng, site, used_parts)
        reports.append(report)
        questions += asked
    questions += _unanswerable(rng, chosen, used_parts, unanswerable)
    return reports, questions


def _report(rng: random.Random, site: str, used: set[str]) -> tuple[Report, list[FactQuestion]]:
    year = rng.choice((2031, 2032, 2033))
    title = f"{site} warehouse inventory audit {year}"
    name = f"{site.lower().replace(' ', '-')}-audit-{year}.md"
    parts = _parts(rng, used)
    role, person = rng.choice(ROLES), rng.choice(NAMES)
    pallets, month = rng.randint(3, 97), rng.choice(MONTHS)
    appointed = f"In {month} {year} the {site} warehouse appointed {person} as {role}."
    damaged = f"The {site} audit found {pallets} damaged pallets in the loading bays."
    rows = [f"| {code} | {bin_} | {qty} |" for code, bin_, qty in parts]
    filler = [f.format(title=title) for f in FILLER]
    text = "\n".join(
        [f"# {title[0].upper()}{title[1:]}", "", filler[0], "", "## Staff", "", filler[1],
         appointed, "", "## Stock", "", filler[2], "", "| Part | Bin | Quantity |", "|---|---|---|",
         *rows, "", "## Damage", "", filler[0], damaged, ""]
    )  # fmt: skip
    code, bin_, qty = rng.choice(parts)
    row = f"| {code} | {bin_} | {qty} |"
    asked = [
        FactQuestion(f"In the {title}, what is the bin of {code}?", (bin_,), name, row),
        FactQuestion(f"Who did the {site} warehouse appoint as {role}?", (person,), name,
                     appointed),
        FactQuestion(f"How many damaged pallets did the {site} audit find?", (str(pallets),),
                     name, damaged),
    ]  # fmt: skip
    return Report(name, text), asked


def _parts(rng: random.Random, used: set[str]) -> list[tuple[str, str, int]]:
    parts: list[tuple[str, str, int]] = []
    while len(parts) < 5:
        code = f"PX-{rng.randint(1000, 9999)}"
        if code in used:
            continue
        used.add(code)
        bin_ = f"{rng.choice('ABCDEFGH')}-{rng.randint(1, 40):02d}"
        parts.append((code, bin_, rng.randint(1, 500)))
    return parts


def _unanswerable(
    rng: random.Random, sites: list[str], used: set[str], count: int
) -> list[FactQuestion]:
    """Questions that sound like the others about things no report has."""
    absent = [s for s in SITES if s not in sites]
    made = []
    for i in range(count):
        kind = i % 3
        if kind == 0:
            code = next(c for c in (f"PX-{rng.randint(1000, 9999)}" for _ in range(99))
                        if c not in used)  # fmt: skip
            site = rng.choice(sites)
            question = f"In the {site} warehouse audit, what is the bin of {code}?"
            made.append(FactQuestion(question, ()))
        elif kind == 1:
            site = rng.choice(absent) if absent else "Gullhaven"
            made.append(FactQuestion(f"Who did the {site} warehouse appoint as site manager?", ()))
        else:
            site = rng.choice(sites)
            made.append(FactQuestion(f"How many forklifts did the {site} audit find broken?", ()))
    return made
