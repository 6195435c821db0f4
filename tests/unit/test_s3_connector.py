"""S3 connectors against moto's S3 server (a wire-faithful fake of S3, started here on
127.0.0.1: S3 itself cannot run in a test): objects under a prefix added, changed, renamed
and deleted; ETags say what changed, so an unchanged bucket reads nothing; over the API the
endpoint's host passes the URL guard, and a bad target or endpoint is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from citewell.app import Citewell
from citewell.errors import InvalidInput, UrlBlocked
from citewell.services.connectors import ConnectorSpec
from citewell.types import SearchMode
from tests.connector_helpers import S3_KEYS, api_connectors, kb_paths, moto_s3


@pytest.fixture
def s3() -> Iterator[tuple[str, Any]]:
    with moto_s3("team") as server:
        yield server


def put(client: Any, files: dict[str, str]) -> None:
    for key, text in files.items():
        client.put_object(Bucket="team", Key=key, Body=text.encode())


def found(app: Citewell, query: str) -> str:
    return " ".join(h.chunk.text for h in app.search(query, ["kb"], SearchMode.BM25, 5))


def test_a_bucket_prefix_syncs_adds_changes_renames_and_deletes(
    s3, tmp_path: Path, onnx_embedder
) -> None:
    endpoint, client = s3
    put(
        client,
        {
            "docs/handbook.md": "# Handbook\n\nNew staff get a Kestrel badge.",
            "docs/policies/travel.txt": "Trains are booked two weeks ahead.",
            "docs/policies/.draft.md": "hidden",
            "docs/.cache/x.md": "hidden folder",
            "other/outside.md": "Not under the prefix.",
        },
    )
    app, service = api_connectors(tmp_path, onnx_embedder, web_fetch_allowlist="127.0.0.1")
    spec = ConnectorSpec(
        "s3", "s3://team/docs", options={"endpoint": endpoint}, credentials=S3_KEYS, name="b"
    )
    made = service.create("kb", spec)
    first = app.connectors.run(made.id)
    assert (first.added, first.failed) == (2, 0), first.errors
    assert kb_paths(app) == ["handbook.md", "policies/travel.txt"]
    assert app.connectors.run(made.id).unchanged == 2

    put(client, {"docs/handbook.md": "# Handbook\n\nNew staff get an Osprey badge."})
    client.copy_object(
        Bucket="team", Key="docs/travel.txt", CopySource="team/docs/policies/travel.txt"
    )
    client.delete_object(Bucket="team", Key="docs/policies/travel.txt")
    put(client, {"docs/new.md": "Lunch is served on the roof."})
    changed = app.connectors.run(made.id)
    assert (changed.updated, changed.added, changed.deleted) == (1, 2, 1)
    assert changed.chunks_embedded > 0
    assert "Osprey" in found(app, "badge") and "Kestrel" not in found(app, "Kestrel")
    assert "roof" in found(app, "Lunch roof")
    assert not app.check(recall_samples=0).problems
    app.close()


def test_targets_and_endpoints_are_checked(s3, tmp_path: Path, onnx_embedder) -> None:
    endpoint, _ = s3
    app, service = api_connectors(tmp_path, onnx_embedder)  # no allow-list: loopback refused
    with pytest.raises(UrlBlocked):
        service.create("kb", ConnectorSpec("s3", "s3://team", options={"endpoint": endpoint}))
    with pytest.raises(UrlBlocked):
        service.create(
            "kb",
            ConnectorSpec("s3", "s3://t", options={"endpoint": "http://169.254.169.254"}, name="m"),
        )
    with pytest.raises(InvalidInput, match="s3://BUCKET"):
        service.create("kb", ConnectorSpec("s3", "https://team.example.org/", name="x"))
    with pytest.raises(InvalidInput, match="endpoint"):
        service.create("kb", ConnectorSpec("s3", "s3://t", options={"endpoint": "ftp://x"}))
    app.close()
