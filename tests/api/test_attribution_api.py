"""Citations attributed after generation, in every answer path over HTTP: the RAG and
OpenAI chat routes, written and streamed, the MCP ``ask`` tool, and the setting that turns
it off. The LLM is the wire-faithful fake; what it "writes" is set per test."""

import json
from collections.abc import Iterator

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from citewell.config import Settings
from tests.api.conftest import Server, ensure_kb, run_server
from tests.fake_servers import FakeService, serve

pytestmark = pytest.mark.api

HANDBOOK = (
    "# Leave policy\n\nParental leave lasts sixteen weeks at full pay. Sick leave needs a "
    "doctor's note after three days."
)
EXPENSES = (
    "# Expenses\n\nExpenses are reimbursed within thirty days of submission. Receipts must "
    "be attached to every claim, including parental leave travel."
)
UNCITED = (
    "Parental leave lasts sixteen weeks at full pay. The moon is made of green cheese and "
    "sings at night."
)


@pytest.fixture(scope="module")
def attributed(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[Server]:
    settings = Settings.load(
        data_dir=tmp_path_factory.mktemp("attribution"),
        auth="none",
        llm_base_url=fake_llm.url + "/v1",
    )
    with run_server(settings, onnx_embedder) as url:
        server = Server(url, None, fake_llm)
        with server.client() as c:
            ensure_kb(c, "hr")
            for name, text in (("leave.md", HANDBOOK), ("expenses.md", EXPENSES)):
                made = c.post("/api/v1/knowledge/hr/text", json={"name": name, "content": text})
                assert made.status_code == 201, made.text
        yield server


@pytest.fixture
def writes(fake_llm):
    """Sets what the fake model answers, for one test."""
    before = fake_llm.reply

    def set_reply(text: str) -> None:
        fake_llm.reply = text

    yield set_reply
    fake_llm.reply = before


def _ask(client: httpx.Client, path: str = "/api/v1/rag/chat/completions", **body) -> dict:
    body = {
        "model": "fake-llm",
        "messages": [{"role": "user", "content": "How long is parental leave?"}],
        "knowledge_collections": ["hr"],
        **body,
    }
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    return response.json()


def _leave_source(body: dict) -> int:
    (number,) = [s["id"] for s in body["sources"] if "sixteen weeks" in s["content"]]
    return number


def test_a_missing_citation_is_added_and_an_unsupported_sentence_flagged(attributed, writes):
    writes(UNCITED)
    with attributed.client() as c:
        body = _ask(c)
    number = _leave_source(body)
    content = body["choices"][0]["message"]["content"]
    assert content.startswith(f"Parental leave lasts sixteen weeks at full pay [{number}].")
    sentences = body["attribution"]["sentences"]
    assert [s["status"] for s in sentences] == ["added", "unsupported"]
    first = sentences[0]
    assert content[first["start"] : first["end"]].endswith(f"[{number}].")
    assert first["quote"] == "Parental leave lasts sixteen weeks at full pay."
    assert (first["source"], first["by"]) == (number, "wording")
    source = next(s for s in body["sources"] if s["id"] == number)
    offset = first["quote_start"] - source["metadata"]["start"]
    assert source["content"][offset : offset + len(first["quote"])] == first["quote"]
    assert body["attribution"]["unsupported"] == 1 and body["attribution"]["changed"]


def test_a_citation_of_the_wrong_source_is_replaced_on_the_openai_route(attributed, writes):
    with attributed.client() as c:
        sources = _ask(c)["sources"]
        number = _leave_source({"sources": sources})
        wrong = next(s["id"] for s in sources if s["id"] != number)
        writes(f"Parental leave lasts sixteen weeks at full pay [{wrong}].")
        body = _ask(c, "/v1/chat/completions")
    content = body["choices"][0]["message"]["content"]
    assert content == f"Parental leave lasts sixteen weeks at full pay [{number}]."
    (sentence,) = body["attribution"]["sentences"]
    assert sentence["status"] == "replaced" and sentence["source"] == number


def test_a_streamed_answer_ends_with_its_attribution_and_corrected_text(attributed, writes):
    writes(UNCITED)
    with attributed.client() as c:
        body = {
            "model": "fake-llm",
            "messages": [{"role": "user", "content": "How long is parental leave?"}],
            "knowledge_collections": ["hr"],
            "stream": True,
        }
        with c.stream("POST", "/v1/chat/completions", json=body) as response:
            chunks = [
                json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: {")
            ]
    streamed = "".join(
        ch["choices"][0]["delta"].get("content") or "" for ch in chunks if ch["choices"]
    )
    assert streamed == UNCITED  # what was streamed is the model's
    last = next(ch for ch in chunks if ch.get("attribution"))
    assert last["choices"][0]["finish_reason"] == "stop"
    number = _leave_source(last)
    assert last["attribution"]["content"].startswith(
        f"Parental leave lasts sixteen weeks at full pay [{number}]."
    )
    assert [s["status"] for s in last["attribution"]["sentences"]] == ["added", "unsupported"]


def test_the_mcp_ask_tool_lists_unsupported_sentences(attributed, writes):
    writes(UNCITED)

    async def ask() -> dict:
        http = httpx2.AsyncClient(timeout=60)
        async with Client(streamable_http_client(attributed.url + "/mcp", http_client=http)) as mcp:
            question = {"question": "How long is parental leave?", "knowledge_bases": ["hr"]}
            result = await mcp.call_tool("ask", question)
            assert not result.is_error, result.content
            return result.structured_content or {}

    answer = anyio.run(ask)
    assert answer["unsupported"] == ["The moon is made of green cheese and sings at night."]
    assert "sixteen weeks at full pay [" in answer["answer"]


def test_attribution_can_be_turned_off_at_run_time(attributed, writes):
    writes(UNCITED)
    with attributed.client() as c:
        off = {"settings": {"citation_attribution": False}}
        changed = c.post("/api/v1/retrieval/config/update", json=off)
        assert changed.status_code == 200, changed.text
        try:
            body = _ask(c)
        finally:
            c.post("/api/v1/retrieval/config/reset", json={})
    assert body["choices"][0]["message"]["content"] == UNCITED
    assert "attribution" not in body


def test_the_configured_reranker_judges_what_the_wording_leaves_short(attributed, writes):
    said = "Parents get sixteen weeks away from work on their salary."
    writes(said)
    service = FakeService()  # the wire-faithful rerank API: relevance is shared words
    with serve(service) as rerank_url, attributed.client() as c:
        change = {
            "RAG_RERANKING_ENGINE": "external",
            "RAG_EXTERNAL_RERANKER_URL": rerank_url + "/v1/rerank",
            "settings": {"citation_checker": "reranker", "citation_min_similarity": 0.3},
        }
        assert c.post("/api/v1/retrieval/config/update", json=change).status_code == 200
        try:
            body = _ask(c)
        finally:
            c.post("/api/v1/retrieval/config/reset", json={})
    (sentence,) = body["attribution"]["sentences"]
    assert (sentence["source"], sentence["by"]) == (_leave_source(body), "meaning")
    assert sentence["quote"] == "Parental leave lasts sixteen weeks at full pay."
    asked = [body["query"] for path, body in service.requests if path.endswith("/rerank")]
    assert said in asked  # the sentence was the reranker's query


def test_extractive_answers_carry_their_attribution(extractive_server):
    with extractive_server.client() as c:
        ensure_kb(c, "hr")
        c.post("/api/v1/knowledge/hr/text", json={"name": "hr.md", "content": HANDBOOK})
        body = _ask(c, model="citewell-extractive")
    assert body["extractive"] is True
    statuses = {s["status"] for s in body["attribution"]["sentences"]}
    assert statuses == {"kept"}  # quotes are their sources' own sentences


def test_a_question_naming_what_no_source_mentions_is_answered_without_the_model(
    attributed, writes
):
    writes("Nadia Ferreira was appointed as safety officer at Pinecrest.")
    asked = "Who did the Pinecrest warehouse appoint as safety officer?"
    calls = len(attributed.llm.requests)
    with attributed.client() as c:
        body = _ask(c, messages=[{"role": "user", "content": asked}])
        streamed = c.post("/v1/chat/completions", json={
            "model": "fake-llm", "messages": [{"role": "user", "content": asked}],
            "knowledge_collections": ["hr"], "stream": True,
        })  # fmt: skip
    content = body["choices"][0]["message"]["content"]
    assert content.startswith("None of the sources found mention \u201cPinecrest\u201d")
    assert body["abstained"] == {"reason": "unknown_name"}
    chunks = [json.loads(line[6:]) for line in streamed.text.splitlines()
              if line.startswith("data: {")]  # fmt: skip
    last = next(ch for ch in chunks if ch.get("attribution"))
    assert last["attribution"]["abstained"] == "unknown_name"
    assert len(attributed.llm.requests) == calls  # the model was not asked
