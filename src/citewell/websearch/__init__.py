"""Web search providers, chosen by ``web_search_engine``."""

from __future__ import annotations

from citewell.config import Settings
from citewell.errors import ConfigError
from citewell.websearch.base import HttpSearch, WebResult, WebSearch
from citewell.websearch.providers import (
    BingSearch,
    BraveSearch,
    ExaSearch,
    GooglePseSearch,
    SearxngSearch,
    SerperSearch,
    TavilySearch,
)

__all__ = ["PROVIDERS", "WebResult", "WebSearch", "build_web_search"]

PROVIDERS = ("searxng", "brave", "tavily", "serper", "google_pse", "bing", "exa")
TIMEOUT = 15.0


def _need(value: str, setting: str, engine: str) -> str:
    if not value:
        raise ConfigError(
            f"web_search_engine is {engine!r} but {setting} is empty; set "
            f"CITEWELL_{setting.upper()} (or pick another engine)."
        )
    return value


def build_web_search(settings: Settings) -> HttpSearch:
    """The configured provider; ConfigError (saying which setting is missing) otherwise."""
    engine, url = settings.web_search_engine, settings.web_search_url
    if engine == "":
        raise ConfigError(
            "Web search is off: set web_search_engine (CITEWELL_WEB_SEARCH_ENGINE) to one of "
            f"{', '.join(PROVIDERS)} and give that provider's key."
        )
    if engine == "searxng":
        endpoint = _need(url or settings.searxng_query_url, "searxng_query_url", engine)
        return SearxngSearch("", endpoint, TIMEOUT)
    if engine == "google_pse":
        key = _need(settings.google_pse_api_key, "google_pse_api_key", engine)
        cx = _need(settings.google_pse_engine_id, "google_pse_engine_id", engine)
        return GooglePseSearch(key, cx, url, TIMEOUT)
    keyed: dict[str, tuple[type[HttpSearch], str]] = {
        "brave": (BraveSearch, "brave_search_api_key"),
        "tavily": (TavilySearch, "tavily_api_key"),
        "serper": (SerperSearch, "serper_api_key"),
        "bing": (BingSearch, "bing_search_api_key"),
        "exa": (ExaSearch, "exa_api_key"),
    }
    cls, setting = keyed[engine]
    return cls(_need(getattr(settings, setting), setting, engine), url, TIMEOUT)
