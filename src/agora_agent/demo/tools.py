"""The demo's tools over the shop: read tools, an action that needs approval, presenting tools.

Every tool scopes its work to the caller's tenant (`ctx.actor.tenant_ref`; an actor without a
tenant — the demo's admin — sees every tenant). Ids the model supplies are never trusted to cross
that boundary: an order of another tenant is "not found".
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import Field
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from agora_agent.errors import ToolExecutionError
from agora_agent.genui import Presentation, table
from agora_agent.tools.authoring import FunctionTool, tool
from agora_agent.tools.context import ToolContext

__all__ = ["REFUND_ROLES", "shop_tools"]

REFUND_ROLES = ("support", "admin")

_ORDER_SELECT = (
    "SELECT o.id, o.tenant, c.name AS customer, p.name AS product, o.quantity, o.total, o.status, o.ordered_at "
    "FROM orders o JOIN customers c ON c.id = o.customer_id JOIN products p ON p.id = o.product_id"
)


def _scope(ctx: ToolContext, alias: str = "o") -> tuple[str, dict[str, Any]]:
    tenant = ctx.actor.tenant_ref
    if tenant is None:
        return "1 = 1", {}
    return f"{alias}.tenant = :tenant", {"tenant": tenant}


def _orders_table(output: dict[str, Any], ctx: ToolContext) -> Presentation:
    """`show_orders` presents its rows as a table; the model gets only the count and the ids."""
    columns = [
        ("id", "Order"),
        ("customer", "Customer"),
        ("product", "Product"),
        ("quantity", "Qty"),
        ("total", "Total ($)"),
        ("status", "Status"),
        ("ordered_at", "Ordered"),
    ]
    return table(output["rows"], columns=columns, title=output["title"])


def shop_tools(engine: AsyncEngine, *, chart_delay: float = 0.5) -> list[FunctionTool]:
    """The shop tools bound to `engine` (the shop database): show_orders, lookup_order, refund_order, sales_chart.

    `show_orders` presents a table; `sales_chart` shows a loading chart for `chart_delay` seconds first.
    """

    @tool(present=_orders_table)
    async def show_orders(
        ctx: ToolContext,
        status: Annotated[
            Literal["paid", "shipped", "refunded"] | None, Field(description="Only orders in this status.")
        ] = None,
    ) -> dict[str, Any]:
        """List the orders the caller may see (their tenant), newest first, and show them as a table."""
        where, params = _scope(ctx)
        if status:
            where += " AND o.status = :status"
            params["status"] = status
        async with engine.connect() as conn:
            result = await conn.execute(text(f"{_ORDER_SELECT} WHERE {where} ORDER BY o.ordered_at DESC"), params)
            rows = [dict(r._mapping) for r in result]
        return {
            "count": len(rows),
            "order_ids": [r["id"] for r in rows],
            "title": f"Orders{f' ({status})' if status else ''} — {ctx.actor.tenant_ref or 'all tenants'}",
            "rows": [{**r, "ordered_at": str(r["ordered_at"])[:16].replace("T", " ")} for r in rows],
        }

    @tool
    async def lookup_order(
        ctx: ToolContext, order_id: Annotated[int, Field(description="The order number, e.g. 1001.")]
    ) -> dict[str, Any]:
        """Look up one order of the caller's tenant by its number."""
        where, params = _scope(ctx)
        async with engine.connect() as conn:
            row = (
                await conn.execute(text(f"{_ORDER_SELECT} WHERE o.id = :id AND {where}"), {**params, "id": order_id})
            ).first()
        if row is None:
            return {"found": False, "message": f"There is no order {order_id} that you can see."}
        return {"found": True, **dict(row._mapping)}

    @tool(kind="action", roles=REFUND_ROLES)
    async def refund_order(
        ctx: ToolContext,
        order_id: Annotated[int, Field(description="The order to refund, e.g. 1001.")],
        reason: Annotated[str, Field(min_length=1, max_length=500, description="Why the order is refunded.")],
    ) -> dict[str, Any]:
        """Refund an order of the caller's tenant in full (marks it refunded). Needs a human's approval."""
        where, params = _scope(ctx)
        key = ctx.idempotency_key
        async with engine.begin() as conn:
            row = (
                await conn.execute(
                    text(f"SELECT o.id, o.total, o.status, o.refund_key FROM orders o WHERE o.id = :id AND {where}"),
                    {**params, "id": order_id},
                )
            ).first()
            if row is None:
                raise ToolExecutionError("refund_order", f"order {order_id} does not exist in your tenant")
            if row.status == "refunded":
                if key is not None and row.refund_key == key:  # the same call re-executed (retry or recovery)
                    return {"order_id": order_id, "refunded_amount": row.total, "status": "refunded"}
                raise ToolExecutionError("refund_order", f"order {order_id} is already refunded")
            await conn.execute(
                text(
                    "UPDATE orders SET status = 'refunded', refunded_at = :at, refund_reason = :reason, "
                    "refunded_by = :by, refund_key = :key WHERE id = :id"
                ),
                {"at": datetime.now(UTC).isoformat(), "reason": reason, "by": ctx.actor.id, "key": key, "id": order_id},
            )
        return {"order_id": order_id, "refunded_amount": row.total, "status": "refunded"}

    @tool
    async def sales_chart(
        ctx: ToolContext,
        group_by: Annotated[Literal["product", "day"], Field(description="Bars per product or per day.")] = "product",
    ) -> dict[str, Any]:
        """Chart the caller's tenant's sales (refunds excluded), per product or per day."""
        chart_id = await ctx.emit_ui("Chart", {"state": "loading"})  # a skeleton while the numbers come
        await asyncio.sleep(chart_delay)
        where, params = _scope(ctx)
        label = "p.name" if group_by == "product" else "substr(o.ordered_at, 1, 10)"
        sql = (
            f"SELECT {label} AS label, ROUND(SUM(o.total), 2) AS revenue, SUM(o.quantity) AS units "
            f"FROM orders o JOIN products p ON p.id = o.product_id "
            f"WHERE o.status <> 'refunded' AND {where} GROUP BY label ORDER BY label"
        )
        async with engine.connect() as conn:
            rows = [dict(r._mapping) for r in await conn.execute(text(sql), params)]
        data = {
            "title": f"Revenue by {group_by} — {ctx.actor.tenant_ref or 'all tenants'}",
            "type": "bar",
            "labels": [str(r["label"]) for r in rows],
            "series": [{"name": "revenue ($)", "values": [float(r["revenue"] or 0) for r in rows]}],
        }
        await ctx.emit_ui("Chart", data, id=chart_id)
        return {"group_by": group_by, "rows": rows}

    tools: Sequence[FunctionTool] = (show_orders, lookup_order, refund_order, sales_chart)
    return list(tools)
