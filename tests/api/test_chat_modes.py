"""Injection place, token budget, full-context and bypass modes: each needs its own settings."""

import pytest

from citewell.config import Settings
from tests.api.conftest import assert_citations_resolve, ensure_kb, run_server, upload

pytestmark = pytest.mark.api

SHORT = "# Leave\n\nParental leave lasts sixteen weeks at full pay."


@pytest.fixture
def start(tmp_path, onnx_embedder, fake_llm):
    def start_server(**overrides):
        settings = Settings.load(
            data_dir=tmp_path / "data", auth="none", llm_base_url=fake_llm.url + "/v1", **overrides
        )
        return run_server(settings, onnx_embedder)

    return start_server


def ask(client, kb="docs", question="How long is parental leave?"):
    response = client.post(
        "/v1/chat/completions",
        json={
            "model": "fake-llm",
            "knowledge_collections": [kb],
            "retrieval_trace": True,
            "messages": [
                {"role": "system", "content": "You are HR."},
                {"role": "user", "content": question},
            ],
        },
    )
    assert response.status_code == 200, response.text
    return response.json()


def sent_messages(fake_llm):
    return [b for p, b in fake_llm.requests if p == "/v1/chat/completions"][-1]["messages"]


def test_user_message_injection_when_configured(start, fake_llm):
    import httpx

    with start(rag_system_context=False) as url, httpx.Client(base_url=url, timeout=60) as c:
        ensure_kb(c, "docs")
        c.post("/api/v1/knowledge/docs/text", json={"name": "leave.md", "content": SHORT})
        body = ask(c)
    messages = sent_messages(fake_llm)
    assert messages[0] == {"role": "system", "content": "You are HR."}
    assert '<source id="1"' in messages[-1]["content"] and messages[-1]["role"] == "user"
    assert_citations_resolve(body)


def test_system_injection_keeps_the_users_system_prompt_first(start, fake_llm):
    import httpx

    with start() as url, httpx.Client(base_url=url, timeout=60) as c:
        ensure_kb(c, "docs")
        c.post("/api/v1/knowledge/docs/text", json={"name": "leave.md", "content": SHORT})
        ask(c)
    system = sent_messages(fake_llm)[0]["content"]
    assert system.startswith("You are HR.") and "<context>" in system


def test_context_is_packed_to_the_token_budget(start, fake_llm, shared_docs):
    import httpx

    with (
        start(llm_context_window=1500, llm_reserved_tokens=200, top_k=20) as url,
        httpx.Client(base_url=url, timeout=60) as c,
    ):
        ensure_kb(c, "docs")
        upload(c, "docs", shared_docs / "wiki_duck.html")
        body = ask(c, question="What do ducks eat?")
    system = sent_messages(fake_llm)[0]["content"]
    assert 0 < len(body["sources"]) < 20
    assert len(system) < 1500 * 6  # ~4 chars a token, with room for the tokenizer's view
    assert [s["id"] for s in body["sources"]] == list(range(1, len(body["sources"]) + 1))


def test_full_context_uses_whole_documents_and_falls_back(start, fake_llm, shared_docs):
    import httpx

    with (
        start(rag_full_context=True, llm_context_window=4000) as url,
        httpx.Client(base_url=url, timeout=60) as c,
    ):
        ensure_kb(c, "docs")
        c.post("/api/v1/knowledge/docs/text", json={"name": "leave.md", "content": SHORT})
        small = ask(c)
        assert small["retrieval_trace"]["mode"] == "full_context"
        assert small["sources"][0]["content"] == SHORT
        upload(c, "docs", shared_docs / "wiki_duck.html")  # too big for 4000 tokens
        big = ask(c, question="What do ducks eat?")
    assert big["retrieval_trace"]["mode"].startswith("retrieval")
    assert big["sources"]


def test_bypass_stores_text_without_embedding(start, fake_llm):
    import httpx

    with (
        start(bypass_embedding_and_retrieval=True) as url,
        httpx.Client(base_url=url, timeout=60) as c,
    ):
        ensure_kb(c, "docs")
        made = c.post("/api/v1/knowledge/docs/text", json={"name": "leave.md", "content": SHORT})
        assert made.json()["chunks_embedded"] == 0 and made.json()["file"]["chunk_count"] == 0
        body = ask(c)
    assert body["retrieval_trace"]["mode"] == "full_context"
    assert body["sources"][0]["content"] == SHORT


def test_small_to_big_gives_the_model_the_section_and_cites_the_chunk(start, fake_llm):
    import httpx

    handbook = (
        "# Leave\n\nParental leave lasts sixteen weeks at full pay.\n\n"
        + "\n\n".join(f"Rule {i}: leave requests need a manager's signature." for i in range(30))
        + "\n\nPartners may take the last four weeks of it.\n\n"
        "# Travel\n\nTrain fares are refunded in second class."
    )
    with (
        start(
            small_to_big="section", small_to_big_chars=5000, chunk_size=200, chunk_overlap=0
        ) as url,
        httpx.Client(base_url=url, timeout=60) as c,
    ):
        ensure_kb(c, "docs")
        made = c.post("/api/v1/knowledge/docs/text", json={"name": "h.md", "content": handbook})
        assert made.json()["file"]["chunk_count"] > 5
        body = ask(c, question="How long is parental leave? Does it last sixteen weeks?")
        text = c.get(f"/api/v1/files/{made.json()['file']['id']}/text").json()["text"]
    system = sent_messages(fake_llm)[0]["content"]
    block = system.split('<source id="1"', 1)[1].split("</source>", 1)[0]
    assert "sixteen weeks" in block
    assert "Partners may take the last four weeks" in block  # the section, beyond the chunk
    assert "Train fares" not in block  # not beyond the section
    assert body["retrieval_trace"]["small_to_big"] == "section"
    first = body["sources"][0]
    meta = first["metadata"]
    assert text[meta["start"] : meta["end"]] == first["content"]  # the citation: the chunk
    assert "Partners" not in first["content"]
    assert meta["context_start"] <= meta["start"] and meta["end"] <= meta["context_end"]
