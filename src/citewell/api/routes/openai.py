"""OpenAI-compatible endpoints: any OpenAI client works unchanged; its api_key is a Citewell
API key (any string when auth=none)."""

from __future__ import annotations

import base64
import time
from typing import Any

import anyio
import anyio.to_thread
import numpy as np
from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from citewell.api.chat import handle_chat
from citewell.api.deps import AccessDep, AnswersDep, CitewellDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.api.openai_schemas import ChatCompletionCreate, EmbeddingCreate
from citewell.engine.embeddings import embed_inputs
from citewell.errors import ModelNotFound
from citewell.services.answers import missing_model_message

router = APIRouter(prefix="/v1", tags=["openai"], route_class=OffLoopJsonRoute)


def model_list(names: list[str]) -> dict[str, Any]:
    created = int(time.time())
    return {
        "object": "list",
        "data": [
            {"id": n, "object": "model", "created": created, "owned_by": "citewell"} for n in names
        ],
    }


@router.get("/models")
async def list_models(answers: AnswersDep) -> dict[str, Any]:
    return model_list(await run_in_threadpool(answers.models))


@router.get("/models/{model_id:path}")
async def get_model(model_id: str, answers: AnswersDep) -> dict[str, Any]:
    """One model of GET /v1/models (presets included); 404 for any other name."""
    known = await run_in_threadpool(answers.models)
    if model_id not in known:
        raise ModelNotFound(missing_model_message(model_id, known, answers.extractive))
    return dict(model_list([model_id])["data"][0])


@router.post("/embeddings")
async def create_embeddings(
    body: EmbeddingCreate, request: Request, app: CitewellDep, access: AccessDep
) -> dict[str, Any]:
    """Vectors from the active embedding model, as OpenAI's API answers them (base64: the
    float32 values, little-endian). One request computes at a time; searches keep a core."""
    state = request.app.state
    if getattr(state, "embedding_requests", None) is None:
        state.embedding_requests = anyio.CapacityLimiter(1)
    result = await anyio.to_thread.run_sync(
        embed_inputs,
        app,
        body.model,
        body.inputs(),
        body.dimensions,
        access.user_id,
        limiter=state.embedding_requests,
    )
    data = [
        {"object": "embedding", "index": i, "embedding": _encoded(v, body.encoding_format)}
        for i, v in enumerate(result.vectors)
    ]
    usage = {"prompt_tokens": result.tokens, "total_tokens": result.tokens}
    return {"object": "list", "data": data, "model": body.model, "usage": usage}


def _encoded(vector: Any, encoding: str) -> list[float] | str:
    if encoding == "base64":
        return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
    return [float(x) for x in vector]


CHAT_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The answer with its sources; with stream=true, server-sent events.",
        "content": {"application/json": {}, "text/event-stream": {}},
    }
}


@router.post("/chat/completions", responses=CHAT_RESPONSES)
async def chat_completions(body: ChatCompletionCreate, answers: AnswersDep) -> Any:
    """Chat with RAG: knowledge comes from the model preset or from knowledge_collections /
    file_ids in the body. Streams in OpenAI's SSE format when stream is true."""
    return await handle_chat(answers, body)
