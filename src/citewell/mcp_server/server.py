"""The MCP tools and resources, each answered for the caller the transport names: the key of
the HTTP request (checked by mcp_server.http before the SDK sees it), or the key `citewell
mcp` was started with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import (
    ListResourcesResult,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    TextResourceContents,
    ToolAnnotations,
)
from pydantic import Field

from citewell.answer.chat import ChatPipeline
from citewell.app import Citewell
from citewell.auth.access import Access
from citewell.engine.scoped import Scoped
from citewell.errors import CitewellError, NotFoundError
from citewell.mcp_server.resources import list_resources, read_resource
from citewell.services.agent_tools import (
    AgentTools,
    Answer,
    FileLines,
    FileList,
    KnowledgeBases,
    Passages,
)
from citewell.services.answers import AnswerService, ModelList
from citewell.version import package_version

INSTRUCTIONS = (
    "Citewell answers from the user's documents and cites the exact passage. Use search to "
    "find passages (each with a source_id, file, page, character span and a link), "
    "read_file to read around a passage, list_knowledge_bases and list_files to see what "
    "there is, and ask for a written answer with numbered sources. Cite passages by their "
    "file name and link."
)
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


@dataclass(frozen=True)
class Caller:
    access: Access
    base_url: str  # where links to the page point


CallerOf = Callable[[Any], Caller]  # the request context (or None over stdio) → the caller


class CitewellMCP(MCPServer):
    """Resources are listed and read for the caller, so they are not the SDK's static ones."""

    def __init__(self, tools_for: Callable[[Any], AgentTools], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tools_for = tools_for

    async def _handle_list_resources(self, ctx: Any, _params: Any) -> ListResourcesResult:
        tools = self.tools_for(ctx)
        return ListResourcesResult(resources=[Resource(**r) for r in list_resources(tools)])

    async def _handle_read_resource(
        self, ctx: ServerRequestContext[Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        from mcp.shared.exceptions import MCPError
        from mcp_types import INVALID_PARAMS

        uri = str(params.uri)
        try:
            text, mime_type = read_resource(self.tools_for(ctx), uri)
        except NotFoundError as exc:
            message = f"{exc.code}: {exc}"
            raise MCPError(code=INVALID_PARAMS, message=message, data={"uri": uri}) from exc
        return ReadResourceResult(
            contents=[TextResourceContents(uri=uri, text=text, mime_type=mime_type)]
        )


def _failed(exc: CitewellError) -> ToolError:
    """The HTTP API's stable code and fix-it message, as an MCP tool error."""
    return ToolError(f"{exc.code}: {exc}")


def build_mcp_server(app: Citewell, chat: ChatPipeline, caller_of: CallerOf) -> CitewellMCP:
    models = ModelList(chat)
    budget = app.settings.server.mcp_result_tokens

    def tools_for(ctx: Any) -> AgentTools:
        caller = caller_of(ctx)
        view = Scoped(app, caller.access)
        return AgentTools(view, AnswerService(chat, models, view), caller.base_url, budget)

    server = CitewellMCP(
        tools_for,
        name="citewell",
        title="Citewell",
        instructions=INSTRUCTIONS,
        version=package_version(),
        log_level="WARNING",
    )
    _add_tools(server, tools_for)
    return server


T = TypeVar("T")
KnowledgeBaseNames = Annotated[
    list[str] | None,
    Field(description="Knowledge base names or ids; leave out for all you may read."),
]


def _add_tools(server: MCPServer, tools_for: Callable[[Any], AgentTools]) -> None:
    def run(ctx: Context, call: Callable[[AgentTools], T]) -> T:
        """The call, for the caller of this request; a Citewell error as a tool error."""
        try:
            return call(tools_for(ctx.request_context))
        except CitewellError as exc:
            raise _failed(exc) from exc

    @server.tool(annotations=READ_ONLY)
    def list_knowledge_bases(ctx: Context) -> KnowledgeBases:
        """The knowledge bases you may read: id, name, description, how many files, and
        whether you may change them."""
        return run(ctx, lambda tools: tools.knowledge_bases())

    @server.tool(annotations=READ_ONLY)
    def search(
        query: Annotated[str, Field(description="What to look for, in plain words.")],
        ctx: Context,
        knowledge_bases: KnowledgeBaseNames = None,
        k: Annotated[int, Field(ge=1, le=50, description="How many passages.")] = 8,
        mode: Annotated[
            Literal["hybrid", "vector", "bm25"] | None,
            Field(description="hybrid (default): meaning and keywords; bm25: exact words."),
        ] = None,
    ) -> Passages:
        """Find the passages of the user's documents that best answer a query, best first.
        Each has a source_id, the file (after its folder), page, the character span in the
        file's text, a score, the passage text and a link that opens it in Citewell."""
        return run(ctx, lambda tools: tools.search(query, knowledge_bases or (), k, mode or ""))

    @server.tool(annotations=READ_ONLY)
    def read_file(
        file_id: Annotated[str, Field(description="A file_id from search or list_files.")],
        ctx: Context,
        start_line: Annotated[int, Field(ge=1, description="First line to read.")] = 1,
        lines: Annotated[int, Field(ge=1, le=2000, description="How many lines.")] = 200,
    ) -> FileLines:
        """Read a file's extracted text by lines, each after its number, to see a passage in
        its context. next_start_line says where to go on."""
        return run(ctx, lambda tools: tools.read_file(file_id, start_line, lines))

    @server.tool(annotations=READ_ONLY)
    def list_files(
        knowledge_base: Annotated[str, Field(description="A knowledge base name or id.")],
        ctx: Context,
        folder: Annotated[
            str | None, Field(description="Only this folder ('' the top level); default all.")
        ] = None,
        page: Annotated[int, Field(ge=1, description="Page of 50 files.")] = 1,
    ) -> FileList:
        """The files of a knowledge base (path, id, size, chunks) and its folders."""
        return run(ctx, lambda tools: tools.list_files(knowledge_base, folder, page))

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True))
    def ask(
        question: Annotated[str, Field(description="The question, in plain words.")],
        ctx: Context,
        knowledge_bases: KnowledgeBaseNames = None,
    ) -> Answer:
        """A written answer from the documents with [n] markers, and its numbered sources
        (sources[n-1] is [n]). Without an LLM configured the answer is extractive: the
        best-matching sentences, quoted."""
        return run(ctx, lambda tools: tools.ask(question, knowledge_bases or ()))
