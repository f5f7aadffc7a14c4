"""The offline demo model: a deterministic `ModelProvider` that maps common requests to tool calls.

It is NOT a language model. It reads the last message, recognises a handful of requests and answers
with the tool call a real model would make, so every governance path of the demo (read tools,
an action that needs approval, components, delegation, a refused tool, a failed run) can be seen
without an API key or a network. Its text streams word by word, like a real model's.

| the user says                              | the demo model calls                          |
|--------------------------------------------|-----------------------------------------------|
| "show my orders" / "refunded orders"       | `show_orders` (presents a DataTable)          |
| "order 1001" / "status of order 1001"      | `lookup_order`                                |
| "refund order 1001 [because …]"            | `refund_order` (an action: needs approval)    |
| "chart sales [by day]"                     | `sales_chart` (presents a Chart)              |
| "ask the analyst <question>"               | `ask_analyst` (delegates to the analyst)      |
| "refund order 1003 and ask the analyst …"  | lookup + refund + ask_analyst in one turn      |
| "sql: SELECT …", "how many customers", "which product sells best", "revenue" | `query_shop` (governed SQL) |
| "search help for <words>"                  | `search_help` (the help centre, access-filtered) |
| a question ("how …?", "what …?")           | answers from the injected help-centre context |
| "tell me a long story"                     | a long streamed answer (try reloading mid-way)|
| "simulate a failure"                       | raises `ModelError` (the run fails)           |
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Sequence
from typing import Any

from agora_agent.errors import ModelError
from agora_agent.messages import ModelMessage, ModelRequest, ModelTurn, ToolCall, ToolResult, Usage
from agora_agent.models.base import TextCallback

__all__ = ["DEMO_MODEL_ID", "LONG_STORY", "DemoModel"]

DEMO_MODEL_ID = "demo-model"

LONG_STORY = (
    "Once upon a time a small shop kept its orders in a SQLite file. Every morning the support team asked the "
    "assistant about yesterday's orders, and every answer went through the same gate: who is asking, which "
    "tenant they belong to, which tools their roles allow. When a customer wanted money back, the assistant "
    "did not simply refund: it asked a human to approve the action first, and the approval, the amount and "
    "the person who decided were written to the audit trail. At the end of each day the governance dashboard "
    "showed what the assistant had cost, which tools it had used and how often a run had failed. "
    "Nobody had to trust the model: they could read what it did. The end."
)

HELP = (
    "I am the offline demo model: deterministic, no API key, no network. Try one of these: "
    '"show my orders", "order 1001", "refund order 1001", "chart sales", '
    '"ask the analyst which product sells best", "how many customers do we have", '
    '"sql: SELECT name, price FROM products", "tell me a long story" or "simulate a failure".'
)

# Shows what the chat page renders — and that nothing a model writes can run in it.
MARKDOWN_SAMPLE = (
    "Here is what I can format:\n\n"
    "| Product | Units | Revenue |\n|---|---:|---:|\n| Rocket Skates | 4 | $596 |\n| Portable Hole | 9 | $359.91 |\n\n"
    "**Bold**, *italic*, `inline code` and a [link](https://example.com/docs).\n\n"
    "```python\nasync def refund(order_id: int) -> None:\n    ...\n```\n\n"
    "- a list item\n- another one\n\n"
    '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> (this markup is removed)'
)
_ATTACHED = "--- attachment: "
_ATTACHMENT_TEXT = re.compile(r"--- attachment: (.+?) \(([^)]+)\) ---\n(.*?)(?=\n\n--- attachment: |\Z)", re.DOTALL)

_REFUND = re.compile(r"\brefund\b\D*?(\d{3,6})")
_ORDER = re.compile(r"\border\s*#?\s*(\d{3,6})")
_ANALYST = re.compile(r"^\s*(?:please\s+)?ask\s+(?:the\s+)?analyst\b[\s,:]*(.*)$", re.IGNORECASE | re.DOTALL)
_SQL = re.compile(r"^\s*sql\s*:\s*(.+)$", re.IGNORECASE | re.DOTALL)
_SEARCH_HELP = re.compile(
    r"^\s*search\s+(?:the\s+)?help(?:\s+cent(?:re|er))?\s*(?:for\b)?[\s:]*(.*)$", re.IGNORECASE | re.DOTALL
)
_QUESTION = re.compile(r"^(how|what|when|where|why|which|who|can|do|does|is|are|should)\b|.*\?$", re.DOTALL)
_CONTEXT_ITEM = re.compile(
    r"^\[1\] (?:\((?P<source>[^)]*)\) )?(?P<text>.*?)(?=\n\n\[2\] |\n</retrieved_context>)", re.S | re.M
)

_BEST_SELLERS = (
    "SELECT p.name AS product, SUM(o.quantity) AS units, ROUND(SUM(o.total), 2) AS revenue "
    "FROM orders o JOIN products p ON p.id = o.product_id WHERE o.status <> 'refunded' "
    "GROUP BY p.name ORDER BY units DESC LIMIT 5"
)
_CUSTOMER_COUNT = "SELECT COUNT(*) AS customers FROM customers"
_REVENUE = "SELECT ROUND(SUM(total), 2) AS revenue, COUNT(*) AS orders FROM orders WHERE status <> 'refunded'"


class DemoModel:
    """A deterministic stand-in for a language model (see the module docstring for what it understands).

    `word_delay` paces the streamed words (seconds); `model_id` is what usage and prices are keyed by.
    Token usage is estimated from the characters sent and produced (about four per token).
    """

    def __init__(self, *, word_delay: float = 0.03, model_id: str = DEMO_MODEL_ID) -> None:
        self.word_delay = word_delay
        self.model_id: str | None = model_id

    async def run_turn(self, request: ModelRequest, on_text: TextCallback) -> ModelTurn:
        """Answer one turn: a tool call for a recognised request, or a summary of the tool results."""
        offered = {t.name for t in request.tools}
        last = request.messages[-1] if request.messages else ModelMessage(role="user", content="")
        calls: list[ToolCall] = []
        if last.role == "tool":
            text = _summarise(last.tool_results)
        elif last.attachments or _ATTACHED in last.content:
            text = _describe_attachments(last)
        else:
            text, calls = self._plan(last.content, offered, request.system)
        for word in _words(text):
            await on_text(word)
            if self.word_delay:
                await asyncio.sleep(self.word_delay)
        return ModelTurn(text=text, tool_calls=tuple(calls), usage=_usage(request, text, calls), model_id=self.model_id)

    def _plan(self, message: str, offered: set[str], system: str = "") -> tuple[str, list[ToolCall]]:
        lowered = message.lower().strip()
        if "simulate a failure" in lowered:
            raise ModelError(
                "the demo model was asked to simulate a failure (this run fails on purpose)", code="simulated_failure"
            )
        if match := _REFUND.search(lowered):
            order_id = int(match.group(1))
            reason = message.split("because", 1)[1].strip(" .") if "because" in lowered else "customer request"
            if "ask the analyst" in lowered:
                # One turn with a read, an action and a delegation: what the run inspector is for.
                task = lowered.split("ask the analyst", 1)[1].strip(" .,") or "Summarise our sales."
                planned: list[tuple[str, dict[str, Any]]] = [
                    ("lookup_order", {"order_id": order_id}),
                    ("refund_order", {"order_id": order_id, "reason": reason}),
                    ("ask_analyst", {"task": task}),
                ]
                missing = [name for name, _ in planned if name not in offered]
                if missing:
                    return _call(offered, missing[0], {}, "")
                preface = f"I will look up order {order_id}, refund it once you approve, and ask the analyst."
                return preface, [ToolCall(id=f"call_{uuid.uuid4().hex[:16]}", name=n, input=a) for n, a in planned]
            return _call(
                offered,
                "refund_order",
                {"order_id": order_id, "reason": reason},
                f"I will refund order {order_id}. This is an action, so it waits for your approval.",
            )
        if match := _ANALYST.match(message):
            task = match.group(1).strip() or "Summarise our sales."
            return _call(offered, "ask_analyst", {"task": task}, "Let me ask the analyst.")
        if "chart" in lowered or "graph" in lowered or "plot" in lowered:
            group_by = "day" if "day" in lowered or "daily" in lowered else "product"
            return _call(offered, "sales_chart", {"group_by": group_by}, f"Here is a chart of sales by {group_by}.")
        if match := _SQL.match(message):
            return _call(offered, "query_shop", {"sql": match.group(1).strip()}, "Running that query.")
        if (
            "sells best" in lowered
            or "best selling" in lowered
            or "best-selling" in lowered
            or "top product" in lowered
        ):
            return _call(offered, "query_shop", {"sql": _BEST_SELLERS}, "Let me query the best sellers.")
        if "how many customers" in lowered:
            return _call(offered, "query_shop", {"sql": _CUSTOMER_COUNT}, "Counting customers.")
        if "revenue" in lowered:
            return _call(offered, "query_shop", {"sql": _REVENUE}, "Summing the revenue.")
        if match := _ORDER.search(lowered):
            order_id = int(match.group(1))
            return _call(offered, "lookup_order", {"order_id": order_id}, f"Looking up order {order_id}.")
        if match := _SEARCH_HELP.match(message):
            query = match.group(1).strip() or message
            return _call(offered, "search_help", {"query": query}, "Searching the help centre.")
        if _QUESTION.match(lowered) and (answer := _from_context(system)):
            return answer, []
        if "order" in lowered:
            status = next((s for s in ("refunded", "shipped", "paid") if s in lowered), None)
            args: dict[str, Any] = {"status": status} if status else {}
            return _call(offered, "show_orders", args, "Here are the orders I can see for you.")
        if "long" in lowered or "story" in lowered:
            return LONG_STORY, []
        if "markdown" in lowered:
            return MARKDOWN_SAMPLE, []
        return HELP, []


def _from_context(system: str) -> str | None:
    """Inject mode: answer with the first passage of the retrieved context, citing it (None without one)."""
    if "<retrieved_context>" not in system:
        return None
    match = _CONTEXT_ITEM.search(system.split("<retrieved_context>\n", 1)[1])
    if match is None:
        return None
    source = f" ({match.group('source')})" if match.group("source") else ""
    return f"From the help centre{source}: {match.group('text').strip()} [1]"


def _describe_attachments(message: ModelMessage) -> str:
    """What the demo model can say about files: their names and kinds, and the start of any text file."""
    lines = ["I received your attachment(s):"]
    for att in message.attachments:
        size = len(att.url.split(",", 1)[-1]) * 3 // 4 if att.url.startswith("data:") else None
        kind = (
            "image" if att.content_type.startswith("image/") else "PDF" if att.content_type.endswith("pdf") else "file"
        )
        lines.append(f"- **{att.name}** ({kind}, {att.content_type}{f', {size:,} bytes' if size else ''})")
    for name, content_type, body in _ATTACHMENT_TEXT.findall(message.content):
        first = " ".join(body.split())[:200]
        lines.append(f"- **{name}** ({content_type}) says: “{first}”")
    lines.append("\nA real model reads images and PDFs too; the offline demo model only lists them.")
    return "\n".join(lines)


def _call(offered: set[str], name: str, args: dict[str, Any], preface: str) -> tuple[str, list[ToolCall]]:
    if name not in offered:
        available = ", ".join(sorted(offered)) or "none"
        return (
            f"I cannot do that here: the tool `{name}` is not offered to you (your roles or persona do not "
            f"allow it). Tools available to you: {available}.",
            [],
        )
    return preface, [ToolCall(id=f"call_{uuid.uuid4().hex[:16]}", name=name, input=args)]


def _parse(content: str) -> Any:
    try:
        return json.loads(content)
    except (TypeError, ValueError):
        return content


def _summarise(results: Sequence[ToolResult]) -> str:
    return " ".join(_summary(r) for r in results) or "Done."


def _summary(result: ToolResult) -> str:
    data = _parse(result.content)
    if result.is_error:
        if "reject" in result.content.lower():
            return f"Understood — `{result.name}` was not carried out: {_text(data)}"
        return f"`{result.name}` failed: {_text(data)}"
    if result.name == "refund_order" and isinstance(data, dict):
        return f"Done: order {data.get('order_id')} is refunded (${data.get('refunded_amount')})."
    if result.name == "show_orders" and isinstance(data, dict):
        return f"You can see {data.get('count', 0)} orders; they are in the table above."
    if result.name == "lookup_order" and isinstance(data, dict):
        if not data.get("found", True):
            return str(data.get("message", "No such order."))
        return (
            f"**Order {data.get('id')}** — {data.get('quantity')} × {data.get('product')} "
            f"for {data.get('customer')}\n\n- Total: **${data.get('total')}**\n- Status: `{data.get('status')}`"
        )
    if result.name == "sales_chart":
        return "The chart above shows the sales."
    if result.name == "query_shop" and isinstance(data, dict):
        rows = data.get("rows") or []
        shown = "; ".join(", ".join(f"{k} {v}" for k, v in row.items()) for row in rows[:5])
        return (
            f"The query returned {data.get('rowCount', data.get('row_count', len(rows)))} row(s): {shown or 'nothing'}."
        )
    if result.name == "search_help" and isinstance(data, dict):
        passages = data.get("passages") or []
        if not passages:
            return "The help centre has nothing on that."
        return "The help centre says: " + " ".join(
            f"[{n}] {p.get('text', '')} ({p.get('source', p.get('id'))})" for n, p in enumerate(passages[:2], 1)
        )
    if result.name.startswith("ask_"):
        answer = data.get("text") if isinstance(data, dict) else data
        return f"The {result.name[4:]} says: {_text(answer)}"
    return f"`{result.name}` returned: {_text(data)[:300]}"


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("error", "reason", "message"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return json.dumps(value, default=str)


def _words(text: str) -> list[str]:
    return re.findall(r"\S+\s*", text)


def _usage(request: ModelRequest, text: str, calls: Sequence[ToolCall]) -> Usage:
    sent = len(request.system) + sum(
        len(m.content)
        + sum(len(r.content) for r in m.tool_results)
        + sum(len(json.dumps(c.input)) for c in m.tool_calls)
        for m in request.messages
    )
    sent += sum(len(t.description) + len(json.dumps(t.input_schema)) for t in request.tools)
    produced = len(text) + sum(len(c.name) + len(json.dumps(c.input)) for c in calls)
    return Usage(input_tokens=max(1, sent // 4), output_tokens=max(1, produced // 4))
