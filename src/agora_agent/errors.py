"""The exception hierarchy, split by who must act.

    AgoraError
    ├── ConfigurationError          developer mistake at start-up (bad config, tool registered twice …)
    ├── ToolError                   a tool call was refused or failed; the message names the tool
    │   ├── ToolNotFoundError       unknown, outside the allow-list, or unavailable (describe())
    │   ├── ToolDisabledError       `enabled` is false right now
    │   ├── ToolForbiddenError      the roles policy / can_use / ability refused the actor
    │   ├── ToolInputInvalidError   the arguments failed validation (every issue listed)
    │   └── ToolExecutionError      the tool raised (wraps the cause)
    ├── RunError                    a run cannot start or go on
    │   ├── QuotaExceededError      a budget would be exceeded (HTTP 429 at chat start)
    │   └── ModelError              the model provider failed (adapters translate vendor errors into it)
    ├── RequestError                something a caller sent is wrong (mapped to 4xx by the web layer)
    │   ├── UnauthenticatedError    no identity (401)
    │   ├── ForbiddenError          identity, but not allowed (403)
    │   ├── NotFoundError           unknown run / thread / agent / tool call (404)
    │   ├── ConflictError           e.g. an approval already decided (409)
    │   └── InvalidRequestError     bad input (422)
    └── StoreError                  persistence failed (database down, missing migration …)

The HTTP status of each request error lives in one table in the web layer.

Every error has a `code`: a short snake_case word a program (or a test) can match on instead of the
message, which is written for people and may be reworded. Each class has its own default code
(`ConfigurationError.code == "configuration"`); a raise site that one caller may need to tell apart from its
siblings gives a specific one (`"missing_api_key"`, `"unknown_agent"`, `"already_decided"` …). A
`ConfigurationError` about one setting names it in `option` (`"max_rows"`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "AgoraError",
    "ConfigurationError",
    "ConflictError",
    "ForbiddenError",
    "InvalidRequestError",
    "ModelError",
    "NotFoundError",
    "QuotaExceededError",
    "RequestError",
    "RunError",
    "StoreError",
    "ToolDisabledError",
    "ToolError",
    "ToolExecutionError",
    "ToolForbiddenError",
    "ToolInputInvalidError",
    "ToolNotFoundError",
    "UnauthenticatedError",
]


class AgoraError(Exception):
    """Base of every error agora-agent raises on purpose. `code` names the case (see the module docstring)."""

    code: str = "error"

    def __init__(self, *args: object, code: str | None = None) -> None:
        super().__init__(*args)
        if code is not None:
            self.code = code


class ConfigurationError(AgoraError):
    """The configuration or the tool set is wrong; fix the code, not the input. `option` names the setting at
    fault when one is (`"max_rows"`, `"empty_roles"`), else None."""

    code = "configuration"

    def __init__(self, message: str, *, code: str | None = None, option: str | None = None) -> None:
        super().__init__(message, code=code)
        self.option = option


class StoreError(AgoraError):
    """Persistence failed (database unreachable, schema missing, …)."""

    code = "store"


class ToolError(AgoraError):
    """A tool call was refused or failed. `tool_name` names the tool; `stage` names the filter-chain stage
    that refused the call (`"allow-list"`, `"enabled"`, `"roles policy"`, `"can_use"`, `"describe"`), when one did.
    """

    code = "tool"
    stage: str | None = None

    def __init__(self, tool_name: str, message: str, *, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.tool_name = tool_name


class ToolNotFoundError(ToolError):
    """The tool is unknown, outside the agent/persona allow-list, or not available to this actor."""

    code = "tool_not_found"

    def __init__(self, tool_name: str, reason: str | None = None) -> None:
        msg = f'Tool "{tool_name}" is not registered'
        if reason:
            msg = f'Tool "{tool_name}" is not available: {reason}'
        super().__init__(tool_name, msg)


class ToolDisabledError(ToolError):
    """The tool exists but its `enabled` flag is off."""

    code = "tool_disabled"

    def __init__(self, tool_name: str) -> None:
        super().__init__(tool_name, f'Tool "{tool_name}" is disabled')


class ToolForbiddenError(ToolError):
    """The roles policy, `can_use` or the ability check refused this actor."""

    code = "tool_forbidden"

    def __init__(self, tool_name: str, reason: str | None = None) -> None:
        msg = f'Tool "{tool_name}" is not allowed for this role'
        if reason:
            msg = f"{msg} ({reason})"
        super().__init__(tool_name, msg)


class ToolInputInvalidError(ToolError):
    """The arguments failed validation; `issues` lists every problem."""

    code = "tool_input_invalid"

    def __init__(self, tool_name: str, issues: Sequence[str]) -> None:
        self.issues = list(issues)
        super().__init__(tool_name, f'Invalid input for tool "{tool_name}": ' + "; ".join(self.issues))


class ToolExecutionError(ToolError):
    """The tool's own code raised; `__cause__` holds the original exception."""

    code = "tool_failed"


class RunError(AgoraError):
    """A run cannot start or continue."""

    code = "run"


class QuotaExceededError(RunError):
    """A token or USD budget would be exceeded. The message gives the value, the limit and the fix; `detail`
    holds the figures under Python names (`scope`, `key`, `limit_tokens`, `used_tokens`, `resets_at` …)."""

    code = "quota_exceeded"

    def __init__(self, message: str = "Daily token quota exceeded", *, detail: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.detail = detail or {}


class ModelError(RunError):
    """The model provider failed. `status` is the provider's HTTP status when there was one."""

    code = "model"

    def __init__(
        self, message: str, *, status: int | None = None, retryable: bool = False, code: str | None = None
    ) -> None:
        from agora_agent.secrets import scrub_secrets

        super().__init__(scrub_secrets(message), code=code)  # a provider's text can echo the key: never keep it
        self.status = status
        self.retryable = retryable


class RequestError(AgoraError):
    """Something the caller sent is wrong; the web layer maps each subclass to one HTTP status."""

    code = "bad_request"

    def __init__(self, message: str, *, detail: Any = None, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.detail = detail


class UnauthenticatedError(RequestError):
    """No identity could be resolved (HTTP 401)."""

    code = "unauthenticated"


class ForbiddenError(RequestError):
    """The caller is known but may not do this (HTTP 403)."""

    code = "forbidden"


class NotFoundError(RequestError):
    """An id-addressed thing does not exist, or is not visible to the caller (HTTP 404)."""

    code = "not_found"


class ConflictError(RequestError):
    """The request conflicts with stored state, e.g. an approval already decided (HTTP 409)."""

    code = "conflict"


class InvalidRequestError(RequestError):
    """The request is malformed (HTTP 422)."""

    code = "invalid_request"
