"""``--fail-below METRIC=VALUE`` for CI: a team keeps a quality floor on its own data, and
the small HTML report of an answer evaluation."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from citewell.errors import InvalidInput


def parse_floors(given: Sequence[str]) -> dict[str, float]:
    floors = {}
    for item in given:
        name, _, value = item.partition("=")
        try:
            floors[name.strip()] = float(value)
        except ValueError as exc:
            raise InvalidInput(
                f"--fail-below {item!r}: write METRIC=VALUE, e.g. ndcg@10=0.6"
            ) from exc
    return floors


def below_floors(measured: Mapping[str, Any], floors: Mapping[str, float]) -> list[str]:
    """What is under its floor. A BEIR metric without a mode (``ndcg@10``) applies to every
    mode measured (``hybrid.ndcg@10``, …); a metric nobody measured is an error."""
    failed = []
    for name, floor in floors.items():
        keys = [name] if name in measured else [k for k in measured if k.endswith("." + name)]
        if not keys:
            known = ", ".join(sorted(measured))
            raise InvalidInput(f"--fail-below {name}: not measured here; these are: {known}")
        for key in keys:
            value = measured[key]
            if value is None or value < floor:
                failed.append(f"{key} {value} < {floor}")
    return failed


def beir_measured(report: Mapping[str, Any], modes: Sequence[str]) -> dict[str, Any]:
    return {f"{mode}.{k}": v for mode in modes for k, v in report[mode].items()}


def html_report(report: Mapping[str, Any]) -> str:
    """One page: the totals, then a row per question, with the source span each of its
    sentences was attributed to."""
    esc = html.escape
    totals = "".join(
        f"<tr><th>{esc(k)}</th><td>{esc(_shown(v))}</td></tr>" for k, v in report["totals"].items()
    )
    columns = ("question", "answer", "exact_match", "token_f1", "answer_contains",
               "cited_share", "abstained", "retrieval_recall", "citation_validity",
               "citation_support", "faithfulness", "latency_ms")  # fmt: skip
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    rows = "".join(
        "<tr>"
        + "".join(f"<td>{esc(_shown(case.get(c)))}</td>" for c in columns)
        + "</tr>"
        + _attribution_row(case.get("attribution") or [], len(columns))
        for case in report["cases"]
    )
    return (
        "<!doctype html><meta charset=utf-8><title>Citewell answer evaluation</title>"
        "<style>body{font-family:sans-serif}td,th{border:1px solid #ccc;padding:4px;"
        "vertical-align:top;text-align:left}</style>"
        f"<h1>Answer evaluation: {esc(str(report['model']))}</h1>"
        f"<table>{totals}</table><h2>Questions</h2><table><tr>{head}</tr>{rows}</table>"
    )


def _attribution_row(sentences: Sequence[Mapping[str, Any]], width: int) -> str:
    """Each sentence of the answer → its status, and the quote of the source it cites."""
    if not sentences:
        return ""
    esc = html.escape
    items = "".join(
        f"<li>{esc(s['sentence'])} → <b>{esc(s['status'])}</b>"
        + (f" [{s['source']}] <q>{esc(s['quote'])}</q>" if s.get("source") else "")
        + "</li>"
        for s in sentences
    )
    return f'<tr><td colspan="{width}"><ul class="attribution">{items}</ul></td></tr>'


def _shown(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.4f}" if isinstance(value, float) else str(value)
