"""Blobs as objects in an S3-compatible bucket (AWS S3, MinIO, Cloudflare R2, Ceph, …)
under a key prefix, through boto3. A PUT replaces an object whole, so writes are atomic as
the role asks. Every process that names the same bucket and prefix sees the same blobs:
API processes and workers on hosts without a shared mount."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from citewell.blobs.base import BlobInfo, check_name
from citewell.errors import MissingDependency, StoreError

MISSING = {"NoSuchKey", "404", "NotFound"}


def _boto3() -> tuple[Any, Any]:
    try:
        import boto3  # type: ignore[import-untyped]
        import botocore  # type: ignore[import-untyped]
    except ImportError as exc:
        raise MissingDependency(
            "file_store = s3 needs boto3: pip install 'citewell[s3]' (./scripts/setup installs it)."
        ) from exc
    return boto3, botocore


def s3_client(
    endpoint: str = "",
    region: str = "",
    access_key_id: str = "",
    secret_access_key: str = "",
    addressing_style: str = "auto",
) -> Any:
    """A boto3 S3 client. Without keys boto3's own chain applies (its environment variables,
    ~/.aws, an instance or pod role)."""
    boto3, botocore = _boto3()
    style = addressing_style if addressing_style != "auto" else ("path" if endpoint else "auto")
    config = botocore.config.Config(
        connect_timeout=10,
        read_timeout=60,
        retries={"mode": "standard", "max_attempts": 5},
        s3={"addressing_style": style},
        max_pool_connections=32,
    )
    return boto3.client(
        "s3",
        endpoint_url=endpoint or None,
        region_name=region or None,
        aws_access_key_id=access_key_id or None,
        aws_secret_access_key=secret_access_key or None,
        config=config,
    )


class S3Blobs:
    def __init__(self, client: Any, bucket: str, prefix: str = "") -> None:
        if not bucket:
            raise StoreError(
                "file_store = s3 needs a bucket: set file_store_bucket (S3_BUCKET_NAME)."
            )
        self.client, self.bucket = client, bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""

    @property
    def where(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def _key(self, name: str) -> str:
        return self.prefix + check_name(name)

    def write(self, name: str, data: bytes) -> None:
        self._call("write", name, self.client.put_object, Body=data)

    def read(self, name: str) -> bytes | None:
        found = self._call("read", name, self.client.get_object)
        return None if found is None else bytes(found["Body"].read())

    def exists(self, name: str) -> bool:
        return self._call("look for", name, self.client.head_object) is not None

    def remove(self, name: str) -> None:
        self._call("remove", name, self.client.delete_object)

    def listing(self, folder: str = "") -> Iterator[BlobInfo]:
        start = self.prefix + (check_name(folder) + "/" if folder else "")
        pages = self.client.get_paginator("list_objects_v2")
        try:
            for page in pages.paginate(Bucket=self.bucket, Prefix=start, Delimiter="/"):
                for item in page.get("Contents", []):
                    name = item["Key"][len(start) :]
                    if name and "/" not in name:
                        modified = item["LastModified"].timestamp()
                        yield BlobInfo(name, int(item["Size"]), modified)
        except Exception as exc:  # botocore's errors: the store is unreachable or refuses
            raise self._failure("list", start, exc) from exc

    def check(self) -> None:
        """Fail now, with what to do, when the bucket cannot be reached."""
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except Exception as exc:
            raise self._failure("reach", "", exc) from exc

    def _call(self, verb: str, name: str, method: Any, **extra: Any) -> Any:
        key = self._key(name)
        try:
            return method(Bucket=self.bucket, Key=key, **extra)
        except Exception as exc:
            if _error_code(exc) in MISSING:
                return None
            raise self._failure(verb, key, exc) from exc

    def _failure(self, verb: str, key: str, exc: Exception) -> StoreError:
        code = _error_code(exc) or type(exc).__name__
        return StoreError(
            f"Could not {verb} s3://{self.bucket}/{key} ({code}: {exc}). Check "
            "file_store_bucket, file_store_endpoint, file_store_region and the keys "
            "(file_store_access_key_id, file_store_secret_access_key)."
        )


def _error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""
