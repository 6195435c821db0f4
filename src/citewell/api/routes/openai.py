"""OpenAI-compatible endpoints: any OpenAI client works unchanged; its api_key is a Citewell
API key (any string when auth=none)."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request

from citewell.api.chat import available_models, handle_chat
from citewell.api.deps import AccessDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.api.schemas import ChatCompletionCreate

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
async def list_models(request: Request) -> dict[str, Any]:
    return model_list(await available_models(request))


CHAT_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The answer with its sources; with stream=true, server-sent events.",
        "content": {"application/json": {}, "text/event-stream": {}},
    }
}


@router.post("/chat/completions", responses=CHAT_RESPONSES)
async def chat_completions(request: Request, body: ChatCompletionCreate, access: AccessDep) -> Any:
    """Chat with RAG: knowledge comes from the model preset or from knowledge_collections /
    file_ids in the body. Streams in OpenAI's SSE format when stream is true."""
    return await handle_chat(request, body, access)
