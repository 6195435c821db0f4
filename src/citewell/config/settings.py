"""``Settings``: every section together, read once at start-up and passed down.

A setting has one name across all sections (``chunk_size`` lives in ``chunking``), so the
environment, config files, run-time changes and the API keep using plain names; code reads
``settings.chunking.chunk_size`` and a component receives only the sections it needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo

from citewell.config.access import AccessSection
from citewell.config.answering import AnsweringSection
from citewell.config.chunking import ChunkingSection
from citewell.config.connectors import ConnectorSection
from citewell.config.embedding import EmbeddingSection
from citewell.config.enrichment import EnrichmentSection
from citewell.config.environment import read_config_file, read_environment
from citewell.config.extraction import ExtractionSection
from citewell.config.fields import ALL_FIELDS, CONFIG_FILE, Scopes, Section, scopes_of, source_of
from citewell.config.files import FileStoreSection
from citewell.config.identity import IdentitySection
from citewell.config.jobs import JobSection
from citewell.config.llm import LLMSection
from citewell.config.reranking import RerankingSection
from citewell.config.retrieval import RetrievalSection
from citewell.config.server import ServerSection
from citewell.config.storage import StorageSection
from citewell.config.web import WebSection
from citewell.errors import ConfigError

SECTIONS: dict[str, type[Section]] = {
    "storage": StorageSection,
    "files": FileStoreSection,
    "chunking": ChunkingSection,
    "enrichment": EnrichmentSection,
    "embedding": EmbeddingSection,
    "retrieval": RetrievalSection,
    "reranking": RerankingSection,
    "extraction": ExtractionSection,
    "web": WebSection,
    "connectors": ConnectorSection,
    "jobs": JobSection,
    "server": ServerSection,
    "access": AccessSection,
    "identity": IdentitySection,
    "llm": LLMSection,
    "answering": AnsweringSection,
}
# setting name → the section holding it
SECTION_OF = {name: section for section, kind in SECTIONS.items() for name in kind.model_fields}
ALL_FIELDS.update(
    (name, info) for kind in SECTIONS.values() for name, info in kind.model_fields.items()
)


class Settings(BaseModel):
    """Every knob Citewell has, in sections. ``docs/configuration.md`` is generated from it.

    Built from plain names too: ``Settings(chunk_size=500)`` puts it in ``chunking``."""

    model_config = ConfigDict(frozen=True)

    storage: StorageSection = Field(default_factory=StorageSection)
    files: FileStoreSection = Field(default_factory=FileStoreSection)
    chunking: ChunkingSection = Field(default_factory=ChunkingSection)
    enrichment: EnrichmentSection = Field(default_factory=EnrichmentSection)
    embedding: EmbeddingSection = Field(default_factory=EmbeddingSection)
    retrieval: RetrievalSection = Field(default_factory=RetrievalSection)
    reranking: RerankingSection = Field(default_factory=RerankingSection)
    extraction: ExtractionSection = Field(default_factory=ExtractionSection)
    web: WebSection = Field(default_factory=WebSection)
    connectors: ConnectorSection = Field(default_factory=ConnectorSection)
    jobs: JobSection = Field(default_factory=JobSection)
    server: ServerSection = Field(default_factory=ServerSection)
    access: AccessSection = Field(default_factory=AccessSection)
    identity: IdentitySection = Field(default_factory=IdentitySection)
    llm: LLMSection = Field(default_factory=LLMSection)
    answering: AnsweringSection = Field(default_factory=AnsweringSection)

    @model_validator(mode="before")
    @classmethod
    def _sections_from_names(cls, data: Any) -> Any:
        """Plain names go to their sections; names no section has are ignored (as in a
        config file written for a later release)."""
        if not isinstance(data, Mapping):
            return data
        nested: dict[str, dict[str, Any]] = {}
        for key, value in data.items():
            if key in SECTIONS:
                given = value.model_dump() if isinstance(value, BaseModel) else dict(value)
                nested.setdefault(key, {}).update(given)
        for key, value in data.items():
            if key in SECTION_OF:
                nested.setdefault(SECTION_OF[key], {})[key] = value
        return nested

    # --- plain names ----------------------------------------------------------------------
    @staticmethod
    def fields() -> dict[str, FieldInfo]:
        """Every setting's field by its plain name, section by section."""
        return dict(ALL_FIELDS)

    @staticmethod
    def names_where(**scope: bool) -> tuple[str, ...]:
        """The settings whose scopes match, e.g. ``names_where(runtime=True)``."""
        return tuple(
            name
            for name, info in ALL_FIELDS.items()
            if all(getattr(scopes_of(info), key) == wanted for key, wanted in scope.items())
        )

    @staticmethod
    def scopes(name: str) -> Scopes:
        return scopes_of(ALL_FIELDS[name])

    def value(self, name: str) -> Any:
        """A setting's value by its plain name."""
        return getattr(getattr(self, SECTION_OF[name]), name)

    def flat(self, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        """Every setting by its plain name (the shape of the environment and the API)."""
        out: dict[str, Any] = {}
        for section in SECTIONS:
            out.update(getattr(self, section).model_dump(mode=mode))
        return out

    def with_values(self, changes: Mapping[str, Any]) -> Settings:
        """These settings with ``changes`` (plain names), checked like any settings; the
        environment is not read again. Raises ConfigError when a value is invalid."""
        if not changes:
            return self
        try:
            return Settings.model_validate({**self.flat(), **changes})
        except ValidationError as exc:
            raise ConfigError(invalid(exc)) from exc
        except ValueError as exc:
            raise ConfigError(f"Invalid settings: {exc}") from exc

    # --- start-up -------------------------------------------------------------------------
    @classmethod
    def load(cls, config_file: Path | None = None, **overrides: Any) -> Settings:
        """Build settings from explicit overrides, the environment (Citewell's and Open
        WebUI's names) and an optional TOML file, in that order of precedence."""
        if config_file is not None and not config_file.is_file():
            raise ConfigError(f"Config file {config_file} does not exist; check the path.")
        CONFIG_FILE["path"] = config_file
        try:
            values = {**read_config_file(config_file, SECTIONS, ALL_FIELDS)}
            values.update(read_environment(ALL_FIELDS))
            values.update({k: v for k, v in overrides.items() if v is not None})
            return cls.model_validate(values)
        except ValidationError as exc:
            raise ConfigError(invalid(exc)) from exc
        except ValueError as exc:
            raise ConfigError(f"Invalid settings: {exc}") from exc
        finally:
            CONFIG_FILE["path"] = None


def invalid(exc: ValidationError) -> str:
    """One line per invalid setting: its name, where its value came from, what is wrong."""
    lines = []
    for error in exc.errors():
        names = [str(part) for part in error["loc"] if str(part) in ALL_FIELDS]
        message = error["msg"].removeprefix("Value error, ")
        if names:
            name = names[-1]
            where = source_of(name, error.get("input"))
            lines.append(f"{name} = {error.get('input')!r} (from {where}): {message}")
        else:
            lines.append(message)
    return "Invalid settings: " + "; ".join(lines) + "."
