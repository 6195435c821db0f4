"""The ``extraction`` section: reading files: limits, worker processes, OCR."""

from __future__ import annotations

from typing import Annotated

from citewell.config.fields import Section, backend, setting


class ExtractionSection(Section):
    """Reading text out of files: parsers, OCR and their limits."""

    ocr_engine: Annotated[str, backend("ocr", "auto", "tesseract", "rapidocr", "off")] = setting(
        "auto",
        "OCR for scanned PDF pages and images. 'tesseract': the tesseract binary "
        "(apt-get install tesseract-ocr); 'rapidocr': pip install 'citewell[ocr]' (models "
        "inside the package); 'auto': tesseract if installed, else rapidocr if installed, "
        "else scans are refused with a message saying how to enable OCR.",
    )

    ocr_languages: str = setting(
        "eng", "Tesseract language codes joined by '+', e.g. 'eng+deu' (packs must be installed)."
    )

    ocr_dpi: int = setting(200, "Resolution scanned PDF pages are rendered at for OCR.")

    extract_timeout: float = setting(
        300.0,
        "Seconds one file's text extraction (in the job queue with its split into chunks) "
        "may take before it is stopped and the file refused (OCR of a long scan is the "
        "slow case).",
    )

    extract_memory_mb: int = setting(
        4096,
        "Address-space limit (MiB) of the process that extracts text; a file that needs more "
        "is refused. 0: no limit.",
    )

    extract_workers: int = setting(
        2,
        "Files parsed at once during ingestion (each in its own worker process when "
        "extract_isolated), while the embedder works on files already parsed: a slow file "
        "holds up one worker, not the others or the embedding.",
    )

    extract_split_in_worker: bool = setting(
        True,
        "In the job queue, also split each file into chunks (ids, BM25 terms) in the "
        "extraction worker process, off the server's GIL, when the KB's chunking allows it "
        "(no LLM enrichment, a built-in splitter measuring characters): faster ingestion of "
        "small files. Without extract_isolated the split runs on the server's reading threads.",
    )

    extract_isolated: bool = setting(
        True,
        "Extract text in a separate worker process, so that the time and memory limits can "
        "be enforced and a crashing parser cannot take the server down.",
    )

    render_workers: int = setting(
        3,
        "Worker processes that draw the viewer's page images, apart from extraction (a slow "
        "page never holds up ingestion). A user's pages are drawn one at a time, so the "
        "others are free for other users (and a spare is warm when one was stopped).",
        ge=1,
    )

    render_timeout: float = setting(
        10.0,
        "Seconds one page image may take to draw before it is stopped and refused (the "
        "viewer then shows the extracted text).",
        gt=0,
    )

    render_per_user: int = setting(
        2,
        "Page images one user may have being drawn or waiting at once; more answer 429.",
        ge=1,
    )

    max_document_chars: int = setting(
        20_000_000,
        "Largest extracted text accepted from one file, in characters (~20 MB); bigger files "
        "are refused: split them or raise this.",
    )
