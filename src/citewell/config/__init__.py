"""Settings: read once at start-up, in sections, then passed down. Components never read the
environment; each receives the sections it needs.

Every setting is set by ``CITEWELL_<NAME>``, by Open WebUI's name where it has one (so an
operator's settings carry over), by a TOML config file, or by keyword arguments.
Precedence: keyword arguments > environment > config file > defaults. What a request, a
model preset, a knowledge base or an admin at run time may override is each field's
``Scopes``; ``config.resolve`` computes the value in force for one request.
"""

from citewell.config.access import AccessSection
from citewell.config.answering import AnsweringSection
from citewell.config.chunking import ChunkingSection
from citewell.config.connectors import ConnectorSection
from citewell.config.embedding import ONNX_MODEL_NAMES, EmbeddingSection
from citewell.config.enrichment import EnrichmentSection
from citewell.config.extraction import ExtractionSection
from citewell.config.fields import BUILTIN_BACKENDS, Scopes, Section, env_names
from citewell.config.identity import IdentitySection
from citewell.config.jobs import JobSection
from citewell.config.llm import LLMSection
from citewell.config.reference import configuration_markdown, masked_settings
from citewell.config.reranking import RerankingSection
from citewell.config.retrieval import RetrievalSection
from citewell.config.server import ServerSection
from citewell.config.settings import SECTION_OF, SECTIONS, Settings
from citewell.config.storage import StorageSection, default_data_dir
from citewell.config.web import WebSection

__all__ = [
    "BUILTIN_BACKENDS",
    "ONNX_MODEL_NAMES",
    "SECTIONS",
    "SECTION_OF",
    "AccessSection",
    "AnsweringSection",
    "ChunkingSection",
    "ConnectorSection",
    "EmbeddingSection",
    "EnrichmentSection",
    "ExtractionSection",
    "JobSection",
    "IdentitySection",
    "LLMSection",
    "RerankingSection",
    "RetrievalSection",
    "Scopes",
    "Section",
    "ServerSection",
    "Settings",
    "StorageSection",
    "WebSection",
    "configuration_markdown",
    "default_data_dir",
    "env_names",
    "masked_settings",
]
