"""S3-compatible buckets (AWS S3, MinIO, Cloudflare R2, Backblaze B2, Ceph, …) through boto3:
``s3://bucket/prefix`` listed with ListObjectsV2, each object's version its ETag, read with
GetObject. Options: ``endpoint`` (the service's URL, for anything but AWS) and ``region``.
Credentials: ``access_key_id`` and ``secret_access_key``. A connector made over the API
without credentials signs nothing (public buckets only): it never borrows the server's own
AWS identity; its endpoint's host passes the URL fetches' address guard.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from citewell.errors import FetchFailed, InvalidInput, MissingDependency, PayloadTooLarge
from citewell.fetch.guard import AddressGuard
from citewell.sources.connectors.entries import Listing, SyncEntry, SyncRequest
from citewell.sources.connectors.filters import PathFilter

MAX_ENTRIES = 1_000_000


def bucket_and_prefix(target: str) -> tuple[str, str]:
    parts = urlsplit(target)
    if parts.scheme.lower() != "s3" or not parts.netloc:
        raise InvalidInput(f"{target!r}: a bucket is named s3://BUCKET or s3://BUCKET/PREFIX.")
    prefix = parts.path.strip("/")
    return parts.netloc, f"{prefix}/" if prefix else ""


def _boto3() -> Any:
    try:
        import boto3  # type: ignore[import-untyped]
        import botocore  # type: ignore[import-untyped]
    except ImportError as exc:
        raise MissingDependency(
            "S3 connectors need boto3: pip install 'citewell[s3]' (./scripts/setup installs it)."
        ) from exc
    return boto3, botocore


class S3Source:
    def __init__(self, guard: AddressGuard, max_bytes: int) -> None:
        self.guard, self.max_bytes = guard, max_bytes

    def check(self, request: SyncRequest) -> None:
        bucket_and_prefix(request.target)
        endpoint = request.options.get("endpoint", "")
        if endpoint:
            parts = urlsplit(endpoint)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise InvalidInput(f"endpoint {endpoint!r}: give the service's http(s) URL.")
            if not request.trusted:
                self.guard.resolve(parts.hostname, parts.port or 443)
        _boto3()

    def listing(self, request: SyncRequest) -> Listing:
        self.check(request)
        bucket, prefix = bucket_and_prefix(request.target)
        options = request.options
        wanted = PathFilter(options.get("include", ""), options.get("exclude", ""))
        client = self._client(request)
        found = list(self._objects(client, bucket, prefix, wanted))
        entries = (
            SyncEntry(path, etag, self._reader(client, bucket, key)) for path, key, etag in found
        )
        return Listing(entries)

    def _client(self, request: SyncRequest) -> Any:
        boto3, botocore = _boto3()
        key_id = request.credentials.get("access_key_id", "")
        secret = request.credentials.get("secret_access_key", "")
        endpoint = request.options.get("endpoint", "") or None
        config: dict[str, Any] = {
            "connect_timeout": 10,
            "read_timeout": 30,
            "retries": {"mode": "standard", "max_attempts": 3},
        }
        if endpoint:
            config["s3"] = {"addressing_style": "path"}  # MinIO and most others
        session = boto3.session.Session(
            aws_access_key_id=key_id or None, aws_secret_access_key=secret or None
        )
        # Without keys: the local operator's own AWS identity if it has one; a connector
        # made over the API never borrows the server's, it reads public buckets only.
        if not key_id and (not request.trusted or session.get_credentials() is None):
            config["signature_version"] = botocore.UNSIGNED
        return session.client(
            "s3",
            endpoint_url=endpoint,
            region_name=request.options.get("region", "") or "us-east-1",
            config=botocore.config.Config(**config),
        )

    def _objects(
        self, client: Any, bucket: str, prefix: str, wanted: PathFilter
    ) -> Iterator[tuple[str, str, str]]:
        """(path under the prefix, object key, ETag) of every object taken."""
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        seen = 0
        try:
            for page in pages:
                for item in page.get("Contents", []):
                    seen += 1
                    if seen > MAX_ENTRIES:
                        raise FetchFailed(f"s3://{bucket}/{prefix} holds over {MAX_ENTRIES:,}.")
                    path = item["Key"][len(prefix) :]
                    if path and not path.endswith("/") and wanted.path(path):
                        yield path, item["Key"], str(item.get("ETag", "")).strip('"')
        except Exception as exc:  # botocore's errors: no credentials, no bucket, refused
            if isinstance(exc, FetchFailed):
                raise
            raise FetchFailed(f"Listing s3://{bucket}/{prefix} failed: {exc}") from exc

    def _reader(self, client: Any, bucket: str, key: str) -> Callable[[], bytes]:
        def read() -> bytes:
            try:
                body = client.get_object(Bucket=bucket, Key=key)["Body"]
                data = body.read(self.max_bytes + 1)
            except Exception as exc:  # botocore's errors
                raise FetchFailed(f"Reading s3://{bucket}/{key} failed: {exc}") from exc
            if len(data) > self.max_bytes:
                raise PayloadTooLarge(f"s3://{bucket}/{key} is larger than {self.max_bytes} bytes.")
            return bytes(data)

        return read
