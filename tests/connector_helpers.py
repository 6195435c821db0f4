"""What the connector tests share: a Citewell whose connectors are made as over the API (not
the local operator: allow-lists and the address guard apply), and moto's S3 server (a
wire-faithful fake of S3, which cannot run here) on 127.0.0.1."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from citewell.app import Citewell
from citewell.auth.access import Access
from citewell.config import Settings
from citewell.engine.scoped import Scoped
from citewell.services.connectors import ConnectorService

S3_KEYS = {"access_key_id": "test-key", "secret_access_key": "test-secret"}


def api_connectors(
    tmp_path: Path, embedder: Any, **settings: str
) -> tuple[Citewell, ConnectorService]:
    """A Citewell with a KB "kb", and its connectors as an API caller makes them."""
    app = Citewell.from_settings(
        Settings.load(data_dir=tmp_path / "data", **settings), embedder=embedder
    )
    service = ConnectorService(Scoped(app, Access.everything()))  # not local
    service.ensure_kb("kb")
    return app, service


def kb_paths(app: Citewell) -> list[str]:
    return sorted(link.path for link in app.catalog.links(kb_ids=[app.kb_id("kb")]))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def moto_s3(bucket: str) -> Iterator[tuple[str, Any]]:
    """moto's S3 server with ``bucket`` made: (its endpoint, a boto3 client)."""
    import boto3
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=S3_KEYS["access_key_id"],
        aws_secret_access_key=S3_KEYS["secret_access_key"],
    )
    client.create_bucket(Bucket=bucket)
    try:
        yield endpoint, client
    finally:
        server.stop()
