"""Stored files in an S3-compatible bucket (moto's server: a wire-faithful fake of S3, which
cannot run here): an embedded data dir moves into PostgreSQL and a bucket in one command
and answers the same from a fresh data dir; a bucket is backed up to a directory and put
back after its objects are lost; `citewell check` sees what is missing and makes lost texts
again; a wrong bucket stops start-up with what to set."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from citewell.app import Citewell
from citewell.cli import main
from citewell.config import Settings
from citewell.errors import StoreError
from citewell.types import SearchMode
from tests.connector_helpers import S3_KEYS, moto_s3

pytestmark = pytest.mark.e2e

DOCS = [
    ("leave.md", "# Leave\n\nStaff get 25 days of paid leave a year, plus public holidays."),
    ("remote.md", "# Remote work\n\nEveryone may work from home two days a week."),
    ("bikes.md", "# Bicycles\n\nBike racks are behind the east entrance, under the roof."),
]


@pytest.fixture(scope="module")
def bucket():
    with moto_s3("citewell") as (endpoint, client):
        yield endpoint, client


def _s3_env(endpoint: str) -> dict[str, str]:
    """How an operator points every command at the service (the bucket is named apart)."""
    return {
        "CITEWELL_FILE_STORE_ENDPOINT": endpoint,
        "CITEWELL_FILE_STORE_REGION": "us-east-1",
        "CITEWELL_FILE_STORE_ACCESS_KEY_ID": S3_KEYS["access_key_id"],
        "CITEWELL_FILE_STORE_SECRET_ACCESS_KEY": S3_KEYS["secret_access_key"],
    }


def _in_bucket(endpoint: str, prefix: str, **more: str) -> dict[str, str]:
    return {
        "file_store": "s3",
        "file_store_bucket": "citewell",
        "file_store_prefix": prefix,
        "file_store_endpoint": endpoint,
        "file_store_region": "us-east-1",
        **S3_KEYS_AS_SETTINGS,
        **more,
    }


S3_KEYS_AS_SETTINGS = {
    "file_store_access_key_id": S3_KEYS["access_key_id"],
    "file_store_secret_access_key": S3_KEYS["secret_access_key"],
}


def _keys(client, prefix: str) -> set[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket="citewell", Prefix=prefix)
    return {item["Key"] for page in pages for item in page.get("Contents", [])}


def _answers(app: Citewell) -> list[str]:
    return [
        hit.chunk.id
        for mode in (SearchMode.HYBRID, SearchMode.BM25, SearchMode.VECTOR)
        for hit in app.search("days of leave at home", ["handbook"], mode, k=2)
    ]


def test_a_data_dir_moves_into_postgresql_and_a_bucket(tmp_path, postgres, bucket, onnx_embedder):
    endpoint, client = bucket
    url, data = postgres.create_database(), tmp_path / "data"
    before = Citewell.from_settings(Settings.load(data_dir=data), embedder=onnx_embedder)
    before.ingest_texts(DOCS, before.create_kb("handbook").id)
    expected, texts = _answers(before), {f.id: before.storage.text(f.id) for f in before.files()}
    before.close()

    moved = CliRunner().invoke(
        main,
        ["--data-dir", str(data), "migrate", "--to", url, "--files-to", "s3://citewell/prod"],
        env=_s3_env(endpoint),
    )
    assert moved.exit_code == 0, moved.output
    for line in (f"CITEWELL_DATABASE_URL={url}", "CITEWELL_FILE_STORE=s3"):
        assert line in moved.output
    assert "CITEWELL_FILE_STORE_BUCKET=citewell" in moved.output
    assert "CITEWELL_FILE_STORE_PREFIX=prod" in moved.output
    # A text each, which is also its original (Markdown: the text is the bytes, stored
    # once); no page map: these files have no pages or headings kept.
    assert len(_keys(client, "prod/")) == len(DOCS)

    # Another host: an empty data dir, the database and the bucket.
    settings = Settings.load(
        data_dir=tmp_path / "elsewhere", database_url=url, **_in_bucket(endpoint, "prod")
    )
    after = Citewell.from_settings(settings, embedder=onnx_embedder)
    try:
        assert _answers(after) == expected
        assert {f.id: after.storage.text(f.id) for f in after.files()} == texts
        assert after.check().problems == 0
        after.ingest_texts([("parking.md", "Parking is free after six.")], "handbook")
        assert len(_keys(client, "prod/")) == len(DOCS) + 1
        parking = next(f for f in after.files("handbook") if f.name == "parking.md")
        after.delete_file(parking.id)  # its original, text and page map go with it
        assert not any(parking.id in key for key in _keys(client, "prod/"))
    finally:
        after.close()
    assert not (tmp_path / "elsewhere" / "files").exists() or not any(
        (tmp_path / "elsewhere" / "files").iterdir()
    )


def test_a_bucket_backed_up_and_restored_after_its_objects_are_lost(
    tmp_path, bucket, onnx_embedder
):
    endpoint, client = bucket
    settings = Settings.load(data_dir=tmp_path / "data", **_in_bucket(endpoint, "team"))
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    runner, env = CliRunner(), {"CITEWELL_FILE_STORE": "s3", **_s3_env(endpoint)}
    env |= {"CITEWELL_FILE_STORE_BUCKET": "citewell", "CITEWELL_FILE_STORE_PREFIX": "team"}
    args = ["--data-dir", str(tmp_path / "data")]
    try:
        app.ingest_texts(DOCS, app.create_kb("handbook").id)
        expected = _answers(app)
        backup = tmp_path / "backup"
        saved = runner.invoke(main, [*args, "files", "copy", "--to", str(backup)], env=env)
        assert saved.exit_code == 0, saved.output
        assert len(list(backup.glob("*.txt"))) == len(DOCS)  # each its own original too
        again = runner.invoke(main, [*args, "files", "copy", "--to", str(backup)], env=env)
        assert "Copied 0 stored blobs" in again.output  # nothing new: nothing copied

        for key in _keys(client, "team/"):  # the bucket loses everything
            client.delete_object(Bucket="citewell", Key=key)
        lost = app.check()
        assert set(lost.missing_stored) == {f.id for f in app.files()}
        assert all(kinds == ["original", "txt"] for kinds in lost.missing_stored.values())
        listed = runner.invoke(main, [*args, "check"], env=env)
        assert listed.exit_code == 1 and "put the file store back from a backup" in listed.output

        put_back = runner.invoke(main, [*args, "files", "copy", "--from", str(backup)], env=env)
        assert put_back.exit_code == 0, put_back.output
        assert app.check().problems == 0 and _answers(app) == expected

        page = "<html><body><p>Parking is free after six.</p></body></html>"
        app.ingest_texts([("parking.html", page)], "handbook")  # its text is not its bytes
        record = next(f for f in app.files() if f.name == "parking.html")
        text = app.storage.text(record.id)
        assert not record.text_is_original and text and "<p>" not in text
        client.delete_object(Bucket="citewell", Key=f"team/{record.id}.txt")
        assert app.check().missing_stored == {record.id: ["txt"]}
        repaired = app.check(repair=True)
        assert any(record.id in line for line in repaired.repairs)
        assert app.storage.text(record.id) == text and app.check().problems == 0
    finally:
        app.close()


def test_a_wrong_bucket_stops_start_up_saying_what_to_set(tmp_path, bucket):
    endpoint, _client = bucket
    settings = Settings.load(
        data_dir=tmp_path / "data", **_in_bucket(endpoint, "", file_store_bucket="no-such")
    )
    with pytest.raises(StoreError, match="file_store_bucket"):
        Citewell.from_settings(settings)
    same = CliRunner().invoke(
        main, ["--data-dir", str(tmp_path), "files", "copy", "--to", str(tmp_path / "files")]
    )
    assert same.exit_code != 0 and "Both sides" in same.output
