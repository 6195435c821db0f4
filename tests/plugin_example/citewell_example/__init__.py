"""An example plug-in: each class is what its role's protocol asks for, nothing more."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from citewell.loaders import LoaderContext
from citewell.sources import SourceItem
from citewell.sources.registry import SourceContext, SourceRequest
from citewell.types import Document


class HashEmbedder:
    """Words hashed into 256 buckets: texts sharing words land close together."""

    def __init__(self, dimension: int = 256) -> None:
        self.model_id = f"example-hash-{dimension}"
        self.dimension = dimension

    def embed(self, texts, kind="document"):  # type: ignore[no-untyped-def]
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()) or [""]:
                bucket = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
                out[row, bucket % self.dimension] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


def build_embedder(section) -> HashEmbedder:  # type: ignore[no-untyped-def]
    # A factory receives its role's section of the settings (here config.EmbeddingSection).
    return HashEmbedder()


class NoteLoader:
    """``.note`` files: a ``Title:`` line, then the body."""

    mime_types = frozenset({"text/x-note"})
    extensions = {".note": "text/x-note"}

    def __init__(self, context: LoaderContext | None = None) -> None:
        self.context = context

    def load(self, data: bytes, name: str) -> Document:
        head, _, body = data.decode("utf-8").partition("\n")
        title = head.removeprefix("Title:").strip()
        return Document(f"# {title}\n\n{body.strip()}\n", name, "text/x-note", title=title)


class LinesSource:
    """Every non-empty line of a local text file as a document of its own."""

    def __init__(self, context: SourceContext) -> None:
        self.context = context

    def items(self, request: SourceRequest) -> Iterator[SourceItem]:
        path = Path(request.target)
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                data = line.strip().encode()
                yield SourceItem(
                    key=f"lines:{path.resolve()}#{number}",
                    name=f"{path.name} line {number}.txt",
                    read=lambda data=data: data,
                    source="lines",
                )
