"""`create_app(config)`: a ready FastAPI application serving the agent under `config.path`.

    from agora_agent import AgentConfig
    from agora_agent.web import create_app

    app = create_app(AgentConfig(model="openai:gpt-4o-mini", actor_resolver=my_resolver))
    # uvicorn module:app

The app's lifespan starts the `AgentService` (stores connected, runner started) and closes it on
shutdown (runs in flight are cancelled). `app.state.agent_service` is the service. Unknown routes and
framework errors answer in the same `{"error": …}` shape as the agent routes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from agora_agent.config import AgentConfig
from agora_agent.service import AgentService
from agora_agent.web.errors import http_exception_response, validation_error_response
from agora_agent.web.pages import mount_pages
from agora_agent.web.router import agent_router

__all__ = ["create_app", "install_error_handlers"]


def create_app(config: AgentConfig | AgentService, *, title: str = "agora-agent", **fastapi_kwargs: Any) -> FastAPI:
    """A FastAPI app with the agent router mounted and the service's lifespan wired.

    Pass a config (the app builds and owns the service) or a service (the app still starts and
    closes it in its lifespan). Extra keyword arguments go to `FastAPI(...)`.
    """
    service = config if isinstance(config, AgentService) else AgentService.from_config(config)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with service:
            yield

    app = FastAPI(title=title, lifespan=lifespan, **fastapi_kwargs)
    app.state.agent_service = service
    app.include_router(agent_router(service))
    # The chat page (<path>/ui) and, when governance_authorize is set, the dashboard (<path>/dashboard).
    mount_pages(app, service)

    install_error_handlers(app)
    return app


def install_error_handlers(app: FastAPI) -> None:
    """Answer the app's own 404/405/422 (outside the agent router) with `{"error": …}` bodies too."""

    async def on_http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        return http_exception_response(exc)

    async def on_validation_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return validation_error_response(exc)

    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
