"""Where stored bytes live: originals, extracted texts, page maps, staged and held uploads.
A *file store* keeps blobs by name; the ``file_store`` setting picks one from the registry
(``local``: the data dir's ``files/``; ``s3``: an S3-compatible bucket)."""

from citewell.blobs.base import BlobInfo, BlobStore, check_name

__all__ = ["BlobInfo", "BlobStore", "check_name"]
