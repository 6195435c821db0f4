"""create_app(settings) → the FastAPI application. No import-time globals."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from starlette.routing import Route

from citewell import web
from citewell.api import docs, errors, peer, security
from citewell.api.deps import get_access
from citewell.api.drain import Drain
from citewell.api.measure import MeasureRequests
from citewell.api.openapi import documented_errors
from citewell.api.routes import (
    auth,
    connectors,
    dify,
    embedding,
    files,
    grants,
    health,
    jobs,
    knowledge,
    models,
    openai,
    openwebui_files,
    openwebui_knowledge,
    rag,
    retrieval,
    stats,
    users,
)
from citewell.api.routes import (
    metrics as metrics_route,
)
from citewell.api.routes import (
    settings as settings_routes,
)
from citewell.api.trace_requests import TraceRequests
from citewell.app import Citewell
from citewell.auth.identity.methods import KeylessAccess
from citewell.auth.identity.sync import DirectorySync
from citewell.auth.throttle import LoginThrottle
from citewell.config import Settings
from citewell.mcp_server.http import MCPEndpoint
from citewell.services.answers import ModelList
from citewell.tracing import tracing_on
from citewell.version import package_version


def create_app(settings: Settings, citewell: Citewell | None = None) -> FastAPI:
    """The HTTP adapter of a Citewell (built from ``settings`` when not given): the library
    object has the LLM and the chat pipeline; this only routes to them."""
    citewell = citewell or Citewell.from_settings(settings)

    drain = Drain(settings.server.shutdown_drain_seconds)
    mcp: list[MCPEndpoint] = []  # made with the app below; its sessions live with the app

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        drain.install()
        if (
            settings.jobs.serve_job_worker
        ):  # queued ingest jobs, including any a restart interrupted
            citewell.start_workers(shared=settings.server.workers > 1)
        citewell.warm()  # this process serves searches: their indexes load meanwhile
        directory.start()
        async with mcp[0].running():
            yield
        directory.stop()
        app.state.identity.close()
        citewell.close()

    app = FastAPI(
        lifespan=lifespan,
        docs_url=None,  # served from local files below (api/docs.py), not a CDN
        redoc_url=None,
        title="Citewell",
        version=package_version(),
        description="Answers from your documents, citing the exact passage. OpenAI-compatible "
        "chat at /v1, Open WebUI's RAG API at /api/v1/rag, management at /api/v1.",
    )
    app.state.citewell = citewell
    app.state.drain = drain
    accounts = citewell.accounts  # built by the root (citewell.app); not built here
    app.state.audit = accounts.audit
    app.state.identity = citewell.identity
    keyless = KeylessAccess(app.state.identity, accounts.audit)
    directory = DirectorySync(app.state.identity, accounts.users, accounts.audit)
    limiter = citewell.rate_limiter
    app.state.auth = security.Authenticator(
        settings, accounts.users, accounts.grants, limiter, keyless
    )
    app.state.login_throttle = LoginThrottle(
        settings.access.login_failures_per_address, settings.access.login_failures_per_name
    )
    app.state.chat = citewell.chat
    app.state.models = ModelList(citewell.chat)  # the LLM's models, asked once a minute
    errors.install(app)
    security.install(app, settings)
    if tracing_on():
        app.add_middleware(TraceRequests)
    if settings.server.metrics:
        app.add_middleware(MeasureRequests)  # refusals count too
        app.include_router(metrics_route.router)  # checks its readers itself
    peer.install(app, settings.server.forwarded_allow_ips)  # outermost
    app.include_router(health.router)
    app.include_router(auth.router)  # signing in needs no key; its other routes ask for one
    app.include_router(connectors.hooks)  # forges sign their push notifications instead
    app.include_router(dify.router)  # answers failed sign-ins in Dify's own shape
    mcp.append(MCPEndpoint(citewell, citewell.chat, app.state.auth))
    app.router.routes.append(Route("/mcp", endpoint=mcp[0]))  # checks keys itself
    signed_in = [Depends(get_access)]  # every other route: 401 without a valid key
    # Requests are matched against routes in this order, one by one: the busiest first
    # (no two routers' paths overlap, so the order changes nothing else).
    for module in (
        retrieval,
        openai,
        rag,
        knowledge,
        openwebui_knowledge,  # after knowledge: GET /{id} is the native route
        connectors,
        grants,
        files,
        openwebui_files,
        jobs,
        embedding,
        users,
        models,
        settings_routes,
        stats,
    ):
        app.include_router(module.router, dependencies=signed_in)
    docs.install(app)
    if settings.server.web_ui:
        web.install(app)
    documented_errors(app)
    return app


def app_from_environment() -> FastAPI:
    """The app of each process of ``citewell serve --workers K`` (uvicorn's factory): the
    parent puts the data dir and config file in the environment; settings load from it."""
    import os
    from pathlib import Path

    config = os.environ.get("CITEWELL_CONFIG")
    settings = Settings.load(Path(config) if config else None)
    return create_app(settings, Citewell.from_settings(settings, switch_models=True))
