"""The one error hierarchy. Each error carries an HTTP status and a stable code.

Messages say what to do about the problem, not only what went wrong.
"""

from __future__ import annotations


class CitewellError(Exception):
    """Base of every error Citewell raises on purpose."""

    status: int = 500
    code: str = "internal_error"

    def __init__(self, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = headers or {}  # sent with the HTTP error (Retry-After, WWW-Authenticate)


class ConfigError(CitewellError):
    status = 400
    code = "config_invalid"


class NotFoundError(CitewellError):
    status = 404
    code = "not_found"


class KnowledgeBaseNotFound(NotFoundError):
    code = "knowledge_base_not_found"


class FileNotFound(NotFoundError):
    code = "file_not_found"


class FolderNotFound(NotFoundError):
    code = "folder_not_found"


class Unauthenticated(CitewellError):
    status = 401
    code = "unauthenticated"


class Forbidden(CitewellError):
    status = 403
    code = "forbidden"


class RateLimited(CitewellError):
    status = 429
    code = "rate_limited"


class Conflict(CitewellError):
    status = 409
    code = "conflict"


class InvalidInput(CitewellError):
    status = 400
    code = "invalid_input"


class ContextTooLong(InvalidInput):
    """The conversation does not fit the LLM's context window (OpenAI's code for it)."""

    code = "context_length_exceeded"


class AmbiguousName(Conflict):
    """A name matches several knowledge bases the caller may read."""

    code = "ambiguous_name"


class NameTaken(Conflict):
    code = "name_taken"


class PathTaken(Conflict):
    """A file or folder of the KB is there already."""

    code = "path_taken"


class PayloadTooLarge(CitewellError):
    status = 413
    code = "payload_too_large"


class UnsupportedFormat(CitewellError):
    status = 415
    code = "unsupported_format"


class ParseError(CitewellError):
    status = 422
    code = "parse_failed"


class UrlBlocked(CitewellError):
    """A URL points at an address Citewell refuses to fetch (SSRF guard)."""

    status = 403
    code = "url_blocked"


class NoTranscript(CitewellError):
    status = 422
    code = "no_transcript"


class MissingDependency(CitewellError):
    status = 500
    code = "missing_dependency"


class UpstreamError(CitewellError):
    """A remote service (embeddings, reranker, LLM) failed or answered badly."""

    status = 502
    code = "upstream_failed"


class EmbeddingError(UpstreamError):
    code = "embedding_failed"


class RerankError(UpstreamError):
    code = "rerank_failed"


class FetchFailed(UpstreamError):
    """A web page, video or search provider could not be fetched."""

    code = "fetch_failed"


class FetchTimeout(FetchFailed):
    status = 504
    code = "fetch_timeout"


class WebSearchError(UpstreamError):
    code = "web_search_failed"


class ModelNotFound(NotFoundError):
    code = "model_not_found"


class LLMError(UpstreamError):
    code = "llm_failed"


class StoreError(CitewellError):
    status = 500
    code = "store_failed"


class ConnectorNotFound(NotFoundError):
    code = "connector_not_found"
