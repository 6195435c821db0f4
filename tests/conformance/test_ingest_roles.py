"""Built-in sources and job handlers pass their roles' shipped suites (citewell.testing):
every source kind (the web ones against the fake site, search provider and YouTube), and the
ingest job handler on a fresh application."""

import os
import shutil
import subprocess
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from citewell.config import Settings
from citewell.engine.job_handlers import JOB_HANDLERS
from citewell.sources.connectors import Syncable, SyncRequest
from citewell.sources.registry import SOURCES, SourceContext, SourceRequest
from citewell.sources.web import WebReader
from citewell.testing.job_handlers import JobHandlerConformance
from citewell.testing.sources import SourceConformance, SyncableConformance
from tests.connector_helpers import S3_KEYS, moto_s3
from tests.fake_web import FakeSearchProviders, FakeWebSite, FakeYouTube, Hit, serve_web
from tests.webdav_server import serve_webdav

pytestmark = pytest.mark.conformance


@pytest.fixture(scope="module")
def sites(shared_docs):
    site, search, youtube = FakeWebSite(shared_docs), FakeSearchProviders([]), FakeYouTube()
    with serve_web(site) as site_url, serve_web(search) as search_url, serve_web(youtube) as yt:
        youtube.url = yt
        search.results = [
            Hit(f"{site_url}/article", "Mallards", "Mallards of the marsh"),
            Hit(f"{site_url}/missing", "Gone", "A page that is not there"),
            Hit(f"{site_url}/fixture/wiki_duck.html", "Duck", "Wikipedia on ducks"),
        ]
        yield SimpleNamespace(site=site_url, search=search_url + "/searxng/search", youtube=yt)


def git_repository(root: Path) -> Path:
    """A repository with two documents, made with the real git."""
    root.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }
    (root / "guide.md").write_text("# Guide\n\nExpenses are filed monthly.")
    (root / "notes").mkdir(exist_ok=True)
    (root / "notes" / "n.txt").write_text("The office closes at six.")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "one"]):
        subprocess.run(["git", "-C", str(root), *args], env=env, check=True, capture_output=True)
    return root


@pytest.fixture(scope="module")
def dav(tmp_path_factory):
    """A WebDAV server over a folder that each test copies its documents into."""
    root = tmp_path_factory.mktemp("dav")
    with serve_webdav(root) as url:
        yield SimpleNamespace(url=url, root=root)


@pytest.fixture(scope="module")
def bucket():
    """moto's S3 server (a wire-faithful fake of S3) with a bucket tests copy documents into."""
    with moto_s3("docs") as (endpoint, client):
        yield SimpleNamespace(endpoint=endpoint, client=client)


def requests_for(sites, folder, dav=None, bucket=None):
    (folder / "a.md").write_text("# Leave\n\nParental leave lasts sixteen weeks.")
    (folder / "sub").mkdir()
    (folder / "sub" / "b.txt").write_text("Remote work is allowed two days a week.")
    repository = git_repository(folder.parent / "repository")
    served = ""
    if dav is not None:  # the same documents, served over WebDAV
        served = f"{dav.url}/{uuid.uuid4().hex}"
        shutil.copytree(folder, dav.root / served.rsplit("/", 1)[-1])
    prefix = uuid.uuid4().hex
    if bucket is not None:  # and as objects of a bucket
        for path in folder.rglob("*"):
            if path.is_file():
                key = f"{prefix}/{path.relative_to(folder).as_posix()}"
                bucket.client.put_object(Bucket="docs", Key=key, Body=path.read_bytes())
    endpoint = {"endpoint": bucket.endpoint} if bucket is not None else {}
    return {
        "folder": SourceRequest(str(folder)),
        "git": SourceRequest(str(repository)),
        "webdav": SourceRequest(served),
        "s3": SourceRequest(f"s3://docs/{prefix}", options=endpoint),
        "website": SourceRequest(f"{sites.site}/article", options={"depth": "1"}),
        "upload": SourceRequest("handbook.txt", b"Parental leave lasts sixteen weeks."),
        "text": SourceRequest("note", b"Lunch is served from noon."),
        "path": SourceRequest(str(folder)),
        "url": SourceRequest(f"{sites.site}/article"),
        "youtube": SourceRequest("https://www.youtube.com/watch?v=dQw4w9WgXcQ"),
        "web-search": SourceRequest("mallards"),
    }


class TestBuiltInSources(SourceConformance):
    @pytest.fixture(params=list(SOURCES))
    def kind(self, request):
        return request.param

    @pytest.fixture
    def context(self, sites, tmp_path):
        settings = Settings.load(
            data_dir=tmp_path / "data",
            web_fetch_allowlist="127.0.0.1",
            web_fetch_timeout=3,
            web_search_engine="searxng",
            searxng_query_url=sites.search,
            youtube_url=sites.youtube,
        )
        web = WebReader(settings)
        yield SourceContext(settings, web)
        web.close()

    @pytest.fixture
    def source(self, kind, context):
        return SOURCES.get(kind)(context)

    @pytest.fixture
    def request_(self, kind, sites, dav, bucket, tmp_path, monkeypatch):
        folder = tmp_path / "docs"
        folder.mkdir()
        # `citewell ingest --source s3` signs with the operator's own AWS identity
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-key")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
        return requests_for(sites, folder, dav, bucket)[kind]


def test_every_built_in_source_has_a_request(sites, tmp_path):
    (tmp_path / "docs").mkdir()
    assert set(requests_for(sites, tmp_path / "docs")) == set(SOURCES)


class TestSyncableSources(SyncableConformance):
    @pytest.fixture(params=["folder", "git", "webdav", "s3", "website"])
    def kind(self, request):
        return request.param

    @pytest.fixture
    def syncable(self, kind, tmp_path):
        settings = Settings.load(data_dir=tmp_path / "data", web_fetch_allowlist="127.0.0.1")
        source = SOURCES.get(kind)(SourceContext(settings, WebReader(settings)))
        assert isinstance(source, Syncable)
        return source

    @pytest.fixture
    def sync_request(self, kind, sites, dav, bucket, tmp_path):
        folder = tmp_path / "docs"
        folder.mkdir()
        made = requests_for(sites, folder, dav, bucket)[kind]
        return SyncRequest(made.target, made.options, S3_KEYS, trusted=True)


def test_web_search_skips_pages_that_cannot_be_fetched(sites, tmp_path):
    settings = Settings.load(
        data_dir=tmp_path,
        web_fetch_allowlist="127.0.0.1",
        web_search_engine="searxng",
        searxng_query_url=sites.search,
    )
    web = WebReader(settings)
    items = list(SOURCES.get("web-search")(SourceContext(settings, web)).items(SourceRequest("x")))
    assert [i.url for i in items] == [
        f"{sites.site}/article",
        f"{sites.site}/fixture/wiki_duck.html",
    ]
    assert all(i.source == "web-search" for i in items)


class TestIngestJobHandler(JobHandlerConformance):
    @pytest.fixture
    def operation(self):
        return "ingest"

    @pytest.fixture
    def handler_factory(self):
        return JOB_HANDLERS.get("ingest")

    @pytest.fixture
    def enqueue(self):
        def enqueue(context, kb_id):
            job_id = context.jobs.new_id()
            context.storage.stage(job_id, b"# Leave\n\nParental leave lasts sixteen weeks.")
            (job,) = context.jobs.enqueue(kb_id, [(job_id, "leave.md", "leave.md")])
            return job

        return enqueue


def test_reembed_and_rechunk_need_their_parts(tmp_path):
    context = SimpleNamespace(spaces=None, rechunker=None)
    assert JOB_HANDLERS.get("reembed")(context) is None
    assert JOB_HANDLERS.get("rechunk")(context) is None
