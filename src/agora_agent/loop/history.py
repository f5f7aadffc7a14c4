"""A thread's history as the model sees it, kept between runs so a long thread costs what a short one does.

Past turns never change: a message is written once, and a tool call's result once it is final. So the
rendered prefix of a thread — every message up to the last one whose tool calls all have a final result —
is kept per thread (`HistoryCache`), and the next run asks the store only for what came after it
(`store.load_thread(thread_id, after=<last kept message id>)`). That is correct across processes (another
worker's appends are simply "after"); a truncation that removes the kept message makes the store return the
whole thread again, and the prefix is rebuilt. Calls still `started` or `pending_approval` are never kept:
their rows change when they finish (or when recovery marks them), and they are rendered afresh each time.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from agora_agent.governance.quota import Reservation
from agora_agent.loop._state import serialize_output
from agora_agent.messages import ModelMessage, ToolCall, ToolResult
from agora_agent.records import MessageRecord, ToolCallRecord
from agora_agent.stores.base import AgentStore, NewMessage, QuotaReserve

__all__ = ["History", "HistoryCache", "has_attachments", "load_history"]

FINAL_STATUSES = frozenset({"executed", "failed", "rejected", "expired", "unknown_after_crash"})
"""Tool-call statuses after which the row (and so the rendered result) no longer changes."""


@dataclass(frozen=True, slots=True)
class _Kept:
    anchor: str  # id of the last message of the kept prefix
    prefix: tuple[ModelMessage, ...]
    attachments: bool = False  # whether a message of the prefix carries an attachment


class History(list[ModelMessage]):
    """A thread's history as model messages (a fresh list the caller may extend), knowing whether any of
    them carries an attachment without looking at each (a long thread's steps stay O(1) there)."""

    __slots__ = ("attachments",)

    def __init__(self, messages: Sequence[ModelMessage], *, attachments: bool) -> None:
        super().__init__(messages)
        self.attachments = attachments


def has_attachments(messages: Sequence[ModelMessage]) -> bool:
    """Whether a message carries an attachment: a `History` knows, any other sequence is looked through."""
    if isinstance(messages, History):
        return messages.attachments
    return any(m.attachments for m in messages)


class HistoryCache:
    """The rendered, final prefix of recently used threads (least recently used evicted past `max_threads`)."""

    def __init__(self, max_threads: int = 1024) -> None:
        self.max_threads = max_threads
        self._kept: OrderedDict[str, _Kept] = OrderedDict()

    def get(self, thread_id: str) -> _Kept | None:
        kept = self._kept.get(thread_id)
        if kept is not None:
            self._kept.move_to_end(thread_id)
        return kept

    def put(self, thread_id: str, kept: _Kept) -> None:
        self._kept[thread_id] = kept
        self._kept.move_to_end(thread_id)
        while len(self._kept) > self.max_threads:
            self._kept.popitem(last=False)

    def forget(self, thread_id: str) -> None:
        self._kept.pop(thread_id, None)


async def load_history(
    store: AgentStore,
    thread_id: str,
    cache: HistoryCache | None = None,
    *,
    append: NewMessage | None = None,
    reserve: QuotaReserve | None = None,
) -> tuple[str, History, Reservation | None]:
    """The thread's title, its history as model messages (each tool call followed by its persisted result) and
    the reservation `reserve` asked for when the store granted it in the same call (else None: take it).

    `append`: a message of the thread written first, in the same store call (`store.append_and_load`);
    `reserve` with it: the first model call's reservation, in that call too where the store can
    (`append_load_and_reserve`, the SQL stores: one commit for the three)."""
    kept = cache.get(thread_id) if cache is not None else None
    after = kept.anchor if kept is not None else None
    reservation: Reservation | None = None
    fused = getattr(store, "append_load_and_reserve", None) if append is not None and reserve is not None else None
    if append is None:
        loaded = await store.load_thread(thread_id, after=after)
    elif fused is not None:
        loaded, reservation = await fused(append, reserve, after=after)
    else:
        loaded = await store.append_and_load(append, after=after)
    reuse = kept is not None and not loaded.complete
    base = kept.prefix if kept is not None and reuse else ()
    base_attachments = kept.attachments if kept is not None and reuse else False
    rendered, stable, anchor = _render(loaded.messages, loaded.tool_calls)
    stable_attached = base_attachments or any(m.attachments for m in rendered[:stable])
    if cache is not None:
        if anchor is not None:
            prefix = (*base, *rendered[:stable])
            cache.put(thread_id, _Kept(anchor=anchor, prefix=prefix, attachments=stable_attached))
        elif loaded.complete:
            cache.forget(thread_id)
    title = loaded.thread.title if loaded.thread is not None else ""
    attached = stable_attached or any(m.attachments for m in rendered[stable:])
    history = History(base, attachments=attached)
    history.extend(rendered)
    return title, history, reservation


def _render(
    records: Sequence[MessageRecord], calls: Sequence[ToolCallRecord]
) -> tuple[list[ModelMessage], int, str | None]:
    """Model messages for `records`, how many of them are final, and the id of the last final record."""
    by_id = {(c.run_id, c.id): c for c in calls}
    history: list[ModelMessage] = []
    stable = 0
    anchor: str | None = None
    settled = True  # every record so far is final: the prefix may grow
    for m in records:
        if m.role == "user":
            history.append(ModelMessage(role="user", content=m.content, attachments=tuple(m.attachments or ())))
        else:
            tool_calls = tuple(m.tool_calls or ())
            history.append(ModelMessage(role="assistant", content=m.content, tool_calls=tool_calls))
            if tool_calls:
                rows = [by_id.get((m.run_id or "", call.id)) for call in tool_calls]
                results = tuple(_result_from_row(call, row) for call, row in zip(tool_calls, rows, strict=True))
                history.append(ModelMessage(role="tool", tool_results=results))
                settled = settled and all(row is not None and row.status in FINAL_STATUSES for row in rows)
        if settled:
            stable, anchor = len(history), m.id
    return history, stable, anchor


UNKNOWN_OUTCOME = {
    "outcome": "unknown",
    "reason": "the server stopped while this call was executing; it may or may not have taken effect",
    "instruction": "do not retry it blindly: tell the user, and check the result before trying again",
}
"""What the model is told about an `unknown_after_crash` call (never "rejected", which invites a retry)."""


def _result_from_row(call: ToolCall, row: ToolCallRecord | None) -> ToolResult:
    if row is not None and row.status == "unknown_after_crash":
        content = serialize_output(UNKNOWN_OUTCOME)
        return ToolResult(tool_call_id=call.id, name=call.name, content=content, is_error=True)
    if row is None or row.status in ("started", "pending_approval"):
        return ToolResult(tool_call_id=call.id, name=call.name, content="no result was recorded", is_error=True)
    if row.status in ("rejected", "expired"):
        payload = {"rejected": True, "reason": row.error or "rejected by user"}
        return ToolResult(tool_call_id=call.id, name=call.name, content=serialize_output(payload), is_error=True)
    if row.error is not None:
        return ToolResult(tool_call_id=call.id, name=call.name, content=row.error, is_error=True)
    return ToolResult(tool_call_id=call.id, name=call.name, content=serialize_output(row.output))
