"""The CLI as a user runs it: a real `citewell` process, a real data dir, real fixtures."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.fake_servers import FakeLLMService, serve

pytestmark = pytest.mark.e2e


def citewell(data_dir, *args, env=None):
    result = subprocess.run(
        [sys.executable, "-m", "citewell", "--data-dir", str(data_dir), *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def docs(tmp_path, shared_docs):
    folder = tmp_path / "handbook"
    (folder / "sub").mkdir(parents=True)
    for name in ("multi_page.pdf", "wiki_duck.html", "codeblock.md"):
        shutil.copy(shared_docs / name, folder / name)
    shutil.copy(shared_docs / "fake-text-utf-16.txt", folder / "sub" / "notes.txt")
    (folder / ".hidden.md").write_text("# secret\nnot to be ingested")
    return folder


def test_ingest_search_ask_and_reingest(tmp_path, docs):
    data = tmp_path / "data"
    first = json.loads(citewell(data, "ingest", str(docs), "--kb", "handbook", "--json"))
    assert first["files_seen"] == 4 and first["files_indexed"] == 4
    assert first["chunks_embedded"] > 0 and first["files_failed"] == 0

    again = json.loads(citewell(data, "ingest", str(docs), "--kb", "handbook", "--json"))
    assert again["files_unchanged"] == 4 and again["chunks_embedded"] == 0

    hits = json.loads(
        citewell(data, "search", "What do ducks eat?", "--kb", "handbook", "--json", "--k", "3")
    )
    assert hits[0]["file"] == "wiki_duck.html" and len(hits) == 3
    assert hits[0]["start"] < hits[0]["end"]

    pdf_hits = json.loads(
        citewell(
            data, "search", "multi page document", "--kb", "handbook", "--mode", "bm25", "--json"
        )
    )
    assert any(h["file"] == "multi_page.pdf" and h["page"] for h in pdf_hits)

    answer = json.loads(citewell(data, "ask", "What do ducks eat?", "--kb", "handbook", "--json"))
    assert answer["extractive"] is True
    numbers = {s["id"] for s in answer["sources"]}
    assert any(s["metadata"]["name"] == "wiki_duck.html" for s in answer["sources"])
    import re

    cited = {int(n) for n in re.findall(r"\[(\d+)\]", answer["answer"])}
    assert cited and cited <= numbers

    text = citewell(data, "ask", "What do ducks eat?", "--kb", "handbook")
    assert "Extractive answer" in text and "Sources:" in text


def test_copy_under_another_name_into_second_kb_embeds_nothing(tmp_path, docs):
    data = tmp_path / "data"
    citewell(data, "ingest", str(docs / "wiki_duck.html"), "--kb", "one")
    copy = tmp_path / "renamed.html"
    shutil.copy(docs / "wiki_duck.html", copy)
    report = json.loads(citewell(data, "ingest", str(copy), "--kb", "two", "--json"))
    assert report["files_linked"] == 1 and report["chunks_embedded"] == 0
    hits = json.loads(citewell(data, "search", "duck", "--kb", "two", "--json"))
    assert hits, "the linked file is searchable in the second KB"
    kbs = json.loads(citewell(data, "kb", "list", "--json"))
    assert {k["name"]: k["file_count"] for k in kbs} == {"one": 1, "two": 1}


def test_estimate_stores_nothing_and_counts_what_ingesting_would_make(tmp_path, docs):
    data = tmp_path / "data"
    target = str(docs / "wiki_duck.html")
    estimate = json.loads(citewell(data, "ingest", target, "--kb", "one", "--estimate", "--json"))
    assert estimate["files"] == 1 and estimate["chunks"] > 0 and estimate["llm_calls"] == 0
    assert json.loads(citewell(data, "kb", "list", "--json")) == []  # nothing was made
    report = json.loads(citewell(data, "ingest", target, "--kb", "one", "--json"))
    assert report["chunks_stored"] == estimate["chunks"]


def test_errors_are_clear_and_exit_nonzero(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "citewell",
            "--data-dir",
            str(tmp_path),
            "search",
            "x",
            "--kb",
            "nope",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "No knowledge base 'nope'" in result.stderr and "citewell kb list" in result.stderr


def test_ingest_urls_pages_and_videos(tmp_path, shared_docs):
    """`citewell ingest URL…` against the fake web (tests/fake_web.py) on 127.0.0.1, which
    the environment allows; a URL that fails is reported like a file that fails."""
    import os

    from tests.fake_web import FakeWebSite, FakeYouTube, serve_web

    youtube = FakeYouTube()
    with serve_web(FakeWebSite(shared_docs)) as site, serve_web(youtube) as yt:
        youtube.url = yt
        env = {
            **os.environ,
            "CITEWELL_WEB_FETCH_ALLOWLIST": "127.0.0.1",
            "CITEWELL_YOUTUBE_URL": yt,
        }
        args = [f"{site}/article", f"{site}/download", "https://youtu.be/dQw4w9WgXcQ"]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "citewell",
                "--data-dir",
                str(tmp_path / "data"),
                "ingest",
                *args,
                f"{site}/missing",
                "--kb",
                "web",
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            env=env,
        )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["files_seen"] == 4 and report["files_indexed"] == 3
    assert report["files_failed"] == 1 and "404" in report["errors"][0]
    hits = json.loads(
        citewell(tmp_path / "data", "search", "mallards winter Hungary", "--kb", "web", "--json")
    )
    names = {h["file"] for h in hits}
    assert "Mallards of the Northern Marsh" in names and "How Mallards Migrate" in names


def test_queued_ingest_runs_the_batch_and_reports_it(tmp_path, docs):
    data = tmp_path / "data"
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    result = subprocess.run(
        [sys.executable, "-m", "citewell", "--data-dir", str(data), "ingest", str(docs)]
        + ["--kb", "handbook", "--queue", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["counts"] == {"indexed": 4, "failed": 1}
    assert report["errors"][0].startswith("broken.pdf: ")
    assert "5/5" in result.stderr and "chunks" in result.stderr  # the progress bar's last state
    hits = json.loads(citewell(data, "search", "What do ducks eat?", "--kb", "handbook", "--json"))
    assert hits[0]["file"] == "wiki_duck.html"
    again = json.loads(citewell(data, "ingest", str(docs / "codeblock.md"), "--queue", "--json"))
    assert again["counts"] == {"indexed": 1}  # the same bytes again: unchanged, still indexed


def test_queued_ingest_refuses_urls(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "citewell", "--data-dir", str(tmp_path / "data"), "ingest"]
        + ["https://example.org/page", "--queue"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2 and "--queue takes files and folders" in result.stderr


def test_ask_answers_with_the_configured_llm_and_its_tools(tmp_path, shared_docs):
    """`citewell ask` is built like the server: the configured LLM, presets and tools."""
    data = tmp_path / "data"
    citewell(data, "ingest", str(shared_docs / "wiki_duck.html"), "--kb", "handbook")
    llm = FakeLLMService()
    llm.tool_script = [[("query_knowledge_files", {"query": "duck food", "count": 2})]]
    with serve(llm) as url:
        env = {
            "CITEWELL_LLM_BASE_URL": url + "/v1",
            "CITEWELL_LLM_MODEL": "llama3",
            "CITEWELL_FUNCTION_CALLING": "native",
        }
        answer = json.loads(
            citewell(data, "ask", "What do ducks eat?", "--kb", "handbook", "--json", env=env)
        )
    assert answer["answer"] == llm.reply and answer["extractive"] is False
    assert answer["tool_calls"][0]["name"] == "query_knowledge_files"
    found = answer["tool_calls"][0]["sources"]
    assert found and {s["id"] for s in answer["sources"]} >= set(found)
    sent = [body for _, body in llm.requests]
    assert sent[0]["model"] == "llama3" and "<source" in sent[0]["messages"][0]["content"]
    assert sent[-1]["messages"][-1]["role"] == "tool"


def test_ask_checks_the_citations_of_what_the_model_wrote(tmp_path, shared_docs):
    """`citewell ask` attributes like the server: unsupported sentences are printed, and
    --json carries each sentence's attribution."""
    data = tmp_path / "data"
    citewell(data, "ingest", str(shared_docs / "wiki_duck.html"), "--kb", "handbook")
    llm = FakeLLMService()
    llm.reply = "The moon is made of green cheese and sings at night."
    with serve(llm) as url:
        env = {"CITEWELL_LLM_BASE_URL": url + "/v1", "CITEWELL_LLM_MODEL": "llama3"}
        text = citewell(data, "ask", "What do ducks eat?", "--kb", "handbook", env=env)
        answer = json.loads(
            citewell(data, "ask", "What do ducks eat?", "--kb", "handbook", "--json", env=env)
        )
    assert text.startswith("The sources found do not support an answer")
    assert "(no source supports: 'The moon is made of green cheese and sings at night.')" in text
    (sentence,) = answer["attribution"]["sentences"]
    assert sentence["status"] == "unsupported" and sentence["source"] is None
    assert answer["abstained"] == {"reason": "unsupported_answer", "withheld": llm.reply}


def test_import_loads_chunks_with_their_vectors(tmp_path, onnx_embedder):
    texts = ["Parental leave lasts sixteen weeks at full pay.", "Receipts must be attached."]
    vectors = onnx_embedder.embed(texts, "document")
    lines = [json.dumps({"file": "hr.md", "text": t, "vector": v.tolist()})
             for t, v in zip(texts, vectors, strict=True)]  # fmt: skip
    (tmp_path / "chunks.jsonl").write_text("\n".join(lines) + "\n")
    data = tmp_path / "data"
    report = json.loads(citewell(data, "import", str(tmp_path / "chunks.jsonl"), "--kb", "hr",
                                 "--json"))  # fmt: skip
    assert (report["files_imported"], report["chunks_stored"]) == (1, 2)
    found = citewell(data, "search", "how long is parental leave", "--kb", "hr")
    assert found.splitlines()[1].strip() == texts[0]
