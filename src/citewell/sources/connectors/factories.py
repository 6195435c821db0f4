"""Each connector kind built from the settings: the folders it may read, the URL fetches'
guard that remote hosts pass, and the size limits."""

from __future__ import annotations

from pathlib import Path

from citewell.config import Settings
from citewell.fetch.pages import UrlFetcher
from citewell.sources.connectors.folder import FolderSource
from citewell.sources.connectors.folder_grants import FolderGrants
from citewell.sources.connectors.git import GitSource
from citewell.sources.connectors.s3 import S3Source
from citewell.sources.connectors.webdav import WebDavSource
from citewell.sources.connectors.website import WebsiteSource
from citewell.sources.web import fetch_guard, fetch_limits


def folder_grants(settings: Settings) -> FolderGrants:
    """connector_allowed_paths, and the data dir (and a SQLite database elsewhere), which
    no connector reads."""
    protected = [settings.storage.data_dir]
    database = settings.storage.database_url
    if database.startswith("sqlite:///") and database[len("sqlite:///") :]:
        protected.append(Path(database[len("sqlite:///") :]))
    return FolderGrants.parse(settings.connectors.connector_allowed_paths, protected)


def folder_source(settings: Settings) -> FolderSource:
    return FolderSource(folder_grants(settings))


def git_source(settings: Settings) -> GitSource:
    """Repositories cloned under the data dir; remote hosts pass the URL fetches' guard."""
    cache = settings.storage.data_dir / "connectors" / "git"
    return GitSource(cache, folder_grants(settings), fetch_guard(settings))


def webdav_source(settings: Settings) -> WebDavSource:
    """WebDAV folders; hosts pass the URL fetches' guard, files at most max_upload_bytes."""
    return WebDavSource(fetch_guard(settings), settings.server.max_upload_bytes)


def s3_source(settings: Settings) -> S3Source:
    """S3-compatible buckets; endpoints pass the URL fetches' guard."""
    return S3Source(fetch_guard(settings), settings.server.max_upload_bytes)


def website_source(settings: Settings) -> WebsiteSource:
    """Websites, fetched by a client of the URL fetches (their guard and limits) per run."""
    guard = fetch_guard(settings)
    return WebsiteSource(lambda: UrlFetcher(guard, fetch_limits(settings)), guard)
