"""A second tool named lookup_order (loses: sorted later) and a re-export of the first (deduped)."""

from typing import Any

from fixture_tools.a_orders import ShipOrder, lookup_order  # noqa: F401  # re-exports: collected once

from agora_agent.tools.authoring import tool


@tool(name="lookup_order")
async def lookup_order_v2(order_id: int) -> dict[str, Any]:
    """Look up an order (the duplicate)."""
    return {"order_id": order_id, "source": "c_dupes"}
