"""Web search providers by registry name (``web_search_engine``): the built-ins register
here, plug-ins through the entry point group ``citewell.web_search``."""

from __future__ import annotations

from collections.abc import Callable

from citewell.config import Settings, WebSection
from citewell.errors import ConfigError
from citewell.plugins import Registry
from citewell.websearch.base import HttpSearch, WebSearch
from citewell.websearch.providers import (
    BingSearch,
    BraveSearch,
    ExaSearch,
    GooglePseSearch,
    SearxngSearch,
    SerperSearch,
    TavilySearch,
)

TIMEOUT = 15.0
WEB_SEARCHES: Registry[Callable[[WebSection], WebSearch]] = Registry("web_search")
WEB_SEARCH = WEB_SEARCHES  # its name before issue 66, kept for plug-ins


def _need(value: str, setting: str, engine: str) -> str:
    if not value:
        raise ConfigError(
            f"web_search_engine is {engine!r} but {setting} is empty; set "
            f"CITEWELL_{setting.upper()} (or pick another engine)."
        )
    return value


@WEB_SEARCHES.register("searxng")
def _searxng(section: WebSection) -> WebSearch:
    url = section.web_search_url or section.searxng_query_url
    return SearxngSearch("", _need(url, "searxng_query_url", "searxng"), TIMEOUT)


def _keyed(cls: type[HttpSearch], setting: str, engine: str) -> Callable[[WebSection], WebSearch]:
    def build(section: WebSection) -> WebSearch:
        key = _need(getattr(section, setting), setting, engine)
        return cls(key, section.web_search_url, TIMEOUT)

    return build


for _engine, _cls, _key in (
    ("brave", BraveSearch, "brave_search_api_key"),
    ("tavily", TavilySearch, "tavily_api_key"),
    ("serper", SerperSearch, "serper_api_key"),
):
    WEB_SEARCHES.add(_engine, _keyed(_cls, _key, _engine))


@WEB_SEARCHES.register("google_pse")
def _google_pse(section: WebSection) -> WebSearch:
    key = _need(section.google_pse_api_key, "google_pse_api_key", "google_pse")
    cx = _need(section.google_pse_engine_id, "google_pse_engine_id", "google_pse")
    return GooglePseSearch(key, cx, section.web_search_url, TIMEOUT)


WEB_SEARCHES.add("bing", _keyed(BingSearch, "bing_search_api_key", "bing"))
WEB_SEARCHES.add("exa", _keyed(ExaSearch, "exa_api_key", "exa"))
PROVIDERS = ("searxng", "brave", "tavily", "serper", "google_pse", "bing", "exa")  # built in


def build_web_search(settings: Settings) -> WebSearch:
    """The configured provider; ConfigError (saying which setting is missing) otherwise."""
    if settings.web.web_search_engine == "":
        raise ConfigError(
            "Web search is off: set web_search_engine (CITEWELL_WEB_SEARCH_ENGINE) to one of "
            f"{', '.join(WEB_SEARCHES.names())} and give that provider's key."
        )
    return WEB_SEARCHES.get(settings.web.web_search_engine)(settings.web)
