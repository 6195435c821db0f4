"""Every built-in file store passes the role's shipped suite: the data dir's directory, and
an S3 bucket on moto's server (a wire-faithful fake of S3, which cannot run here)."""

from __future__ import annotations

import uuid

import pytest

from citewell.blobs.directory import DirectoryBlobs
from citewell.blobs.s3 import S3Blobs, s3_client
from citewell.testing.file_stores import FileStoreConformance
from tests.connector_helpers import S3_KEYS, moto_s3

pytestmark = pytest.mark.conformance


class TestDirectoryFileStore(FileStoreConformance):
    @pytest.fixture
    def blobs(self, tmp_path):
        return DirectoryBlobs(tmp_path / "files")


@pytest.fixture(scope="module")
def bucket_endpoint():
    with moto_s3("files") as (endpoint, _client):
        yield endpoint


class TestS3FileStore(FileStoreConformance):
    @pytest.fixture
    def blobs(self, bucket_endpoint):
        client = s3_client(bucket_endpoint, "us-east-1", **S3_KEYS)
        store = S3Blobs(client, "files", f"deploy-{uuid.uuid4().hex[:8]}/citewell")
        store.check()
        return store
