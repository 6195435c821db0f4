"""Dependencies: the app objects built once at start-up, handed to routes by type."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from citewell.pipeline import Citewell
from citewell.pipeline.chat import ChatPipeline


def get_citewell(request: Request) -> Citewell:
    return request.app.state.citewell  # type: ignore[no-any-return]


def get_chat(request: Request) -> ChatPipeline:
    return request.app.state.chat  # type: ignore[no-any-return]


CitewellDep = Annotated[Citewell, Depends(get_citewell)]
ChatDep = Annotated[ChatPipeline, Depends(get_chat)]
