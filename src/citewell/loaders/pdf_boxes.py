"""Runs of text on a PDF page and the lines they make, in points from the page's top-left
corner (PDF's own coordinates start at the bottom)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Segment:
    """One run of text and its box."""

    x0: float
    top: float
    x1: float
    bottom: float
    text: str
    size: float = 0.0  # the font size of its first glyph (0: unknown)
    bold: bool = False

    @property
    def height(self) -> float:
        return self.bottom - self.top


@dataclass
class Line:
    segments: list[Segment] = field(default_factory=list)

    @property
    def top(self) -> float:
        return min(s.top for s in self.segments)

    @property
    def bottom(self) -> float:
        return max(s.bottom for s in self.segments)

    @property
    def x0(self) -> float:
        return min(s.x0 for s in self.segments)

    @property
    def size(self) -> float:
        return max(s.size for s in self.segments)

    @property
    def bold(self) -> bool:
        return all(s.bold for s in self.segments)

    @property
    def x1(self) -> float:
        return max(s.x1 for s in self.segments)

    def text(self) -> str:
        """Runs joined with a space where the page leaves one between them."""
        out = ""
        previous: Segment | None = None
        for segment in sorted(self.segments, key=lambda s: s.x0):
            gap = segment.x0 - previous.x1 if previous else 0.0
            if out and not out.endswith(" ") and gap > 0.15 * segment.height:
                out += " "
            out += segment.text
            previous = segment
        return " ".join(out.split())
