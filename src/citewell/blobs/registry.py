"""Where the file store is chosen: the ``file_store`` setting → a factory (settings). Plug-ins:
the entry point group ``citewell.file_stores``. ``store_at`` opens a store named by a
location instead (a directory, or ``s3://bucket/prefix``), for copies between stores."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from citewell.blobs.base import BlobStore
from citewell.blobs.directory import DirectoryBlobs
from citewell.blobs.s3 import S3Blobs, s3_client
from citewell.config import Settings
from citewell.errors import ConfigError
from citewell.plugins import Registry

FILE_STORES: Registry[Callable[[Settings], BlobStore]] = Registry("file_stores")


@FILE_STORES.register("local")
def _local(settings: Settings) -> BlobStore:
    return DirectoryBlobs(settings.storage.data_dir / "files")


@FILE_STORES.register("s3")
def _s3(settings: Settings) -> BlobStore:
    files = settings.files
    store = S3Blobs(_client(settings), files.file_store_bucket, files.file_store_prefix)
    store.check()
    return store


def _client(settings: Settings) -> object:
    files = settings.files
    return s3_client(
        files.file_store_endpoint,
        files.file_store_region,
        files.file_store_access_key_id,
        files.file_store_secret_access_key,
        files.file_store_addressing_style,
    )


def open_file_store(settings: Settings) -> BlobStore:
    return FILE_STORES.get(settings.files.file_store)(settings)


def store_at(location: str, settings: Settings) -> BlobStore:
    """The store at ``location``: ``s3://bucket/prefix`` (with the file_store_* endpoint,
    region and keys), or a directory; "" the configured one."""
    if not location:
        return open_file_store(settings)
    parts = urlsplit(location)
    if parts.scheme == "s3":
        if not parts.netloc:
            raise ConfigError(f"{location!r}: a bucket is named s3://BUCKET or s3://BUCKET/PREFIX.")
        store = S3Blobs(_client(settings), parts.netloc, parts.path)
        store.check()
        return store
    if parts.scheme not in ("", "file"):
        raise ConfigError(f"{location!r}: give a directory or s3://BUCKET/PREFIX.")
    return DirectoryBlobs(Path(parts.path if parts.scheme else location).expanduser())
