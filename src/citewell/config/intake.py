"""Settings of reading documents in: text extraction, web pages, web search, YouTube."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import field_validator

from citewell.config.fields import Section, backend, setting


class ExtractionSection(Section):
    """Reading text out of files: parsers, OCR and their limits."""

    ocr_engine: Annotated[str, backend("ocr", "auto", "tesseract", "rapidocr", "off")] = setting(
        "auto",
        "OCR for scanned PDF pages and images. 'tesseract': the tesseract binary "
        "(apt-get install tesseract-ocr); 'rapidocr': pip install 'citewell[ocr]' (models "
        "inside the package); 'auto': tesseract if installed, else rapidocr if installed, "
        "else scans are refused with a message saying how to enable OCR.",
    )

    ocr_languages: str = setting(
        "eng", "Tesseract language codes joined by '+', e.g. 'eng+deu' (packs must be installed)."
    )

    ocr_dpi: int = setting(200, "Resolution scanned PDF pages are rendered at for OCR.")

    extract_timeout: float = setting(
        300.0,
        "Seconds one file's text extraction may take before it is stopped and the file "
        "refused (OCR of a long scan is the slow case).",
    )

    extract_memory_mb: int = setting(
        4096,
        "Address-space limit (MiB) of the process that extracts text; a file that needs more "
        "is refused. 0: no limit.",
    )

    extract_workers: int = setting(
        2,
        "Files parsed at once during ingestion (each in its own worker process when "
        "extract_isolated), while the embedder works on files already parsed: a slow file "
        "holds up one worker, not the others or the embedding.",
    )

    extract_isolated: bool = setting(
        True,
        "Extract text in a separate worker process, so that the time and memory limits can "
        "be enforced and a crashing parser cannot take the server down.",
    )

    render_workers: int = setting(
        3,
        "Worker processes that draw the viewer's page images, apart from extraction (a slow "
        "page never holds up ingestion). A user's pages are drawn one at a time, so the "
        "others are free for other users (and a spare is warm when one was stopped).",
        ge=1,
    )

    render_timeout: float = setting(
        10.0,
        "Seconds one page image may take to draw before it is stopped and refused (the "
        "viewer then shows the extracted text).",
        gt=0,
    )

    render_per_user: int = setting(
        2,
        "Page images one user may have being drawn or waiting at once; more answer 429.",
        ge=1,
    )

    max_document_chars: int = setting(
        20_000_000,
        "Largest extracted text accepted from one file, in characters (~20 MB); bigger files "
        "are refused: split them or raise this.",
    )


class WebSection(Section):
    """Fetching web pages, web search providers and YouTube transcripts."""

    web_fetch_timeout: float = setting(
        20.0,
        "Seconds a web page (or video transcript) fetch may take in all, connecting included.",
        "WEB_LOADER_TIMEOUT",
    )

    web_fetch_max_bytes: int = setting(
        20 * 1024 * 1024, "Largest web page or remote file fetched, in bytes."
    )

    web_fetch_max_redirects: int = setting(5, "Redirects followed when fetching a URL.")

    web_fetch_allowlist: str = setting(
        "",
        "Comma-separated hosts, IP addresses or networks (CIDR) that URL fetches may reach "
        "although they are private, loopback or link-local, e.g. 'wiki.internal,10.0.0.0/8'. "
        "Everything non-public is refused otherwise (SSRF guard).",
    )

    web_fetch_allow_private: bool = setting(
        False,
        "Let URL fetches reach every private, loopback and link-local address. Only for a "
        "server that nobody untrusted can use; prefer web_fetch_allowlist.",
        "ENABLE_RAG_LOCAL_WEB_FETCH",
    )

    web_fetch_user_agent: str = setting(
        "Mozilla/5.0 (compatible; Citewell; +https://github.com/citewell/citewell)",
        "User-Agent sent when fetching pages.",
        "USER_AGENT",
    )

    web_search_engine: Annotated[
        str,
        backend(
            "web_search", "", "searxng", "brave", "tavily", "serper", "google_pse", "bing", "exa"
        ),
    ] = setting(
        "",
        "Web search provider; empty turns web search off.",
        "WEB_SEARCH_ENGINE",
        "RAG_WEB_SEARCH_ENGINE",
    )

    web_search_result_count: int = setting(
        3,
        "Pages fetched per search query.",
        "WEB_SEARCH_RESULT_COUNT",
        "RAG_WEB_SEARCH_RESULT_COUNT",
    )

    web_search_concurrent_requests: int = setting(
        8,
        "Result pages fetched at the same time.",
        "WEB_SEARCH_CONCURRENT_REQUESTS",
        "RAG_WEB_SEARCH_CONCURRENT_REQUESTS",
    )

    web_search_domain_filter: str = setting(
        "",
        "Comma-separated domains: when set, only results from these (and their subdomains) "
        "are fetched.",
        "WEB_SEARCH_DOMAIN_FILTER_LIST",
        "RAG_WEB_SEARCH_DOMAIN_FILTER_LIST",
    )

    web_search_url: str = setting(
        "",
        "The provider's API endpoint, for a proxy or a self-hosted compatible service. Empty: "
        "the provider's public endpoint (for SearXNG, searxng_query_url).",
    )

    searxng_query_url: str = setting(
        "",
        "SearXNG search URL, e.g. 'http://searxng:8080/search' (its JSON format must be enabled).",
        "SEARXNG_QUERY_URL",
    )

    brave_search_api_key: str = setting("", "Brave Search API key.", "BRAVE_SEARCH_API_KEY")

    tavily_api_key: str = setting("", "Tavily API key.", "TAVILY_API_KEY")

    serper_api_key: str = setting("", "Serper API key.", "SERPER_API_KEY")

    google_pse_api_key: str = setting(
        "", "Google Programmable Search API key.", "GOOGLE_PSE_API_KEY"
    )

    google_pse_engine_id: str = setting(
        "", "Google Programmable Search engine id (cx).", "GOOGLE_PSE_ENGINE_ID"
    )

    bing_search_api_key: str = setting(
        "", "Bing Web Search v7 subscription key.", "BING_SEARCH_V7_SUBSCRIPTION_KEY"
    )

    exa_api_key: str = setting("", "Exa API key.", "EXA_API_KEY")

    youtube_languages: str = setting(
        "en",
        "Preferred transcript languages, comma-separated, best first; when the video has "
        "none of them, its first transcript is used.",
        "YOUTUBE_LOADER_LANGUAGE",
    )

    youtube_url: str = setting(
        "https://www.youtube.com", "Where YouTube's pages and player API are fetched from."
    )

    @field_validator("web_fetch_timeout", mode="before")
    @classmethod
    def _owui_empty_timeout(cls, value: Any) -> Any:
        # Open WebUI leaves WEB_LOADER_TIMEOUT empty to mean "the default".
        return 20.0 if value == "" else value


class ConnectorSection(Section):
    """Connectors: folders, git repositories and other sources kept in sync with a KB."""

    connector_allowed_paths: str = setting(
        "",
        "Folders on the server's disk that connectors made over the API may read (folder "
        "connectors, and git repositories given as a local path), and for whom: comma-"
        "separated entries PATH=WHO, where WHO is '*' (every user) or user names and @group "
        "names separated by '|', e.g. '/srv/sales=@sales|alice, /srv/public=*'. A bare PATH "
        "is for admins only. A connector reads with its owner's grants, checked at every "
        "sync. Empty: none; only the local operator (the CLI without a server) syncs other "
        "folders. No connector reads a folder holding or inside the data dir, whatever the "
        "grants; symlinks that lead out of a folder are not followed.",
    )

    connector_interval: float = setting(
        3600.0,
        "Seconds between a connector's full syncs unless it names its own interval. A folder "
        "connector that watches for changes still rescans this often (a watch can miss "
        "events).",
        gt=0,
    )

    connector_watch: bool = setting(
        True,
        "Watch the folders of folder connectors for changes (in the process that runs jobs) "
        "and sync a folder within seconds of a change. The full rescan every interval runs "
        "anyway.",
    )

    connector_min_interval: float = setting(
        60.0,
        "The shortest interval a connector may ask for (each sync lists its whole source).",
        gt=0,
    )

    connector_secret_key: str = setting(
        "",
        "Key that encrypts connector credentials at rest (any string; keep it secret and the "
        "same on every process). Empty: the server makes one and keeps it in its database.",
    )
