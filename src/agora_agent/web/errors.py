"""The one table from `agora_agent.errors` types to HTTP statuses, and the `{"error": …}` bodies.

Every error response of the API is `{"error": "<message>"}`, plus `detail` where it helps: the field
errors of a 422, the standing decision of a 409, the budget figures of a 429. A 5xx never carries a
traceback; its message is generic unless `debug` is on.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic_core import to_jsonable_python
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse

from agora_agent.errors import (
    AgoraError,
    ConfigurationError,
    ConflictError,
    ForbiddenError,
    InvalidRequestError,
    ModelError,
    NotFoundError,
    QuotaExceededError,
    RequestError,
    StoreError,
    ToolDisabledError,
    ToolForbiddenError,
    ToolInputInvalidError,
    ToolNotFoundError,
    UnauthenticatedError,
)
from agora_agent.web.schemas import wire_keys

__all__ = [
    "STATUS_BY_ERROR",
    "RequestTooLargeError",
    "error_response",
    "status_for",
    "validation_error_response",
]

logger = logging.getLogger("agora_agent.web")


class RequestTooLargeError(RequestError):
    """The request body is larger than `AgentConfig.request_max_bytes` (HTTP 413)."""


class UnsupportedMediaTypeError(RequestError):
    """An upload's content type is not in the allow-list (HTTP 415)."""


class BadRequestError(RequestError):
    """A request the server cannot read at all, e.g. a multipart body without its file field (HTTP 400)."""


# Most specific first: the first matching row wins.
STATUS_BY_ERROR: Sequence[tuple[type[BaseException], int]] = (
    (UnauthenticatedError, 401),
    (ForbiddenError, 403),
    (NotFoundError, 404),
    (ConflictError, 409),
    (RequestTooLargeError, 413),
    (UnsupportedMediaTypeError, 415),
    (InvalidRequestError, 422),
    (BadRequestError, 400),
    (QuotaExceededError, 429),
    (RequestError, 400),
    (ToolNotFoundError, 404),
    (ToolForbiddenError, 403),
    (ToolDisabledError, 409),
    (ToolInputInvalidError, 422),
    (ModelError, 502),
    (StoreError, 503),
    (ConfigurationError, 500),
    (AgoraError, 500),
)


STORE_UNAVAILABLE = "the agent store is unavailable right now; try again shortly"


def _store_outage(exc: BaseException) -> bool:
    """A database error that survived the store's retries and is about the connection (a dropped or
    refused connection, a terminated backend): the client may retry, so it is a 503, not a 500."""
    import sqlalchemy as sa

    from agora_agent.stores.sql.engine import is_transient_db_error

    return isinstance(exc, sa.exc.DBAPIError | ConnectionError | TimeoutError) and is_transient_db_error(exc)


def status_for(exc: BaseException) -> int:
    """The HTTP status of an exception; a store outage is a 503; anything else unknown is a 500."""
    for kind, status in STATUS_BY_ERROR:
        if isinstance(exc, kind):
            return status
    return 503 if _store_outage(exc) else 500


def error_response(exc: BaseException, *, debug: bool = False, headers: dict[str, str] | None = None) -> JSONResponse:
    """`{"error": message, "detail"?}` with the table's status.

    4xx messages are the exception's own (they are written for the caller). A 401 says only
    "unauthorized" unless `debug` (HTTP "Common"). 5xx messages are generic unless `debug`, and are
    logged with their traceback.
    """
    status = status_for(exc)
    message = str(exc) or type(exc).__name__
    detail: Any = getattr(exc, "detail", None)
    if status == 401 and not debug:
        message, detail = "unauthorized", None
    elif status >= 500:
        logger.error("agora-agent request failed: %s", message, exc_info=exc)
        if not debug:
            message, detail = (STORE_UNAVAILABLE if status == 503 else "internal error"), None
    body: dict[str, Any] = {"error": message}
    try:
        if detail:
            body["detail"] = _wire_detail(detail)
        return JSONResponse(body, status_code=status, headers=headers)
    except (TypeError, ValueError):  # a detail JSON cannot carry (inf, an object): the message still must
        logger.warning("error detail dropped, not JSON-serialisable: %r", detail)
        return JSONResponse({"error": message}, status_code=status, headers=headers)


def _wire_detail(detail: Any) -> Any:
    """An error's `detail` as the wire spells it: a mapping's keys in camelCase (the layers below speak Python
    names), values as JSON (a UTC time as `...Z`, like every wire model)."""
    if isinstance(detail, Mapping):
        detail = wire_keys(detail)
    return to_jsonable_python(detail)


def validation_error_response(exc: RequestValidationError) -> JSONResponse:
    """422 with every field error: `{"error": "invalid request: …", "detail": [{loc, msg, type}]}`.

    The offending input is not echoed back (it can be large or sensitive).
    """
    issues = [
        {"loc": [str(p) for p in err.get("loc", ())], "msg": str(err.get("msg", "")), "type": str(err.get("type", ""))}
        for err in exc.errors()
    ]
    summary = "; ".join(f"{'.'.join(i['loc'][1:] or i['loc'])}: {i['msg']}" for i in issues[:5])
    return JSONResponse({"error": f"invalid request: {summary}", "detail": issues}, status_code=422)


def http_exception_response(exc: StarletteHTTPException) -> JSONResponse:
    """A framework HTTPException (404 unknown route, 405 …) in our `{"error": …}` shape."""
    return JSONResponse(
        {"error": str(exc.detail) if exc.detail else "error"}, status_code=exc.status_code, headers=exc.headers
    )
