"""Model presets over the API: ``ModelCreate`` in, ``ModelPublic`` out."""

from __future__ import annotations

from dataclasses import asdict
from typing import Literal

from pydantic import BaseModel, Field

from citewell.answer.model_presets import ModelPreset, PresetEntry

MODEL_NAME = r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$"  # what clients send as "model"


class ModelCreate(BaseModel):
    """A model preset: a model name that answers from its KBs, with its own retrieval."""

    model: str = Field(pattern=MODEL_NAME, description="The name clients send as 'model'.")
    name: str = Field("", max_length=200, description="A display name.")
    knowledge: list[str] = Field(
        default_factory=list, max_length=100, description="KB ids or names (stored as ids)."
    )
    base_model: str = Field("", max_length=200, description="The LLM's model (default: llm_model).")
    system: str = Field("", max_length=100_000)
    template: str = Field("", max_length=100_000, description="RAG template (default: setting).")
    top_k: int | None = Field(None, ge=1, le=200)
    mode: Literal["", "hybrid", "vector", "bm25"] = ""
    relevance_threshold: float | None = Field(None, ge=0, le=1)
    full_context: bool | None = Field(None, description="Whole documents (default: setting).")
    file_context: bool = Field(True, description="Inject retrieved sources up front.")
    builtin_tools: bool = Field(True, description="Offer the builtin tools (native calling).")
    function_calling: Literal["", "native", "default"] = ""

    def preset(self) -> ModelPreset:
        fields = self.model_dump(include=set(ModelCreate.model_fields) - {"model", "knowledge"})
        return ModelPreset(id=self.model, knowledge=tuple(self.knowledge), **fields)


class ModelPublic(ModelCreate):
    id: str = Field(description="Stable id (for settings presets: the model name).")
    source: Literal["settings", "api"]
    owner_id: str
    created_at: float
    updated_at: float

    @classmethod
    def of(cls, entry: PresetEntry) -> ModelPublic:
        fields = asdict(entry.preset)
        fields["model"], fields["knowledge"] = fields.pop("id"), list(fields["knowledge"])
        return cls(
            id=entry.id,
            source="api" if entry.source == "api" else "settings",
            owner_id=entry.owner_id,
            created_at=entry.created_at,
            updated_at=entry.updated_at,
            **fields,
        )


class PresetGrantPublic(BaseModel):
    model_id: str
    principal: str
    permission: str
