"""PDFs written from scratch for tests and benchmarks: text in the standard Helvetica fonts
(which every reader has, so nothing is embedded), tables ruled or borderless, one or two
columns of running text. No dependency: the file is a few objects and a cross-reference
table, as the PDF 1.4 reference describes."""

from __future__ import annotations

import random
import textwrap
import zlib
from dataclasses import dataclass, field

WIDTH, HEIGHT = 612.0, 792.0  # US Letter, in points
CHAR_WIDTH = 0.5  # Helvetica's average advance, in ems: enough to lay out columns


@dataclass
class Page:
    """What is drawn on one page; ``y`` is from the top, as one reads."""

    ops: list[str] = field(default_factory=list)

    def text(self, x: float, y: float, text: str, size: float = 10, bold: bool = False) -> None:
        font = "F2" if bold else "F1"
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        baseline = HEIGHT - y - size
        self.ops.append(f"BT /{font} {size} Tf {x:.2f} {baseline:.2f} Td ({escaped}) Tj ET")

    def rule(self, x0: float, y0: float, x1: float, y1: float) -> None:
        self.ops.append(f"{x0:.2f} {HEIGHT - y0:.2f} m {x1:.2f} {HEIGHT - y1:.2f} l S")

    def paragraph(self, x: float, y: float, text: str, width: float, size: float = 10) -> float:
        """Text wrapped to ``width`` points; returns the y below it."""
        per_line = max(10, int(width / (size * CHAR_WIDTH * 1.05)))
        for line in textwrap.wrap(text, per_line):
            self.text(x, y, line, size)
            y += size * 1.3
        return y + size * 0.7

    def table(
        self,
        x: float,
        y: float,
        rows: list[list[str]],
        ruled: bool,
        size: float = 9,
        gap: float = 14,
        by_column: bool = False,
    ) -> float:
        """A table whose first row is its header (bold); returns the y below it.
        ``by_column``: the file draws it a column at a time, as some producers do, so a
        reader that follows the drawing order gets each column as a run of lines."""
        widths = [
            max(len(row[c]) for row in rows) * size * CHAR_WIDTH * 1.15 + gap
            for c in range(len(rows[0]))
        ]
        pitch = size * 1.9
        right = x + sum(widths)
        if ruled:
            self.rule(x - 4, y - 4, right, y - 4)
        lefts = [x + sum(widths[:c]) for c in range(len(widths))]
        cells = [(r, c) for r in range(len(rows)) for c in range(len(widths))]
        for r, c in sorted(cells, key=lambda rc: (rc[1], rc[0])) if by_column else cells:
            self.text(lefts[c], y + r * pitch, rows[r][c], size, bold=r == 0)
        for _ in rows:
            if ruled:
                self.rule(x - 4, y + pitch - 4, right, y + pitch - 4)
            y += pitch
        if ruled:
            left = x - 4
            for width in [0.0, *widths]:
                left += width
                self.rule(left, y - len(rows) * pitch - 4, left, y - 4)
        return y + size


def pdf_bytes(pages: list[Page], compress: bool = False) -> bytes:
    """The pages as one PDF file (``compress``: content streams deflated)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, once the pages' numbers are known
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>",
    ]
    kids = []
    for page in pages:
        stream = "\n".join(page.ops).encode("cp1252", "replace")
        deflate = b""
        if compress:
            stream, deflate = zlib.compress(stream, 9), b" /Filter /FlateDecode"
        objects.append(
            b"<< /Length %d%s >>\nstream\n%s\nendstream" % (len(stream), deflate, stream)
        )
        content = len(objects)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Contents %d 0 R "
            b"/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> >>"
            % (int(WIDTH), int(HEIGHT), content)
        )
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def slow_page_pdf(paths: int = 1000, curves: int = 60) -> bytes:
    """A PDF of a few KB whose one page takes seconds to draw: the same filled path of
    ``curves`` random curves, ``paths`` times (about 7 s at 1200 px wide on a 2-core box
    for the defaults), under a line of text (so it is not taken for a scan)."""
    chance = random.Random(1)

    def point() -> str:
        return f"{chance.randint(0, int(WIDTH))} {chance.randint(0, int(HEIGHT))}"

    shape = [f"{point()} m", *(f"{point()} {point()} {point()} c" for _ in range(curves)), "f*"]
    page = Page()
    page.text(72, 72, "A page drawn slowly: many filled curves.")
    page.ops += shape * paths
    return pdf_bytes([page], compress=True)
