"""OCR engines: text from page images. Both run offline.

- ``TesseractOcr``: the tesseract binary (Debian's tesseract-ocr; Apache-2.0). Fast and keeps
  word spacing; preferred when installed.
- ``RapidOcr``: rapidocr-onnxruntime (Apache-2.0), whose ONNX models ship inside the wheel, for
  machines where no system package can be installed.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from citewell.errors import MissingDependency, ParseError
from citewell.plugins import Registry

if TYPE_CHECKING:
    from PIL.Image import Image

MIN_SIDE = 1600  # pixels: smaller scans are upscaled first, OCR models want ~20 px letters


class OcrEngine(Protocol):
    name: str

    def recognize(self, image: Image) -> str: ...


# A piece of recognised text and where it stands: left, top, right, bottom in pixels.
Run = tuple[float, float, float, float, str]


class PositionedOcr(Protocol):
    """An engine that also says where each word (or line) stands, so a scanned page can be
    laid out like a PDF's text layer: columns, tables, boxes for the viewer."""

    def runs(self, image: Image) -> tuple[list[Run], tuple[int, int]]:
        """The runs, in pixels of an image of the returned (width, height)."""
        ...


def prepare(image: Image) -> Image:
    """RGB, and upscaled when the page is small (a 72 dpi fax reads badly as it is)."""
    from PIL import Image as PILImage

    image = image.convert("RGB")
    short = min(image.size)
    if 0 < short < MIN_SIDE:
        factor = min(4.0, MIN_SIDE / short)
        size = (int(image.width * factor), int(image.height * factor))
        image = image.resize(size, PILImage.Resampling.LANCZOS)
    return image


class TesseractOcr:
    name = "tesseract"

    def __init__(self, binary: str, languages: str = "eng", timeout: float = 120.0) -> None:
        self.binary = binary
        self.languages = languages
        self.timeout = timeout

    def recognize(self, image: Image) -> str:
        return self._run(prepare(image), [])

    def runs(self, image: Image) -> tuple[list[Run], tuple[int, int]]:
        """Words from tesseract's TSV output (level 5 rows)."""
        prepared = prepare(image)
        found: list[Run] = []
        for row in self._run(prepared, ["tsv"]).splitlines()[1:]:
            cells = row.split("\t")
            if len(cells) == 12 and cells[0] == "5" and cells[11].strip():
                left, top, width, height = (float(v) for v in cells[6:10])
                found.append((left, top, left + width, top + height, cells[11].strip()))
        return found, prepared.size

    def _run(self, prepared: Image, configs: list[str]) -> str:
        buffer = io.BytesIO()
        prepared.save(buffer, format="PNG")
        command = [self.binary, "stdin", "stdout", "-l", self.languages, "--psm", "3", *configs]
        # one thread per page: tesseract's OpenMP threads fight each other on small machines
        env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
        try:
            done = subprocess.run(
                command,
                input=buffer.getvalue(),
                capture_output=True,
                timeout=self.timeout,
                env=env,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ParseError(f"OCR of a page took longer than {self.timeout:.0f} s.") from exc
        if done.returncode != 0:
            error = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["?"]
            raise ParseError(
                f"tesseract failed: {error[0]} (is the '{self.languages}' language installed?)"
            )
        return done.stdout.decode("utf-8", errors="replace")


class RapidOcr:
    name = "rapidocr"

    def __init__(self) -> None:
        from rapidocr_onnxruntime import RapidOCR

        self.engine = RapidOCR()

    def recognize(self, image: Image) -> str:
        import numpy as np

        # no upscaling: the detector resizes pages itself, bigger input only costs time
        result, _ = self.engine(np.asarray(image.convert("RGB")))
        return _lines(result or [])

    def runs(self, image: Image) -> tuple[list[Run], tuple[int, int]]:
        """RapidOCR's text boxes (a line, or a table cell, each)."""
        import numpy as np

        result, _ = self.engine(np.asarray(image.convert("RGB")))
        found: list[Run] = []
        for box, text, _score in result or []:
            xs = [point[0] for point in box]
            ys = [point[1] for point in box]
            found.append((min(xs), min(ys), max(xs), max(ys), str(text)))
        return found, image.size


def _lines(result: list[list[object]]) -> str:
    """RapidOCR's boxes, top to bottom, joined into lines where their rows overlap."""
    boxes = []
    for box, text, _score in result:
        ys = [point[1] for point in box]  # type: ignore[attr-defined]
        xs = [point[0] for point in box]  # type: ignore[attr-defined]
        boxes.append((min(ys), max(ys), min(xs), str(text)))
    boxes.sort()
    lines: list[list[tuple[float, str]]] = []
    bottom = -1.0
    for top, low, left, text in boxes:
        if lines and top < bottom - (low - top) / 2:
            lines[-1].append((left, text))
            bottom = max(bottom, low)
        else:
            lines.append([(left, text)])
            bottom = low
    return "\n".join(" ".join(t for _, t in sorted(line)) for line in lines)


OcrFactory = Callable[[str, float], OcrEngine]  # (languages, timeout) → an engine
OCR_ENGINES: Registry[OcrFactory] = Registry("ocr")


@OCR_ENGINES.register("tesseract")
def _tesseract(languages: str, timeout: float) -> OcrEngine:
    binary = shutil.which("tesseract")
    if binary is None:
        raise MissingDependency(
            "ocr_engine is 'tesseract' but no tesseract binary is on PATH: "
            "apt-get install tesseract-ocr (or brew install tesseract)."
        )
    return TesseractOcr(binary, languages, timeout)


@OCR_ENGINES.register("rapidocr")
def _rapidocr(languages: str, timeout: float) -> OcrEngine:  # noqa: ARG001 (models ship both)
    try:
        return RapidOcr()
    except ImportError as exc:
        raise MissingDependency("ocr_engine is 'rapidocr': pip install 'citewell[ocr]'.") from exc


AUTO_ORDER = ("tesseract", "rapidocr")  # what "auto" tries: the built-ins, fastest first


def build_ocr(engine: str, languages: str = "eng", timeout: float = 120.0) -> OcrEngine | None:
    """The configured engine; None for 'off' or when 'auto' finds none installed."""
    if engine == "off":
        return None
    if engine != "auto":
        return OCR_ENGINES.get(engine)(languages, timeout)
    for name in AUTO_ORDER:
        try:
            return OCR_ENGINES.get(name)(languages, timeout)
        except MissingDependency:
            continue
    return None


NO_OCR = (
    "needs OCR, and no OCR engine is installed: apt-get install tesseract-ocr, "
    "or pip install 'citewell[ocr]'."
)
