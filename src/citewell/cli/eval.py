"""`citewell eval`: retrieval quality on a BEIR data set, or answers on a team's own
questions; ``--fail-below`` turns either into a CI gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from citewell.cli.common import Context, click_errors, pass_app
from citewell.cli.ingest import progress
from citewell.types import SearchMode


@click.command(name="eval")
@click.option(
    "--beir",
    "folder",
    type=click.Path(path_type=Path, exists=True),
    help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.",
)
@click.option(
    "--answers",
    "answers_file",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="JSONL of questions and reference answers (see docs: evaluating answers).",
)
@click.option("--split", default="test", show_default=True)
@click.option(
    "--mode", type=click.Choice(["hybrid", "vector", "bm25", "all"]), default="all",
    show_default=True,
)  # fmt: skip
@click.option("--kb", "kbs", multiple=True, help="KBs for questions that name none.")
@click.option("--model", default="", help="Model or preset that answers [default: llm_model].")
@click.option("--judge", default="", help="An LLM model that also grades the answers.")
@click.option(
    "--fail-below", "floors", multiple=True, help="METRIC=VALUE: exit 1 when below (repeat)."
)
@click.option("--html", "html_path", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--json", "as_json", is_flag=True)
@pass_app
def evaluate(
    ctx: Context,
    folder: Path | None,
    answers_file: Path | None,
    split: str,
    mode: str,
    kbs: tuple[str, ...],
    model: str,
    judge: str,
    floors: tuple[str, ...],
    html_path: Path | None,
    as_json: bool,
) -> None:
    """Measure retrieval quality and speed on a BEIR data set (--beir), or answers to your
    own questions (--answers): correctness, retrieval recall, citations, faithfulness."""
    from citewell.evaluation.floors import below_floors, parse_floors

    if (folder is None) == (answers_file is None):
        raise click.UsageError("Give one of --beir FOLDER or --answers FILE.")
    with click_errors():
        wanted = parse_floors(floors)
        if folder is not None:
            measured = _beir(ctx, folder, split, mode, as_json)
        else:
            assert answers_file is not None
            measured = _answers(ctx, answers_file, kbs, model, judge, html_path, as_json)
        failed = below_floors(measured, wanted)
    if failed:
        raise click.ClickException("Below the floor: " + "; ".join(failed))


def _beir(ctx: Context, folder: Path, split: str, mode: str, as_json: bool) -> dict[str, Any]:
    from citewell.evaluation.beir import run_eval
    from citewell.evaluation.floors import beir_measured

    modes = list(SearchMode) if mode == "all" else [SearchMode(mode)]
    with progress("Indexing corpus") as report_progress:
        report = run_eval(ctx.app(), folder, split, modes, report_progress)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        _print_beir(report, split, modes)
    return beir_measured(report, [m.value for m in modes])


def _print_beir(report: dict[str, Any], split: str, modes: list[SearchMode]) -> None:
    ingest = report["ingest"]
    click.echo(
        f"{report['dataset']} ({split}): {ingest['docs']} docs, {ingest['chunks']} chunks, "
        f"{ingest['docs_per_s']} docs/s, {ingest['chunks_per_s']} chunks/s"
        + (" (index reused)" if ingest["reused"] else "")
    )
    click.echo(
        f"{'mode':8} {'nDCG@10':>8} {'R@10':>7} {'R@100':>7} {'MRR@10':>7} "
        f"{'p50 ms':>7} {'p95 ms':>7}"
    )
    for m in modes:
        r = report[m.value]
        click.echo(
            f"{m.value:8} {r['ndcg@10']:8.4f} {r['recall@10']:7.4f} {r['recall@100']:7.4f} "
            f"{r['mrr@10']:7.4f} {r['latency_ms_p50']:7.1f} {r['latency_ms_p95']:7.1f}"
        )


def _answers(
    ctx: Context,
    path: Path,
    kbs: tuple[str, ...],
    model: str,
    judge: str,
    html_path: Path | None,
    as_json: bool,
) -> dict[str, Any]:
    from citewell.evaluation.answers import AnswerEvaluation, load_cases
    from citewell.evaluation.floors import html_report

    cases = load_cases(path)
    report = AnswerEvaluation(ctx.app(), kbs, model, judge).run(cases)
    if html_path is not None:
        html_path.write_text(html_report(report), encoding="utf-8")
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        click.echo(f"{report['questions']} questions, answered by {report['model']}:")
        for name, value in report["totals"].items():
            shown = "-" if value is None else f"{value:.4f}" if isinstance(value, float) else value
            click.echo(f"  {name:18} {shown}")
    return dict(report["totals"])
