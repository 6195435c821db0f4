"""The ``files`` section: where stored files live: the data dir or a bucket."""

from __future__ import annotations

from typing import Annotated, Literal

from citewell.config.fields import Section, backend, setting


class FileStoreSection(Section):
    """Where uploaded originals, extracted texts, page maps and staged uploads are kept."""

    file_store: Annotated[str, backend("file_stores", "local", "s3")] = setting(
        "local",
        "Where stored files live: 'local', the data dir's files/ directory (several hosts "
        "then need it on a shared mount), or 's3', an S3-compatible bucket (AWS S3, MinIO, "
        "R2, …; file_store_bucket and the settings below), which API processes and workers "
        "on any hosts share without a mount. 'citewell files copy' moves stored files from "
        "one to the other.",
        "STORAGE_PROVIDER",
    )

    file_store_bucket: str = setting(
        "", "Bucket of stored files when file_store = s3.", "S3_BUCKET_NAME"
    )

    file_store_prefix: str = setting(
        "",
        "Key prefix of stored files in the bucket (e.g. 'citewell/prod'), so one bucket can "
        "serve several deployments.",
        "S3_KEY_PREFIX",
    )

    file_store_endpoint: str = setting(
        "",
        "URL of the S3-compatible service (e.g. http://minio:9000); empty for AWS S3.",
        "S3_ENDPOINT_URL",
    )

    file_store_region: str = setting(
        "", "Region of the bucket; empty: boto3's default.", "S3_REGION_NAME"
    )

    file_store_access_key_id: str = setting(
        "",
        "Access key id for the bucket. Empty: boto3's own chain (AWS_ACCESS_KEY_ID, "
        "~/.aws, an instance or pod role).",
        "S3_ACCESS_KEY_ID",
    )

    file_store_secret_access_key: str = setting(
        "", "Secret of file_store_access_key_id.", "S3_SECRET_ACCESS_KEY"
    )

    file_store_addressing_style: Literal["auto", "path", "virtual"] = setting(
        "auto",
        "How bucket URLs are formed: 'path' (endpoint/bucket/key, what MinIO and most "
        "self-hosted services want), 'virtual' (bucket.endpoint/key), 'auto': path with a "
        "file_store_endpoint, else boto3's choice.",
        "S3_ADDRESSING_STYLE",
    )
