"""Request bodies in OpenAI's shape: chat completions and embeddings (the answers are built
in ``api.chat`` and ``routes.openai``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from citewell.api.schemas import MAX_REFERENCES

MAX_MESSAGES = 2_000  # per chat request; each costs tokens, so a window holds fewer anyway


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | list[dict[str, Any]] | None = ""
    tool_calls: list[dict[str, Any]] | None = Field(
        default=None, max_length=128, description="An assistant's tool calls (OpenAI's shape)."
    )
    tool_call_id: str | None = Field(
        default=None, max_length=500, description="A 'tool' message: the call it answers."
    )
    name: str | None = Field(default=None, max_length=500)

    def text(self) -> str:
        if isinstance(self.content, list):  # OpenAI content parts: keep the text ones
            return "\n".join(p.get("text", "") for p in self.content if p.get("type") == "text")
        return self.content or ""


class StreamOptions(BaseModel):
    include_usage: bool = Field(
        default=False, description="A last chunk with no choices and the usage, as OpenAI's."
    )


class ChatCompletionCreate(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    messages: list[Message] = Field(min_length=1, max_length=MAX_MESSAGES)
    knowledge_collections: list[str] = Field(default_factory=list, max_length=MAX_REFERENCES)
    file_ids: list[str] = Field(default_factory=list, max_length=MAX_REFERENCES)
    stream: bool = False
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    stop: str | Annotated[list[str], Field(max_length=4)] | None = None
    user: str | None = None
    seed: int | None = None
    tools: list[dict[str, Any]] | None = Field(
        default=None,
        max_length=128,
        description="The client's tools, passed to the LLM; its tool calls come back to the "
        "client (needs an LLM).",
    )
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    response_format: dict[str, Any] | None = Field(
        default=None, description="Passed to the LLM (needs one)."
    )
    n: int | None = Field(default=None, ge=1, description="Only 1: one answer per request.")
    logprobs: bool | None = Field(default=None, description="Not supported: false or absent.")
    retrieval_trace: bool = False
    stream_options: StreamOptions | None = None
    web_search: bool = Field(
        default=False,
        description="Search the web with the retrieval queries and answer from the pages too "
        "(needs web_search_engine). Open WebUI's features.web_search is read as well.",
    )
    features: dict[str, Any] | None = Field(
        default=None, description="Open WebUI's feature flags; web_search is honoured."
    )
    function_calling: Literal["native", "default"] | None = Field(
        default=None,
        description="'native': the LLM may call Citewell's builtin knowledge tools; "
        "'default': it may not. Absent: the preset's, else the function_calling setting.",
    )
    params: dict[str, Any] | None = Field(
        default=None, description="Open WebUI's model params; function_calling is honoured."
    )

    def unsupported(self, has_llm: bool) -> str | None:
        """The first field this request asks for that cannot be honoured, and why."""
        if self.n is not None and self.n > 1:
            return "n > 1: Citewell answers with one choice per request; send n=1."
        if self.logprobs:
            return "logprobs: token log-probabilities are not passed through; leave it out."
        if not has_llm:
            for field in ("tools", "response_format"):
                if getattr(self, field):
                    return (
                        f"{field}: no LLM is configured (answers are extractive), so it cannot "
                        "be honoured; set llm_base_url, or leave it out."
                    )
        return None

    def wanted_function_calling(self) -> str:
        value = self.function_calling or (self.params or {}).get("function_calling") or ""
        return value if value in ("native", "default") else ""

    def wants_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)

    def wants_web_search(self) -> bool:
        return self.web_search or bool((self.features or {}).get("web_search"))


MAX_EMBEDDING_INPUTS = 2048  # as OpenAI's API
TokenId = Annotated[int, Field(ge=0, le=2**31 - 1)]  # tokenizers index 32-bit vocabularies
TokenIds = Annotated[list[TokenId], Field(min_length=1, max_length=8192)]


class EmbeddingCreate(BaseModel):
    """OpenAI's embeddings request."""

    model: str = Field(min_length=1, max_length=500)
    input: (
        str
        | Annotated[list[str], Field(min_length=1, max_length=MAX_EMBEDDING_INPUTS)]
        | TokenIds
        | Annotated[list[TokenIds], Field(min_length=1, max_length=MAX_EMBEDDING_INPUTS)]
    ) = Field(description="A text, texts, or token ids of the model's tokenizer (one or many).")
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1, le=65_536)
    user: str | None = Field(default=None, max_length=500)

    def inputs(self) -> list[str | list[int]]:
        if isinstance(self.input, str):
            return [self.input]
        if self.input and isinstance(self.input[0], int):
            return [list(self.input)]  # type: ignore[arg-type]
        return list(self.input)  # type: ignore[arg-type]
