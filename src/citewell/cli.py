"""The ``citewell`` command: a thin shell over the ``Citewell`` library object."""

from __future__ import annotations

import json
import math
import os
import sys

# Native runtime defaults, set before numpy/onnxruntime/lance load (an operator's own values
# win). Spinning OpenMP/OpenBLAS threads fight the query path for the CPU on small machines:
# measured on SciFact, hybrid p50 fell from 20.5 to 17.2 ms with BLAS on one thread.
for _name, _value in (
    ("OMP_WAIT_POLICY", "PASSIVE"),
    ("OPENBLAS_NUM_THREADS", "1"),
    ("RUST_LOG", "error"),
):
    os.environ.setdefault(_name, _value)
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from citewell.answer.context import source_public
from citewell.answer.exchange import EXTRACTIVE_MODEL, ChatRequest, ChatResult
from citewell.auth.access import Access
from citewell.cli_common import MODES, Context, click_errors, pass_app
from citewell.cli_ingest import progress
from citewell.llm.base import ChatMessage
from citewell.types import ScoredChunk, SearchMode


class CitewellGroup(click.Group):
    """Any Citewell error a command lets through (invalid settings, met before the command's
    own handling) is shown as its message, with no traceback."""

    def invoke(self, ctx: click.Context) -> object:
        with click_errors():
            return super().invoke(ctx)


@click.group(cls=CitewellGroup)
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    envvar="CITEWELL_DATA_DIR",
    help="Where Citewell keeps its data [default: ~/.local/share/citewell].",
)
@click.option(
    "--config",
    type=click.Path(path_type=Path),
    envvar="CITEWELL_CONFIG",
    help="A TOML file of settings (see docs/configuration.md).",
)
@click.version_option(package_name="citewell")
@click.pass_context
def main(ctx: click.Context, data_dir: Path | None, config: Path | None) -> None:
    """Citewell: answers from your documents, citing the exact passage."""
    raise_open_file_limit()
    ctx.obj = Context(data_dir, config)


def raise_open_file_limit(wanted: int = 65_536) -> None:
    """Lift the soft limit on open files towards the hard one (often 1,024 of 524,288 under
    systemd): Lance 9 leaves a file open for good each time it adds to or merges a vector
    index, one or two per 4,096 chunks ingested into a table above 50,000 (docs/deploy.md)."""
    try:
        import resource
    except ImportError:  # not on Windows
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def _result_json(r: ScoredChunk, n: int) -> dict[str, Any]:
    c = r.chunk
    return {
        "n": n,
        "score": round(r.score, 6),
        "file": c.file_name,
        "file_id": c.file_id,
        "page": c.page,
        "start": c.start,
        "end": c.end,
        "headings": list(c.headings),
        "vector_score": r.vector_score,
        "bm25_score": r.bm25_score,
        "rerank_score": r.rerank_score,
        "sentence_score": r.sentence_score,
        "chunk_id": c.id,
        "text": c.text,
    }


@main.command()
@click.argument("query")
@click.option(
    "--kb",
    "kbs",
    multiple=True,
    default=["default"],
    show_default=True,
    help="Knowledge base(s) to search; repeat for several.",
)
@click.option("--mode", type=MODES, default=None, help="Retrieval mode [default: hybrid].")
@click.option("--k", type=int, default=None, help="How many chunks [default: top_k setting].")
@click.option("--json", "as_json", is_flag=True)
@pass_app
def search(
    ctx: Context, query: str, kbs: tuple[str, ...], mode: str | None, k: int | None, as_json: bool
) -> None:
    """Find the chunks that best match QUERY."""
    with click_errors():
        results = ctx.app().search(query, list(kbs), SearchMode(mode) if mode else None, k)
    if as_json:
        click.echo(json.dumps([_result_json(r, i) for i, r in enumerate(results, 1)], indent=2))
        return
    for i, r in enumerate(results, 1):
        where = f"{r.chunk.file_name}" + (f" p.{r.chunk.page}" if r.chunk.page else "")
        click.echo(f"[{i}] {r.score:.3f}  {where}  chars {r.chunk.start}-{r.chunk.end}")
        click.echo("    " + " ".join(r.chunk.text.split())[:300])
    if not results:
        click.echo("No matching chunks.")


def _chat_json(result: ChatResult) -> dict[str, Any]:
    """The answer with its sources in the API's shape."""

    prepared = result.prepared
    out: dict[str, Any] = {
        "answer": result.text,
        "extractive": result.extractive,
        "sources": [source_public(s) for s in prepared.sources],
    }
    if prepared.warnings:
        out["warnings"] = prepared.warnings
    if prepared.tool_run is not None:
        out["tool_calls"] = prepared.tool_run.calls
    return out


@main.command()
@click.argument("question")
@click.option("--kb", "kbs", multiple=True, default=["default"], show_default=True)
@click.option("--mode", type=MODES, default=None)
@click.option("--k", type=int, default=None)
@click.option("--model", default=None, help="A preset or the LLM's model (default: llm_model).")
@click.option("--json", "as_json", is_flag=True)
@pass_app
def ask(
    ctx: Context,
    question: str,
    kbs: tuple[str, ...],
    mode: str | None,
    k: int | None,
    model: str | None,
    as_json: bool,
) -> None:
    """Answer QUESTION from the knowledge bases, with numbered sources: with the configured
    LLM (and its builtin tools in native function calling), else extractively."""

    with click_errors():
        app = ctx.app()
        chosen = model or app.settings.llm.llm_model or EXTRACTIVE_MODEL
        request = ChatRequest(
            model=chosen,
            messages=(ChatMessage("user", question),),
            knowledge=kbs,
            mode=SearchMode(mode) if mode else None,
            top_k=k,
            access=Access.everything(),  # the operator, on the data dir itself
        )
        result = app.chat.complete(request)
    if as_json:
        click.echo(json.dumps(_chat_json(result), indent=2, ensure_ascii=False))
        return
    for warning in result.prepared.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(result.text + "\n\nSources:")
    for source in result.prepared.sources:
        page = f", page {source.page}" if source.page else ""
        click.echo(
            f"  [{source.number}] {source.file_name}{page}, chars {source.start}-{source.end} "
            f"(score {source.score:.3f})"
        )


@main.command(name="eval")
@click.option(
    "--beir",
    "folder",
    required=True,
    type=click.Path(path_type=Path, exists=True),
    help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.",
)
@click.option("--split", default="test", show_default=True)
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "vector", "bm25", "all"]),
    default="all",
    show_default=True,
)
@click.option("--json", "as_json", is_flag=True)
@pass_app
def evaluate(ctx: Context, folder: Path, split: str, mode: str, as_json: bool) -> None:
    """Measure retrieval quality and speed on a BEIR data set."""
    from citewell.evaluation.beir import run_eval

    modes = list(SearchMode) if mode == "all" else [SearchMode(mode)]
    with click_errors(), progress("Indexing corpus") as report_progress:
        report = run_eval(ctx.app(), folder, split, modes, report_progress)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
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


@main.command()
@click.option("--host", default=None, help="Address to bind [default: host setting, 127.0.0.1].")
@click.option("--port", type=int, default=None, help="Port [default: port setting, 8080].")
@click.option(
    "--workers", type=int, default=None, help="API processes on the port [default: workers, 1]."
)
@pass_app
def serve(ctx: Context, host: str | None, port: int | None, workers: int | None) -> None:
    """Run the HTTP server: OpenAI-compatible /v1, Open WebUI's /api/v1/rag, docs at /docs.

    Calls need an API key (the first start prints the admin's) unless auth=none."""
    import uvicorn

    from citewell.api.app import create_app
    from citewell.api.security import check_auth_mode
    from citewell.cli_auth import announce_access
    from citewell.config import Settings

    with click_errors():
        settings = Settings.load(ctx.config, data_dir=ctx.data_dir, workers=workers)
        bind, listen = host or settings.server.host, port or settings.server.port
        check_auth_mode(settings, bind)  # before loading models: a refusal is immediate
        if settings.server.workers == 1:
            app = ctx.app(switch_models=True)
            engine, api = app.catalog.engine, create_app(settings, app)
        else:
            from citewell.app.assemble import prepare_database

            engine = prepare_database(settings)  # once, before the processes start
    llm = settings.llm.llm_base_url or "none (extractive answers)"
    click.echo(
        f"Citewell on http://{bind}:{listen}  data: {settings.storage.data_dir}  LLM: {llm}"
        + (f"  processes: {settings.server.workers}" if settings.server.workers > 1 else ""),
        err=True,
    )
    announce_access(settings, engine)
    # SIGTERM: stop accepting, finish requests in flight (up to 30 s), then stop the job
    # worker (its batch finishes or goes back to the queue).
    if settings.server.workers == 1:
        uvicorn.run(
            api,
            host=bind,
            port=listen,
            log_level="info",
            timeout_graceful_shutdown=30,
            timeout_keep_alive=settings.server.keep_alive_seconds,
        )
        return
    # Each process builds its own app from the environment (uvicorn's factory).
    os.environ["CITEWELL_DATA_DIR"] = str(settings.storage.data_dir)
    os.environ["CITEWELL_WORKERS"] = str(settings.server.workers)
    if ctx.config is not None:
        os.environ["CITEWELL_CONFIG"] = str(ctx.config)
    uvicorn.run(
        "citewell.api.app:app_from_environment",
        factory=True,
        host=bind,
        port=listen,
        workers=settings.server.workers,
        log_level="info",
        timeout_graceful_shutdown=30,
        timeout_keep_alive=settings.server.keep_alive_seconds,
    )


@main.command()
@click.option("--to", "target", required=True, help="postgresql://user:password@host/database")
@click.option("--force", is_flag=True, help="Empty a target database that holds data first.")
@pass_app
def migrate(ctx: Context, target: str, force: bool) -> None:
    """Move this embedded data dir into PostgreSQL: catalog, users, keys, grants, jobs, the
    embedding cache and every chunk with its vector (nothing is embedded again).

    Stop the server first. Stored files stay in the data dir."""
    from citewell.config import Settings
    from citewell.operations.move import Move

    with click_errors():
        settings = Settings.load(ctx.config, data_dir=ctx.data_dir)
        report = Move(settings, target, lambda line: click.echo(line, err=True)).run(force)
    click.echo(
        f"Moved {sum(report.tables.values())} rows, {sum(report.chunks.values())} chunks and "
        f"{report.cached_vectors} cached vectors; {report.searches_checked} sample searches "
        "compared."
    )
    if not report.ok:
        raise click.ClickException("The copy differs: " + "; ".join(report.mismatches))
    click.echo(
        "Done. Start Citewell with the same data dir (it keeps the stored files) and\n\n"
        f"    CITEWELL_DATABASE_URL={target}\n"
    )


@main.command()
@pass_app
def worker(ctx: Context) -> None:
    """Run queued ingest jobs until stopped (Ctrl-C or SIGTERM).

    For running ingestion outside the server; set serve_job_worker=false on the server then."""
    import signal
    import threading

    with click_errors():
        app = ctx.app(switch_models=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    app.start_workers()
    click.echo(f"Citewell worker on {app.settings.storage.data_dir}: Ctrl-C stops it.", err=True)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        app.close()


@main.command()
@click.option("--repair", is_flag=True, help="Fix what is found (see the user guide).")
@click.option(
    "--recall-samples",
    default=20,
    show_default=True,
    help="Queries used to measure the vector index's recall against exact search (0: skip).",
)
@click.option("--json", "as_json", is_flag=True)
@pass_app
def check(ctx: Context, repair: bool, recall_samples: int, as_json: bool) -> None:
    """Compare the metadata database, the chunk store and the stored files, and report the
    chunk indexes (with the vector index's measured recall).

    Exits 1 when differences remain (run again with --repair to fix them)."""
    with click_errors():
        report = ctx.app().check(repair, recall_samples)
    if as_json:
        click.echo(json.dumps({**asdict(report), "problems": report.problems}, indent=2))
    else:
        _print_check(report)
        _table_copy_hint(ctx.app())
    if report.problems and not repair:
        raise SystemExit(1)


def _print_check(report: Any) -> None:
    for file_id, count in report.orphan_chunks.items():
        click.echo(f"orphan chunks: {count} of unknown file {file_id}")
    for file_id, (recorded, found) in report.missing_chunks.items():
        click.echo(f"missing chunks: file {file_id} has {found} of its {recorded}")
    for file_id in report.orphan_stored:
        click.echo(f"orphan stored file: {file_id}")
    for file_id in report.files_in_no_kb:
        click.echo(f"file in no knowledge base: {file_id}")
    for job_id in report.stuck_jobs:
        click.echo(f"stuck job: {job_id} (running far longer than any step may take)")
    for job_id in report.orphan_staged:
        click.echo(f"staged upload of a finished or unknown job: {job_id}")
    if report.index is not None:
        click.echo(_index_line(report.index))
    if report.low_recall:
        click.echo("low recall: the vector index misses too many neighbours (--repair retrains)")
    for line in report.repairs:
        click.echo(f"repaired: {line}")
    if not report.problems:
        click.echo("Consistent: the catalog, the chunk store and the stored files agree.")


def _table_copy_hint(app: Any) -> None:
    """A table past the ANN threshold without the memory for a copy: say what it takes."""
    from citewell.services.stats import table_copy_shortfall

    shortfall = table_copy_shortfall(app)
    if shortfall is not None:
        needed, budget = shortfall
        auto = " ('auto' on this machine)" if app.settings.storage.table_copy_mb == "auto" else ""
        click.echo(
            f"searches read LanceDB's indexes: a copy in memory needs about "
            f"{math.ceil(needed)} MB, table_copy_mb{auto} allows {budget}; "
            f"table_copy_mb = {math.ceil(needed * 1.1)}, where each API process has that "
            "memory to spare, would let it search a copy, about 2-3x faster at a million "
            "chunks (docs/user-guide.md, 'A whole big table in memory')"
        )


def _index_line(health: Any) -> str:
    line = f"chunks: {health.rows:,}, vector search: {health.vector_index}"
    if health.trained_rows:
        line += (
            f" trained on {health.trained_rows:,} rows in {health.partitions} partition(s),"
            f" {health.unindexed_rows:,} rows not yet indexed"
        )
    if health.training_rows:
        line += f", being trained anew on {health.training_rows:,} rows in the background"
    if health.recall_at_50 is not None:
        line += f", recall@50 {health.recall_at_50:.3f} ({health.recall_samples} queries)"
    return line


from citewell.cli_auth import group, key, share, user  # noqa: E402 (in their own module)
from citewell.cli_config import config  # noqa: E402
from citewell.cli_ingest import ingest  # noqa: E402
from citewell.cli_kb import kb  # noqa: E402

main.add_command(ingest)
main.add_command(kb)
main.add_command(config)
main.add_command(user)
main.add_command(key)
main.add_command(group)
main.add_command(share)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
