"""Open WebUI's RAG API, as its documentation (seed 004) specifies."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from citewell.api.chat import handle_chat
from citewell.api.deps import AnswersDep, ViewDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.api.openai_schemas import ChatCompletionCreate
from citewell.api.routes.openai import CHAT_RESPONSES, model_list
from citewell.api.schemas import file_type

router = APIRouter(prefix="/api/v1/rag", tags=["rag"], route_class=OffLoopJsonRoute)


@router.get("/models")
async def rag_models(answers: AnswersDep) -> dict[str, Any]:
    return model_list(await run_in_threadpool(answers.models))


@router.get("/knowledge/collections")
def rag_collections(view: ViewDep) -> dict[str, Any]:
    return {
        "collections": [
            {
                "id": kb.id,
                "name": kb.name,
                "description": kb.description,
                "created_at": int(kb.created_at),
                "updated_at": int(kb.updated_at),
            }
            for kb in view.kbs()
        ]
    }


@router.get("/files")
def rag_files(view: ViewDep) -> dict[str, Any]:
    return {
        "files": [
            {
                "id": f.id,
                "name": f.name,
                "type": file_type(f),
                "created_at": int(f.created_at),
                "updated_at": int(f.created_at),
            }
            for f in view.files()
        ]
    }


@router.post("/chat/completions", responses=CHAT_RESPONSES)
async def rag_chat(body: ChatCompletionCreate, answers: AnswersDep) -> Any:
    """RAG chat over knowledge_collections (ids or names) and file_ids. Unknown ones are
    reported in ``warnings`` rather than failing the request."""
    return await handle_chat(answers, body)
