"""The ``citewell`` command: a thin shell over the ``Citewell`` library object."""

from __future__ import annotations

import json
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
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from citewell.cli.common import MODES, Context, click_errors, pass_app

if TYPE_CHECKING:  # imported by the commands that use them: `citewell --version` needs none
    from citewell.answer.exchange import ChatResult
    from citewell.types import ScoredChunk

# The commands of their own modules, imported when one of them runs (or for --help), so the
# command starts without the engine, the agent and the stores it does not use.
COMMANDS = {
    "serve": "citewell.cli.server:serve",
    "worker": "citewell.cli.server:worker",
    "mcp": "citewell.cli.server:mcp",
    "migrate": "citewell.cli.server:migrate",
    "files": "citewell.cli.server:files",
    "check": "citewell.cli.server:check",
    "ingest": "citewell.cli.ingest:ingest",
    "import": "citewell.cli.ingest:import_chunks",
    "eval": "citewell.cli.eval:evaluate",
    "kb": "citewell.cli.kb:kb",
    "sync": "citewell.cli.connectors:sync",
    "connector": "citewell.cli.connectors:connector",
    "config": "citewell.cli.config:config",
    "user": "citewell.cli.auth:user",
    "identity": "citewell.cli.auth:identity",
    "key": "citewell.cli.auth:key",
    "group": "citewell.cli.auth:group",
    "share": "citewell.cli.auth:share",
}


class CitewellGroup(click.Group):
    """Commands from COMMANDS are imported on demand. Any Citewell error a command lets
    through (invalid settings, met before the command's own handling) is shown as its
    message, with no traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in COMMANDS and name not in self.commands:
            module, _, attribute = COMMANDS[name].partition(":")
            self.add_command(getattr(import_module(module), attribute), name)
        return super().get_command(ctx, name)

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
    from citewell.types import SearchMode

    with click_errors():
        chosen = SearchMode(mode) if mode else None
        results = ctx.searching().in_collections(list(kbs), query, chosen, k, None)
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
    from citewell.answer.context import source_public

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
    if result.attribution is not None:
        out["attribution"] = result.attribution.public()
    if result.abstained:
        withheld = {"withheld": result.withheld} if result.withheld else {}
        out["abstained"] = {"reason": result.abstained, **withheld}
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
    from citewell.answer.exchange import EXTRACTIVE_MODEL, ChatRequest
    from citewell.llm.base import ChatMessage
    from citewell.services.local import OPERATOR
    from citewell.types import SearchMode

    with click_errors():
        chosen = model or ctx.app().settings.llm.llm_model or EXTRACTIVE_MODEL
        request = ChatRequest(
            model=chosen,
            messages=(ChatMessage("user", question),),
            knowledge=kbs,
            mode=SearchMode(mode) if mode else None,
            top_k=k,
            access=OPERATOR,  # the operator, on the data dir itself
        )
        result = ctx.answering().complete(request)
    if as_json:
        click.echo(json.dumps(_chat_json(result), indent=2, ensure_ascii=False))
        return
    for warning in result.prepared.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(result.text)
    if result.attribution is not None:
        for sentence in result.attribution.unsupported:
            written = result.attribution.text[sentence.start : sentence.end]
            click.echo(f"  (no source supports: {written!r})")
    click.echo("\nSources:")
    for source in result.prepared.sources:
        page = f", page {source.page}" if source.page else ""
        click.echo(
            f"  [{source.number}] {source.file_name}{page}, chars {source.start}-{source.end} "
            f"(score {source.score:.3f})"
        )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
