"""An agent's citation opens the page at the passage: the link an MCP search returns (the
official SDK over Streamable HTTP, with the key the page signed in with) shows the file in
the viewer with exactly the cited span highlighted."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.browser.test_web_page import in_viewport, key_of, norm, sign_in

pytestmark = [pytest.mark.browser]

MEMO = (
    "# Travel policy\n\nTrains are booked in second class.\n\n"
    + "Filler paragraph about nothing in particular. " * 40
    + "\n\nHotel nights are refunded up to ninety crowns when the receipt is kept."
)


async def _search(url: str, key: str) -> dict:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
    async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        result = await client.call_tool(
            "search", {"query": "how much are hotel nights refunded", "k": 1}
        )
    assert not result.is_error, result.content
    return result.structured_content["passages"][0]


def test_an_mcp_search_link_opens_the_cited_passage(page, site):
    sign_in(page, site, "ada", site.admin_password)
    key = key_of(page)
    with httpx.Client(base_url=site.url, headers={"Authorization": f"Bearer {key}"}) as api:
        api.post("/api/v1/knowledge", json={"name": "travel"}).raise_for_status()
        api.post(
            "/api/v1/knowledge/travel/text", json={"name": "travel.md", "content": MEMO}
        ).raise_for_status()
    with ThreadPoolExecutor(1) as thread:  # Playwright's sync API holds this thread's loop
        passage = thread.submit(anyio.run, _search, site.url, key).result()
    assert "ninety crowns" in passage["text"]
    assert passage["link"].startswith(site.url + "/#/file/")
    page.goto(passage["link"])
    mark = page.locator("mark.cited-span").first
    mark.wait_for()
    shown = "".join(page.locator("mark.cited-span").all_inner_texts())
    with httpx.Client(base_url=site.url, headers={"Authorization": f"Bearer {key}"}) as api:
        text = api.get(f"/api/v1/files/{passage['file_id']}/text").json()["text"]
    assert norm(shown) == norm(text[passage["start"] : passage["end"]])
    assert "ninety crowns" in shown and mark.is_visible() and in_viewport(page, mark)
    assert page.problems == []
