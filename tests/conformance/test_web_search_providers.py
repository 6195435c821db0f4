"""One suite for every web search provider, each against a fake server speaking its wire format
(tests/fake_web.py: FakeSearchProviders; no real provider can be reached from here)."""

import pytest

from citewell.config import Settings
from citewell.errors import ConfigError, WebSearchError
from citewell.testing.web_search import WebSearchConformance
from citewell.websearch import PROVIDERS, build_web_search
from tests.fake_web import FakeSearchProviders, Hit, serve_web

pytestmark = pytest.mark.conformance

HITS = [
    Hit(f"https://example.org/duck/{i}", f"Duck page {i}", f"About ducks, part {i}")
    for i in range(14)
]
KEY = FakeSearchProviders.KEY
# Per provider: its settings, and the path of its endpoint on the fake.
CONFIG = {
    "searxng": ({}, "/searxng/search"),
    "brave": ({"brave_search_api_key": KEY}, "/brave/res/v1/web/search"),
    "tavily": ({"tavily_api_key": KEY}, "/tavily/search"),
    "serper": ({"serper_api_key": KEY}, "/serper/search"),
    "google_pse": (
        {"google_pse_api_key": KEY, "google_pse_engine_id": "engine-1"},
        "/google/customsearch/v1",
    ),
    "bing": ({"bing_search_api_key": KEY}, "/bing/v7.0/search"),
    "exa": ({"exa_api_key": KEY}, "/exa/search"),
}


@pytest.fixture(scope="module")
def fake():
    service = FakeSearchProviders(HITS)
    with serve_web(service) as url:
        service.url = url
        yield service


def provider(fake, engine, **overrides):
    extra, path = CONFIG[engine]
    settings = Settings.load(
        web_search_engine=engine, web_search_url=fake.url + path, **{**extra, **overrides}
    )
    return build_web_search(settings)


def test_every_provider_has_a_case():
    assert set(CONFIG) == set(PROVIDERS) and len(PROVIDERS) >= 4


@pytest.mark.parametrize("engine", PROVIDERS)
def test_results_come_back_as_links_titles_and_snippets(fake, engine):
    results = provider(fake, engine).search("what do ducks eat", 3)
    assert [r.url for r in results] == [h.url for h in HITS[:3]]
    assert results[0].title == "Duck page 0"
    assert results[0].snippet == "About ducks, part 0"
    name, request = fake.requests[-1]
    assert name == CONFIG[engine][1].split("/")[1]
    sent = request.json() if request.method == "POST" else request.query
    assert "what do ducks eat" in str(sent)


@pytest.mark.parametrize("engine", [e for e in PROVIDERS if e != "searxng"])
def test_a_wrong_key_is_an_error_that_names_the_setting(fake, engine):
    key_setting = next(k for k in CONFIG[engine][0] if k.endswith("api_key"))
    with pytest.raises(WebSearchError, match="key|answered"):
        provider(fake, engine, **{key_setting: "wrong"}).search("ducks", 3)


@pytest.mark.parametrize("engine", [e for e in PROVIDERS if e != "searxng"])
def test_a_missing_key_is_a_config_error(fake, engine):
    key_setting = next(k for k in CONFIG[engine][0] if k.endswith("api_key"))
    with pytest.raises(ConfigError, match=key_setting):
        provider(fake, engine, **{key_setting: ""})


def test_google_pse_pages_past_ten(fake):
    results = provider(fake, "google_pse").search("ducks", 14)
    assert [r.url for r in results] == [h.url for h in HITS]
    starts = [r.query["start"][0] for n, r in fake.requests[-2:] if n == "google"]
    assert starts == ["1", "11"]


def test_an_unreachable_provider_says_where_it_looked():
    settings = Settings.load(
        web_search_engine="searxng", searxng_query_url="http://127.0.0.1:9/search"
    )
    with pytest.raises(WebSearchError, match="could not be reached"):
        build_web_search(settings).search("ducks", 3)


def test_web_search_off_says_how_to_turn_it_on():
    with pytest.raises(ConfigError, match="web_search_engine"):
        build_web_search(Settings.load())


def test_a_provider_failure_is_an_upstream_error(fake):
    fake.failing = {"broken query"}
    with pytest.raises(WebSearchError, match="500"):
        provider(fake, "searxng").search("broken query", 3)


class TestBuiltInProviders(WebSearchConformance):
    """Every built-in provider passes the role's shipped suite, against the fake."""

    @pytest.fixture(params=PROVIDERS)
    def web_search(self, request, fake):
        return provider(fake, request.param)
