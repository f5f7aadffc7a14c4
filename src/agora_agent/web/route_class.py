"""The route class every agora-agent route uses: body cap, identity first, errors as `{"error": …}`.

A router must work when mounted in someone else's FastAPI app, where it cannot install exception
handlers or middleware. So each route's handler is wrapped here, in this order:

1. a declared `Content-Length` above `request_max_bytes` -> 413 before anything is read;
2. the caller's identity (the global actor resolver) -> 401, unless the endpoint resolves identity
   itself (`POST /chat` picks the agent's own resolver);
3. the body, read with the same cap (chunked uploads too) -> 413;
4. the edge checks (`_check_edge`): NUL bytes in the path or query -> 400 (PostgreSQL cannot store
   them); a cookie-carrying unsafe request from another site (`Origin` / `Sec-Fetch-Site` not this host
   and not in `trusted_origins`) -> 403; a body that is not `application/json` -> 415; JSON nested
   deeper than `MAX_JSON_DEPTH` or carrying `\u0000` -> 400;
5. the endpoint's direct handler when it has one (`direct_handler`: it may answer a request itself, after
   every check above, and otherwise leaves it to FastAPI), else the endpoint through FastAPI; any
   `AgoraError`, validation error or framework HTTP error becomes its JSON body via the one table in
   `web/errors.py`; anything else is a logged 500 without a traceback.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from agora_agent.actors import Actor
from agora_agent.errors import ForbiddenError, UnauthenticatedError
from agora_agent.web.errors import (
    BadRequestError,
    RequestTooLargeError,
    UnsupportedMediaTypeError,
    error_response,
    http_exception_response,
    validation_error_response,
)

__all__ = [
    "CONTEXT_STATE",
    "carries_upload",
    "current_actor",
    "direct_handler",
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
_DIRECT = "_agora_direct_handler"

F = TypeVar("F", bound=Callable[..., Any])


def resolves_own_identity(endpoint: F) -> F:
    """Mark an endpoint that authenticates the caller itself (the route class then skips step 2)."""
    setattr(endpoint, _OWN_IDENTITY, True)
    return endpoint


def carries_upload(endpoint: F) -> F:
    """Mark an endpoint whose body is a file upload: it is capped at the router's `upload_max_bytes`."""
    setattr(endpoint, _UPLOAD, True)
    return endpoint


DirectHandler = Callable[[Request], Awaitable[Response | None]]


def direct_handler(direct: DirectHandler) -> Callable[[F], F]:
    """Give an endpoint a handler the route class asks first, once the request passed steps 1-4: it answers
    with a Response, or returns None to leave the request to FastAPI's own handling of the endpoint (its
    dependencies, body validation and 422s), which then runs as if it had not been asked. The endpoint's
    signature still documents the route (OpenAPI) and still serves every request the handler declines."""

    def mark(endpoint: F) -> F:
        setattr(endpoint, _DIRECT, direct)
        return endpoint

    return mark


async def current_actor(request: Request) -> Actor:
    """FastAPI dependency: the actor the route class resolved for this request (async: no worker thread)."""
    actor = getattr(request.state, _ACTOR_STATE, None)
    if not isinstance(actor, Actor):  # an endpoint marked `resolves_own_identity` must not use it
        raise UnauthenticatedError("unauthorized")
    return actor


MAX_REF_CHARS = 255
"""Longest actor id / tenant ref a request may carry: the width of the stores' reference columns."""


def set_actor(request: Request, actor: Actor) -> None:
    """Record the resolved actor on the request (for endpoints that resolve identity themselves).

    BadRequestError when its id or tenant ref is longer than `MAX_REF_CHARS`: a resolver may pass a
    client-chosen value through (a header, a token claim), and PostgreSQL would refuse to store it."""
    for name, value in (("actor id", actor.id), ("tenant ref", actor.tenant_ref)):
        if value is not None and len(value) > MAX_REF_CHARS:
            raise BadRequestError(f"the {name} is longer than {MAX_REF_CHARS} characters")
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


MAX_JSON_DEPTH = 64
"""Deepest JSON nesting a request body may have (a 1,000-deep body would exhaust the parser's recursion)."""

_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})

# A JSON `\u0000` escape: preceded by an even number of backslashes (an odd number makes it the text
# "\\u0000", e.g. a user asking what the escape means, which PostgreSQL stores fine).
_NUL_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")


def _json_too_deep(body: bytes, limit: int) -> bool:
    """Whether `body` nests arrays/objects deeper than `limit` (strings skipped). Cheap: a body with
    fewer brackets than the limit is never scanned."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    depth = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


def _check_origin(request: Request, trusted_origins: frozenset[str]) -> None:
    """Cookie-authenticated unsafe requests must come from this site (or a trusted origin): a cookie
    is sent by the browser on cross-site requests too, so without this a page elsewhere could start
    runs or queue an approval of its choosing.

    A browser's `Sec-Fetch-Site` (which no page can set) decides when present: behind a proxy that
    rewrites `Host` (nginx's default) `Origin` would never match it. Without fetch metadata (older
    browsers) `Origin` must name this host."""
    if request.method not in _UNSAFE or "cookie" not in request.headers:
        return
    origin = request.headers.get("origin")
    if origin is not None and origin in trusted_origins:
        return
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        if site in ("same-origin", "none"):
            return
        raise ForbiddenError(f"cross-site request refused (Sec-Fetch-Site: {site}; AgentConfig.trusted_origins)")
    if origin is None:
        return  # no browser metadata at all: curl or a script, whose cookie is its own
    if origin != "null" and origin.split("://", 1)[-1] == request.headers.get("host", ""):
        return
    raise ForbiddenError(f"cross-site request refused: origin {origin} is not trusted (AgentConfig.trusted_origins)")


def _check_edge(request: Request, *, trusted_origins: frozenset[str], json_body: bool) -> None:
    """The checks every route shares before its endpoint runs (see the module docstring, step 4)."""
    # the scope's path, not request.url (which builds a URL object per request)
    if "\x00" in request.scope["path"] or b"%00" in request.scope.get("query_string", b""):
        raise BadRequestError("NUL bytes are not allowed in ids or query parameters")
    _check_origin(request, trusted_origins)
    body: bytes = getattr(request, "_body", b"")
    if not json_body or not body:
        return
    media = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise UnsupportedMediaTypeError(f"Content-Type must be application/json, got {media or 'none'}")
    if b"\\u0000" in body and _NUL_ESCAPE.search(body):
        raise BadRequestError("NUL characters (\\u0000) are not allowed in the request body")
    if _json_too_deep(body, MAX_JSON_DEPTH):
        raise BadRequestError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")


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
    trusted_origins: frozenset[str] = frozenset(),
) -> type[APIRoute]:
    """An `APIRoute` subclass bound to one router's limits, resolver, debug flag and shared `context`."""

    class AgoraRoute(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()
            own_identity = bool(getattr(self.endpoint, _OWN_IDENTITY, False))
            uploads = bool(getattr(self.endpoint, _UPLOAD, False)) and upload_max_bytes is not None
            direct: DirectHandler | None = getattr(self.endpoint, _DIRECT, None)
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
                    _check_edge(request, trusted_origins=trusted_origins, json_body=not uploads)
                    if direct is not None:
                        answered = await direct(request)
                        if answered is not None:
                            return answered
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
