"""What agents get from Citewell (the MCP server's tools and resources): knowledge bases,
passages with everything a citation needs (a stable source id, KB, file, folder, page,
character span, score, text and a link that opens the page's viewer at that span), a file's
text by lines, a KB's files, and answers. Every operation goes through the caller's view, so
grants, read-only and KB-limited keys apply exactly as on the HTTP API. Long results are cut
to a token budget, with a note saying so."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from pydantic import BaseModel

from citewell.answer.context import CitedSource
from citewell.answer.exchange import EXTRACTIVE_MODEL, ChatRequest
from citewell.engine.scoped import Scoped
from citewell.errors import FolderNotFound
from citewell.llm.base import ChatMessage
from citewell.services.answers import AnswerService
from citewell.services.folders import FolderService, PageRequest
from citewell.types import ChunkFilter, ScoredChunk, SearchMode

CHARS_PER_TOKEN = 4  # a rough measure, enough to keep results within a model's reach
FILES_PER_PAGE = 50


class KnowledgeBaseSummary(BaseModel):
    id: str
    name: str
    description: str
    files: int
    writable: bool


class KnowledgeBases(BaseModel):
    knowledge_bases: list[KnowledgeBaseSummary]


class Passage(BaseModel):
    source_id: str  # the chunk's id: the same passage keeps it across searches
    knowledge_base_id: str
    knowledge_base: str
    file_id: str
    file_name: str  # as the KB names it, after its folder
    folder: str
    page: int | None
    start: int  # characters of the file's text (read_file, GET /api/v1/files/{id}/text)
    end: int
    score: float
    text: str
    link: str  # opens Citewell's page at the passage


class Passages(BaseModel):
    passages: list[Passage]
    note: str = ""  # what was left out to stay within the budget, if anything


class FileLines(BaseModel):
    file_id: str
    file_name: str
    start_line: int
    end_line: int
    total_lines: int
    text: str  # each line after its number and a tab
    next_start_line: int | None  # where to go on; None at the end
    note: str = ""


class FileItem(BaseModel):
    file_id: str
    path: str  # folder and name in the KB
    size: int
    chunks: int


class FileList(BaseModel):
    knowledge_base: str
    folder: str | None
    page: int
    pages: int
    total: int
    files: list[FileItem]
    folders: list[str]  # every folder of the KB


class Answer(BaseModel):
    answer: str  # with [n] markers that refer to sources' numbers
    extractive: bool  # no LLM: the best-matching sentences, quoted
    sources: list[Passage]  # sources[n-1] is [n]
    note: str = ""
    unsupported: list[str] = []  # answer sentences no source supports (attribution)
    abstained: str = ""  # why the answer was withheld ('unsupported_answer'), if it was


class AgentTools:
    def __init__(
        self, view: Scoped, answers: AnswerService, base_url: str, budget_tokens: int
    ) -> None:
        self.view, self.answers = view, answers
        self.base_url = base_url.rstrip("/")
        self.budget = budget_tokens * CHARS_PER_TOKEN

    def knowledge_bases(self) -> KnowledgeBases:
        access = self.view.access
        return KnowledgeBases(
            knowledge_bases=[
                KnowledgeBaseSummary(
                    id=kb.id,
                    name=kb.name,
                    description=kb.description,
                    files=kb.file_count,
                    writable=access.can_write(kb),
                )
                for kb in self.view.kbs()
            ]
        )

    def search(
        self, query: str, knowledge_bases: Sequence[str] = (), k: int = 8, mode: str = ""
    ) -> Passages:
        view = self.view
        kbs = [view.searched_kb(name) for name in knowledge_bases] or view.kbs(count_files=False)
        if not kbs:
            return Passages(passages=[], note="You may read no knowledge base yet.")
        kb_names = {kb.id: kb.name for kb in kbs}
        where = ChunkFilter(kb_ids=tuple(kb_names))
        found = self.view.search(query, where, SearchMode(mode) if mode else None, k)
        passages = [self._passage(hit, kb_names) for hit in found]
        kept, note = self._within_budget(passages)
        return Passages(passages=kept, note=note)

    def read_file(self, file_id: str, start_line: int = 1, lines: int = 200) -> FileLines:
        record = self.view.file(file_id)
        text, _sections = self.view.file_text_and_sections(file_id)
        all_lines = text.splitlines()
        first = min(max(start_line, 1), max(len(all_lines), 1))
        shown: list[str] = []
        used = 0
        for number in range(first, min(first + max(lines, 1), len(all_lines) + 1)):
            line = f"{number}\t{all_lines[number - 1]}"
            if shown and used + len(line) > self.budget:
                break
            shown.append(line)
            used += len(line) + 1
        last = first + len(shown) - 1
        cut = len(shown) < min(max(lines, 1), len(all_lines) - first + 1)
        return FileLines(
            file_id=record.id,
            file_name=record.name,
            start_line=first,
            end_line=last,
            total_lines=len(all_lines),
            text="\n".join(shown),
            next_start_line=last + 1 if last < len(all_lines) else None,
            note=f"Cut at line {last} to stay within the token budget." if cut else "",
        )

    def list_files(self, knowledge_base: str, folder: str | None = None, page: int = 1) -> FileList:
        service = FolderService(self.view)
        kb, folders = service.tree(knowledge_base)
        by_path = {f.path: f.id for f in folders}
        wanted = (folder or "").strip("/")
        if folder is not None and wanted and wanted not in by_path:
            raise FolderNotFound(
                f"No folder {wanted!r} in {kb.name!r}; the folders are: "
                + (", ".join(sorted(by_path)) or "none")
            )
        folder_id = None if folder is None else by_path.get(wanted, "")
        listed = service.page(
            kb.id,
            PageRequest(
                folder_id=folder_id,
                order_by="name",
                descending=False,
                page=page,
                size=FILES_PER_PAGE,
            ),
        )
        return FileList(
            knowledge_base=kb.name,
            folder=None if folder is None else wanted,
            page=max(page, 1),
            pages=max(1, -(-listed.total // FILES_PER_PAGE)),
            total=listed.total,
            files=[
                FileItem(
                    file_id=v.file.id,
                    path=v.display_path,
                    size=v.file.size,
                    chunks=v.file.chunk_count,
                )
                for v in listed.items
            ],
            folders=sorted(by_path),
        )

    def ask(self, question: str, knowledge_bases: Sequence[str] = ()) -> Answer:
        # Read once per call, without counting files: a search needs only the names.
        kb_names = {kb.id: kb.name for kb in self.view.kbs(count_files=False)}
        names = tuple(knowledge_bases) or tuple(kb_names)
        known = [] if self.answers.extractive else self.answers.model_list.names()
        model = known[0] if known else EXTRACTIVE_MODEL  # llm_model first when set
        request = ChatRequest(
            model=model,
            messages=(ChatMessage("user", question),),
            knowledge=names,
            access=self.view.access,
        )
        result = self.answers.complete(request)
        sources = [self._cited(s, kb_names) for s in result.prepared.sources]
        kept, note = self._within_budget(sources, len(result.text))
        attribution = result.attribution
        found = attribution.unsupported if attribution else []
        unsupported = [attribution.text[s.start : s.end] for s in found if attribution]
        return Answer(
            answer=result.text,
            extractive=result.extractive,
            sources=kept,
            note=note,
            unsupported=unsupported,
            abstained=result.abstained or "",
        )

    # --- shaping ----------------------------------------------------------------------
    def link(self, file_id: str, start: int, end: int) -> str:
        return f"{self.base_url}/#/file/{quote(file_id)}?start={start}&end={end}"

    def _passage(self, hit: ScoredChunk, kb_names: dict[str, str]) -> Passage:
        chunk, kb_id = hit.chunk, hit.kb_id or ""
        return Passage(
            source_id=chunk.id,
            knowledge_base_id=kb_id,
            knowledge_base=kb_names.get(kb_id, ""),
            file_id=chunk.file_id,
            file_name=chunk.file_name,
            folder=chunk.file_name.rsplit("/", 1)[0] if "/" in chunk.file_name else "",
            page=chunk.page,
            start=chunk.start,
            end=chunk.end,
            score=round(hit.score, 6),
            text=chunk.text,
            link=self.link(chunk.file_id, chunk.start, chunk.end),
        )

    def _cited(self, source: CitedSource, kb_names: dict[str, str]) -> Passage:
        kb_id = source.kb_id or ""
        name = source.file_name
        return Passage(
            source_id=source.chunk_id or f"{source.file_id}:{source.start}-{source.end}",
            knowledge_base_id=kb_id,
            knowledge_base=kb_names.get(kb_id, ""),
            file_id=source.file_id,
            file_name=name,
            folder=name.rsplit("/", 1)[0] if "/" in name and not source.url else "",
            page=source.page,
            start=source.start,
            end=source.end,
            score=round(source.score, 6),
            text=source.text,
            link=source.url or self.link(source.file_id, source.start, source.end),
        )

    def _within_budget(self, passages: list[Passage], used: int = 0) -> tuple[list[Passage], str]:
        """The passages, best first, that fit the budget (always the first), and a note."""
        kept: list[Passage] = []
        for passage in passages:
            used += len(passage.text) + 200  # the text and its citation fields
            if kept and used > self.budget:
                break
            kept.append(passage)
        left = len(passages) - len(kept)
        if not left:
            return kept, ""
        tokens = self.budget // CHARS_PER_TOKEN
        return kept, (
            f"{left} more passages left out to stay within {tokens} tokens; ask for fewer "
            "(k), narrow the query, or read a file's lines with read_file."
        )
