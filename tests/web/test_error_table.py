"""The one error table: every agora-agent error type has its HTTP status; 5xx bodies say nothing unless debug."""

from __future__ import annotations

import json

import pytest

from agora_agent.errors import (
    ConfigurationError,
    ConflictError,
    ForbiddenError,
    InvalidRequestError,
    ModelError,
    NotFoundError,
    QuotaExceededError,
    StoreError,
    ToolForbiddenError,
    UnauthenticatedError,
)
from agora_agent.web.errors import RequestTooLargeError, error_response, status_for


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (UnauthenticatedError("x"), 401),
        (ForbiddenError("x"), 403),
        (NotFoundError("x"), 404),
        (ConflictError("x"), 409),
        (RequestTooLargeError("x"), 413),
        (InvalidRequestError("x"), 422),
        (QuotaExceededError("x"), 429),
        (ToolForbiddenError("t"), 403),
        (ModelError("x"), 502),
        (StoreError("x"), 503),
        (ConfigurationError("x"), 500),
        (RuntimeError("x"), 500),
    ],
)
def test_status_table(exc: Exception, status: int) -> None:
    assert status_for(exc) == status


def test_bodies() -> None:
    conflict = error_response(ConflictError("tool call already approved", detail={"status": "approved"}))
    assert json.loads(conflict.body) == {"error": "tool call already approved", "detail": {"status": "approved"}}
    assert json.loads(error_response(UnauthenticatedError("missing x-actor-id header")).body) == {
        "error": "unauthorized"
    }
    assert json.loads(error_response(UnauthenticatedError("missing x-actor-id header"), debug=True).body) == {
        "error": "missing x-actor-id header"
    }
    store_down = json.loads(error_response(StoreError("password=hunter2 rejected")).body)  # 503: retry, no detail
    assert store_down == {"error": "the agent store is unavailable right now; try again shortly"}
