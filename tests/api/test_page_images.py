"""The viewer's page view through the API: a PDF's text comes with where each line sits on
its page, and the page itself comes as a PNG (rendered in an extraction worker); anything
but a PDF page is refused with a 400 that says why."""

from __future__ import annotations

import pytest

from tests.api.conftest import ensure_kb, upload

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def report(extractive_server, shared_docs):
    with extractive_server.client() as client:
        ensure_kb(client, "reports")
        pdf = upload(client, "reports", shared_docs / "SPARSE-2024-INV-1234_borderless_table.pdf")
        text = upload(client, "reports", shared_docs / "codeblock.md")
    assert pdf["file"]["status"] == text["file"]["status"] == "indexed"
    return pdf["file"]["id"], text["file"]["id"]


def test_pdf_lines_have_boxes_on_their_page(extractive_server, report):
    with extractive_server.client() as client:
        body = client.get(f"/api/v1/files/{report[0]}/text").json()
    text, pages = body["text"], body["sections"]
    assert [s["page"] for s in pages] == [1, 2]
    for section in pages:
        assert section["boxes"]
        for start, end, x0, top, x1, bottom in section["boxes"]:
            assert section["start"] <= start < end <= section["end"]
            assert 0 <= x0 < x1 <= 1 and 0 <= top < bottom <= 1
            assert "\n" not in text[start:end].strip("\n")  # a line (or a table row) each
    rows = [text[b[0] : b[1]] for b in pages[0]["boxes"]]
    assert "| SKU-4563 | D-22 |  | 156 |  | CRITICAL |" in rows


def test_a_pdf_page_comes_as_png(extractive_server, report):
    with extractive_server.client() as client:
        image = client.get(f"/api/v1/files/{report[0]}/pages/2/image", params={"width": 600})
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    assert image.content.startswith(PNG)
    width = int.from_bytes(image.content[16:20], "big")  # the IHDR chunk
    assert width == 600


@pytest.mark.parametrize(
    ("which", "page", "status", "says"),
    [(0, 3, 400, "This PDF has 2 pages"), (1, 1, 400, "is not a PDF"), (0, 0, 400, "page")],
)
def test_what_is_no_pdf_page_is_refused(extractive_server, report, which, page, status, says):
    with extractive_server.client() as client:
        response = client.get(f"/api/v1/files/{report[which]}/pages/{page}/image")
    assert response.status_code == status, response.text
    assert response.json()["code"] == "invalid_input" and says in response.json()["detail"]
