"""Bounded retries with exponential backoff and full jitter, shared by every model adapter.

Adapters translate vendor failures into `ModelError`; this module only decides whether and when
to try again. A turn is retried only while nothing has been streamed to the caller yet: once a text
delta left the adapter it cannot be taken back, so a later failure is final.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from agora_agent.errors import ConfigurationError, ModelError

__all__ = ["RetryPolicy", "RetryableModelError", "is_retryable_status", "run_with_retries"]

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True, slots=True)
class RetryPolicy:
    """How often and how patiently an adapter retries a failed provider call.

    `max_attempts` counts the first call (1 = never retry). The n-th retry waits a random time in
    `[0, min(max_delay, base_delay * 2**(n-1))]` ("full jitter"), or the provider's `Retry-After`
    when it sent one (capped at `max_delay`). Only 408/409/429/5xx, timeouts and connection errors
    are retried.
    """

    max_attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigurationError(
                f"RetryPolicy.max_attempts must be at least 1, got {self.max_attempts}", option="max_attempts"
            )
        if self.base_delay < 0 or self.max_delay < 0:
            raise ConfigurationError(
                f"RetryPolicy delays must be >= 0, got base_delay={self.base_delay}, max_delay={self.max_delay}"
            )

    def delay(self, retry_number: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry `retry_number` (1-based)."""
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_delay)
        ceiling = min(self.max_delay, self.base_delay * (2 ** (retry_number - 1)))
        return random.uniform(0, ceiling)


class RetryableModelError(ModelError):
    """A `ModelError` worth retrying; `retry_after` is the provider's hint in seconds, if any."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None, code: str | None = None
    ) -> None:
        super().__init__(message, status=status, retryable=True, code=code)
        self.retry_after = retry_after


def is_retryable_status(status: int) -> bool:
    """408 request timeout, 409 lock conflict, 429 rate limit and every 5xx (including Anthropic's 529)."""
    return status in (408, 409, 429) or status >= 500


def parse_retry_after(value: str | None) -> float | None:
    """`Retry-After` in seconds (numeric form only; an HTTP date is ignored and backoff applies)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


async def run_with_retries(policy: RetryPolicy, attempt: Callable[[], Awaitable[T]]) -> T:
    """Call `attempt` until it succeeds, raises a non-retryable error, or attempts run out.

    Raises the last `ModelError`; when attempts ran out its message says how many were made.
    Cancellation is never swallowed: a cancel during a backoff sleep propagates at once.
    """
    for number in range(1, policy.max_attempts + 1):
        try:
            return await attempt()
        except ModelError as exc:
            if not exc.retryable:
                raise
            if number == policy.max_attempts:
                if policy.max_attempts > 1:
                    raise ModelError(
                        f"{exc} (gave up after {number} attempts; raise RetryPolicy.max_attempts to keep trying)",
                        status=exc.status,
                        retryable=True,
                        code=exc.code,  # why it failed; the message says how often it was tried
                    ) from exc
                raise
            hint = exc.retry_after if isinstance(exc, RetryableModelError) else None
            await asyncio.sleep(policy.delay(number, hint))
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover
