"""`AgentClient`: the HTTP API from Python (async, httpx2), with SSE decoding and re-attach.

    async with AgentClient("http://127.0.0.1:8000", headers={"x-actor-id": "alice"}) as client:
        async for frame in client.chat("refund order 1001"):
            if isinstance(frame, TextFrame):
                print(frame.delta, end="")
            elif isinstance(frame, ToolFrame) and frame.status == "pending_approval":
                await client.approve(run_id, frame.tool_call_id)

A dropped stream (connection lost, or the body ending without `done`) is re-attached with
`GET /chat/{runId}/stream` and `Last-Event-ID` = the last frame id seen, after a backoff
(`ResumePolicy`, like the reference client's): no frame is yielded twice. Every non-2xx
answer raises `AgentHTTPError(status, body)`; an exhausted re-attach budget raises
`ChatDisconnectedError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import httpx2

from agora_agent.client.frames import ClientFrame, DoneFrame, MetaFrame, decode_frame

__all__ = ["AgentClient", "AgentHTTPError", "ChatDisconnectedError", "ResumePolicy"]


class AgentHTTPError(Exception):
    """The server answered a non-2xx status. `body` is the decoded JSON (`{"error": …}`) or the raw text."""

    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.body = body
        message = body.get("error") if isinstance(body, dict) else None
        super().__init__(f"HTTP {status}: {message or body}")

    @property
    def message(self) -> str:
        """The server's `error` message (or the raw body)."""
        return str(self.body.get("error") if isinstance(self.body, dict) else self.body)


class ChatDisconnectedError(Exception):
    """The stream dropped and every re-attach attempt failed. Call `resume(run_id, after=last_event_id)` later."""

    def __init__(
        self, run_id: str | None, thread_id: str | None, last_event_id: int | None, cause: BaseException | None
    ):
        self.run_id = run_id
        self.thread_id = thread_id
        self.last_event_id = last_event_id
        super().__init__(f"lost the stream of run {run_id} after frame {last_event_id}: {cause!r}")


@dataclass(frozen=True, kw_only=True)
class ResumePolicy:
    """Re-attach budget: `max_attempts` tries in a row, waiting `backoff(n)` seconds before try n (1-based).

    A successful re-attach resets the count. Default: 6 tries, min(0.4·n, 3) s.
    """

    max_attempts: int = 6
    backoff: Callable[[int], float] = lambda n: min(0.4 * n, 3.0)


class _StreamState:
    def __init__(self) -> None:
        self.run_id: str | None = None
        self.thread_id: str | None = None
        self.last_id: int | None = None
        self.done = False
        self.meta_sent = False


class AgentClient:
    """Async client of one agora-agent server. See the module docstring.

    - `base_url`: the server (`http://host:port`); `path`: the agent prefix (default `/agent`).
    - `headers`: sent on every request (identity headers, a bearer token …); `get_headers()` is called
      per request for values that change (fresh tokens).
    - `resume`: the re-attach policy, or None to raise on the first drop.
    - `stream_read_timeout`: seconds without a byte (the server pings every 15 s) before a stream
      counts as dropped.
    - `transport`: an httpx2 transport (e.g. `httpx2.ASGITransport(app)` in tests).
    """

    def __init__(
        self,
        base_url: str,
        *,
        path: str = "/agent",
        headers: Mapping[str, str] | None = None,
        get_headers: Callable[[], Mapping[str, str]] | None = None,
        resume: ResumePolicy | None = ResumePolicy(),
        timeout: float = 30.0,
        stream_read_timeout: float = 60.0,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        prefix = "/" + path.strip("/") if path.strip("/") else ""
        self._http = httpx2.AsyncClient(
            base_url=base_url.rstrip("/") + prefix, headers=dict(headers or {}), timeout=timeout, transport=transport
        )
        self._get_headers = get_headers
        self._resume = resume
        self._stream_timeout = httpx2.Timeout(timeout, read=stream_read_timeout)

    async def __aenter__(self) -> AgentClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    # -- plumbing ------------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        return dict(self._get_headers()) if self._get_headers else {}

    async def _request(self, method: str, url: str, **kwargs: Any) -> Any:
        response = await self._http.request(method, url, headers=self._headers(), **kwargs)
        if response.status_code >= 400:
            raise AgentHTTPError(response.status_code, _body(response))
        return response.json() if response.content else None

    # -- chat ----------------------------------------------------------------------------------------

    async def chat(
        self,
        message: str,
        *,
        thread_id: str | None = None,
        agent: str | None = None,
        persona: str | None = None,
        page_context: Mapping[str, Any] | None = None,
        attachments: Sequence[Mapping[str, Any]] | None = None,
    ) -> AsyncIterator[ClientFrame]:
        """Start a run and yield its frames: `MetaFrame` first, `DoneFrame` last.

        Raises `AgentHTTPError` when the server refuses to start (401, 404, 422, 429 …) and
        `ChatDisconnectedError` when a dropped stream cannot be re-attached.
        """
        body: dict[str, Any] = {"message": message}
        for key, value in (
            ("threadId", thread_id),
            ("agent", agent),
            ("persona", persona),
            ("pageContext", dict(page_context) if page_context is not None else None),
            ("attachments", [dict(a) for a in attachments] if attachments is not None else None),
        ):
            if value is not None:
                body[key] = value
        state = _StreamState()
        try:
            async for frame in self._consume(state, "POST", "/chat", json=body):
                yield frame
        except httpx2.TransportError as exc:
            if state.run_id is None:
                raise
            cause: BaseException | None = exc
        else:
            if state.done:
                return
            cause = None
        async for frame in self._reattach(state, cause):
            yield frame

    async def resume(self, run_id: str, *, after: int | None = None) -> AsyncIterator[ClientFrame]:
        """Follow an existing run: frames after id `after` (all when None), then live ones."""
        state = _StreamState()
        state.run_id, state.last_id = run_id, after
        try:
            async for frame in self._consume(state, "GET", f"/chat/{run_id}/stream"):
                yield frame
        except httpx2.TransportError as exc:
            cause: BaseException | None = exc
        else:
            if state.done:
                return
            cause = None
        async for frame in self._reattach(state, cause):
            yield frame

    async def _reattach(self, state: _StreamState, cause: BaseException | None) -> AsyncIterator[ClientFrame]:
        policy = self._resume
        attempt = 0
        while not state.done:
            attempt += 1
            if policy is None or attempt > policy.max_attempts:
                raise ChatDisconnectedError(state.run_id, state.thread_id, state.last_id, cause)
            await asyncio.sleep(policy.backoff(attempt))
            try:
                async for frame in self._consume(state, "GET", f"/chat/{state.run_id}/stream"):
                    attempt = 0  # a live stream again: the budget starts over
                    yield frame
            except AgentHTTPError as exc:
                if exc.status in (401, 403, 404, 422):
                    raise  # the run is gone or not ours: retrying cannot help
                cause = exc
            except httpx2.TransportError as exc:
                cause = exc

    async def _consume(self, state: _StreamState, method: str, url: str, **kwargs: Any) -> AsyncIterator[ClientFrame]:
        headers = self._headers()
        if state.last_id is not None:
            headers["Last-Event-ID"] = str(state.last_id)
        async with self._http.sse(
            url, method=method, headers=headers, timeout=self._stream_timeout, **kwargs
        ) as source:
            response = source.response
            if response.status_code >= 400:
                await response.aread()
                raise AgentHTTPError(response.status_code, _body(response))
            state.run_id = state.run_id or response.headers.get("x-agent-run-id")
            state.thread_id = state.thread_id or response.headers.get("x-agent-thread-id")
            async for sse in source:
                frame = decode_frame(sse.event, sse.data)
                if frame is None:
                    continue
                if isinstance(frame, MetaFrame):
                    state.run_id = frame.run_id
                    state.thread_id = frame.thread_id or state.thread_id
                    if state.meta_sent:
                        continue  # re-attach: the caller already has it
                    state.meta_sent = True
                    frame = MetaFrame(frame.run_id, state.thread_id)
                elif isinstance(frame, DoneFrame):
                    state.done = True
                elif sse.id:
                    frame_id = int(sse.id) if sse.id.isdigit() else None
                    if frame_id is not None:
                        if state.last_id is not None and frame_id <= state.last_id:
                            continue  # already delivered before the drop
                        state.last_id = frame_id
                yield frame
                if state.done:
                    return

    # -- approvals, runs -----------------------------------------------------------------------------

    async def approve(self, run_id: str, tool_call_id: str) -> dict[str, Any]:
        """Approve a pending action. 404 unknown, 409 already decided (`body["detail"]`), 403 not yours."""
        result: dict[str, Any] = await self._request(
            "POST", "/tool-call/approve", json={"runId": run_id, "toolCallId": tool_call_id}
        )
        return result

    async def reject(self, run_id: str, tool_call_id: str, *, reason: str | None = None) -> dict[str, Any]:
        """Reject a pending action; `reason` reaches the model."""
        body: dict[str, Any] = {"runId": run_id, "toolCallId": tool_call_id}
        if reason is not None:
            body["reason"] = reason
        result: dict[str, Any] = await self._request("POST", "/tool-call/reject", json=body)
        return result

    async def cancel(self, run_id: str) -> dict[str, Any]:
        """Cancel a run: `{"aborted": true, "cancelled": <whether this call ended it>}`."""
        result: dict[str, Any] = await self._request("POST", f"/chat/{run_id}/cancel")
        return result

    # -- threads, quota ------------------------------------------------------------------------------

    async def threads(self) -> list[dict[str, Any]]:
        """The caller's threads, newest first."""
        result: list[dict[str, Any]] = await self._request("GET", "/threads")
        return result

    async def thread(self, thread_id: str) -> dict[str, Any]:
        """A thread with its messages and tool calls."""
        result: dict[str, Any] = await self._request("GET", f"/threads/{thread_id}")
        return result

    async def delete_thread(self, thread_id: str) -> None:
        """Soft-delete a thread."""
        await self._request("DELETE", f"/threads/{thread_id}")

    async def fork_thread(self, thread_id: str, message_id: str) -> dict[str, Any]:
        """A new thread with the messages up to and including `message_id`."""
        result: dict[str, Any] = await self._request("POST", f"/threads/{thread_id}/fork-from/{message_id}")
        return result

    async def personas(self, agent: str | None = None) -> list[dict[str, Any]]:
        """`[{id, label}]` of an agent's personas."""
        result: list[dict[str, Any]] = await self._request(
            "GET", "/threads/personas/catalog", params={"agent": agent} if agent else None
        )
        return result

    async def quota_today(self) -> dict[str, Any]:
        """`{day, usedTokens, limitTokens?, usedUsd?, limitUsd?}` for the caller."""
        result: dict[str, Any] = await self._request("GET", "/quota/today")
        return result

    async def upload(self, filename: str, data: bytes, content_type: str) -> dict[str, Any]:
        """Stage a file; pass the result in `chat(attachments=[...])`."""
        result: dict[str, Any] = await self._request(
            "POST", "/attachments", files={"file": (filename, data, content_type)}
        )
        return result

    # -- governance ----------------------------------------------------------------------------------

    async def my_approvals(self, *, limit: int | None = None) -> list[dict[str, Any]]:
        """The caller's own pending approvals (needs only governance queries on the server)."""
        result: list[dict[str, Any]] = await self._request("GET", "/approvals/mine", params=_params(limit=limit))
        return result

    async def governance(self, path: str, **params: Any) -> Any:
        """Any `GET governance/<path>` (e.g. `"runs"`, `"spend/model"`), params snake_case or reference names.

        `from_`/`to` accept dates. Needs the governance gate to pass.
        """
        return await self._request("GET", "/governance/" + path.strip("/"), params=_params(**params))

    async def spend_by_model(self, from_: date | None = None, to: date | None = None) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = await self.governance("spend/model", from_=from_, to=to)
        return result

    async def runs(self, **filters: Any) -> dict[str, Any]:
        """`{runs, nextCursor}`; filters: actor, agent, status, from_, to, cursor, limit."""
        result: dict[str, Any] = await self.governance("runs", **filters)
        return result

    async def run_detail(self, run_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.governance(f"runs/{run_id}")
        return result

    async def pending_approvals(self, *, actor: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = await self.governance("approvals/pending", actor=actor, limit=limit)
        return result

    async def set_price(
        self,
        model_id: str,
        input_price_per_1m: float,
        output_price_per_1m: float,
        *,
        cache_write_price_per_1m: float | None = None,
        cache_read_price_per_1m: float | None = None,
    ) -> None:
        """Set a model's current price (USD per million tokens)."""
        body: dict[str, Any] = {
            "modelId": model_id,
            "inputPricePer1m": input_price_per_1m,
            "outputPricePer1m": output_price_per_1m,
        }
        if cache_write_price_per_1m is not None:
            body["cacheWritePricePer1m"] = cache_write_price_per_1m
        if cache_read_price_per_1m is not None:
            body["cacheReadPricePer1m"] = cache_read_price_per_1m
        await self._request("POST", "/governance/pricing", json=body)


def _params(**params: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in params.items():
        if value is None:
            continue
        name = key.rstrip("_")
        out[name] = value.isoformat() if isinstance(value, date) else str(value)
    return out


def _body(response: httpx2.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text
