"""The route class every agora-agent route uses: body cap, identity first, errors as `{"error": …}`.

A router must work when mounted in someone else's FastAPI app, where it cannot install exception
handlers or middleware. So each route's handler is wrapped here, in this order:

1. a declared `Content-Length` above `request_max_bytes` -> 413 before anything is read;
2. the caller's identity (the global actor resolver) -> 401, unless the endpoint resolves identity
   itself (`POST /chat` picks the agent's own resolver, ACT-05);
3. the body, read with the same cap (chunked uploads too) -> 413;
4. the endpoint; any `AgoraError`, validation error or framework HTTP error becomes its JSON body via
   the one table in `web/errors.py`; anything else is a logged 500 without a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from agora_agent.actors import Actor
from agora_agent.errors import UnauthenticatedError
from agora_agent.web.errors import (
    RequestTooLargeError,
    error_response,
    http_exception_response,
    validation_error_response,
)

__all__ = [
    "CONTEXT_STATE",
    "carries_upload",
    "current_actor",
    "make_route_class",
    "resolves_own_identity",
    "set_actor",
]

logger = logging.getLogger("agora_agent.web")

_ACTOR_STATE = "agora_actor"
CONTEXT_STATE = "agora_route_context"
"""The `request.state` attribute holding the router's shared context (read by `web/deps.py`)."""
_OWN_IDENTITY = "_agora_resolves_own_identity"
_UPLOAD = "_agora_carries_upload"

F = TypeVar("F", bound=Callable[..., Any])


def resolves_own_identity(endpoint: F) -> F:
    """Mark an endpoint that authenticates the caller itself (the route class then skips step 2)."""
    setattr(endpoint, _OWN_IDENTITY, True)
    return endpoint


def carries_upload(endpoint: F) -> F:
    """Mark an endpoint whose body is a file upload: it is capped at the router's `upload_max_bytes`."""
    setattr(endpoint, _UPLOAD, True)
    return endpoint


def current_actor(request: Request) -> Actor:
    """FastAPI dependency: the actor the route class resolved for this request."""
    actor = getattr(request.state, _ACTOR_STATE, None)
    if not isinstance(actor, Actor):  # an endpoint marked `resolves_own_identity` must not use it
        raise UnauthenticatedError("unauthorized")
    return actor


def set_actor(request: Request, actor: Actor) -> None:
    """Record the resolved actor on the request (for endpoints that resolve identity themselves)."""
    setattr(request.state, _ACTOR_STATE, actor)


async def _read_capped(request: Request, max_bytes: int) -> None:
    if request.method in ("GET", "HEAD", "DELETE", "OPTIONS"):
        return
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise RequestTooLargeError(f"request body exceeds the {max_bytes}-byte limit (request_max_bytes)")
        chunks.append(chunk)
    # Starlette's Request caches the body here; the endpoint's parsers (json, form) read this cache.
    request._body = b"".join(chunks)


def _declared_length(request: Request) -> int | None:
    raw = request.headers.get("content-length")
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def make_route_class(
    *,
    max_bytes: int,
    upload_max_bytes: int | None = None,
    debug: bool,
    authenticate: Callable[[Request], Awaitable[Actor]],
    context: object = None,
) -> type[APIRoute]:
    """An `APIRoute` subclass bound to one router's limits, resolver, debug flag and shared `context`."""

    class AgoraRoute(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()
            own_identity = bool(getattr(self.endpoint, _OWN_IDENTITY, False))
            uploads = bool(getattr(self.endpoint, _UPLOAD, False)) and upload_max_bytes is not None
            limit = upload_max_bytes if uploads and upload_max_bytes is not None else max_bytes

            async def guarded(request: Request) -> Response:
                setattr(request.state, CONTEXT_STATE, context)
                try:
                    declared = _declared_length(request)
                    if declared is not None and declared > limit:
                        raise RequestTooLargeError(
                            f"request body of {declared} bytes exceeds the {limit}-byte limit (request_max_bytes)"
                        )
                    if not own_identity:
                        set_actor(request, await authenticate(request))
                    await _read_capped(request, limit)
                    return await handler(request)
                except ClientDisconnect:
                    return Response(status_code=400)  # nobody is listening any more
                except RequestValidationError as exc:
                    return validation_error_response(exc)
                except StarletteHTTPException as exc:
                    return http_exception_response(exc)
                except Exception as exc:  # AgoraError -> its status; anything else -> a logged 500
                    return error_response(exc, debug=debug)

            return guarded

    return AgoraRoute
