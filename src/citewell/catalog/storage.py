"""Where originals and extracted texts live: files in the data dir, named by file id."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from citewell.types import Section


class FileStorage:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def _path(self, file_id: str, kind: str) -> Path:
        if not file_id.isalnum():
            raise ValueError(f"not a file id: {file_id!r}")
        return self.root / f"{file_id}.{kind}"

    def put(
        self, file_id: str, original: bytes, text: str, sections: Sequence[Section] = ()
    ) -> None:
        """Write each atomically (temp file + rename), so a reader never sees half a file.
        ``sections`` (where pages and headings lie in the text) are for the viewer."""
        outline = json.dumps([[s.start, s.end, s.page, list(s.headings)] for s in sections])
        for kind, data in (
            ("original", original),
            ("txt", text.encode("utf-8")),
            ("sections.json", outline.encode("utf-8")),
        ):
            target = self._path(file_id, kind)
            temp = target.with_suffix(target.suffix + ".tmp")
            temp.write_bytes(data)
            os.replace(temp, target)

    def text(self, file_id: str) -> str | None:
        path = self._path(file_id, "txt")
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def sections(self, file_id: str) -> list[Section]:
        """Pages and headings of the text; empty for files stored before they were kept."""
        path = self._path(file_id, "sections.json")
        if not path.is_file():
            return []
        rows = json.loads(path.read_text(encoding="utf-8"))
        return [Section(start, end, page, tuple(headings)) for start, end, page, headings in rows]

    def original(self, file_id: str) -> bytes | None:
        path = self._path(file_id, "original")
        return path.read_bytes() if path.is_file() else None

    # --- uploads waiting for their ingest job (kept until it succeeds, for retries) ----------
    def _staged(self, job_id: str) -> Path:
        if not job_id.isalnum():
            raise ValueError(f"not a job id: {job_id!r}")
        return self.root / "staging" / job_id

    def stage(self, job_id: str, data: bytes) -> None:
        target = self._staged(job_id)
        target.parent.mkdir(exist_ok=True)
        temp = target.with_suffix(".tmp")
        temp.write_bytes(data)
        os.replace(temp, target)

    def staged(self, job_id: str) -> bytes | None:
        path = self._staged(job_id)
        return path.read_bytes() if path.is_file() else None

    def is_staged(self, job_id: str) -> bool:
        return self._staged(job_id).is_file()

    def staged_ids(self) -> set[str]:
        folder = self.root / "staging"
        return {p.name for p in folder.iterdir() if p.name.isalnum()} if folder.is_dir() else set()

    def staged_at(self, job_id: str) -> float:
        path = self._staged(job_id)
        return path.stat().st_mtime if path.is_file() else 0.0

    def unstage(self, job_id: str) -> None:
        self._staged(job_id).unlink(missing_ok=True)

    def file_ids(self) -> set[str]:
        """Ids of every file with a stored original or text (temp files excluded)."""
        return {
            p.name.split(".", 1)[0]
            for p in self.root.iterdir()
            if p.suffix in (".original", ".txt") and p.name.split(".", 1)[0].isalnum()
        }

    def delete(self, file_id: str) -> None:
        for kind in ("original", "txt", "sections.json"):
            self._path(file_id, kind).unlink(missing_ok=True)
