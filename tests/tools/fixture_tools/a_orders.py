"""Order tools: one function tool, one class tool, and things discovery must ignore."""

from __future__ import annotations

from abc import ABC
from typing import Any

from pydantic import BaseModel

from agora_agent.tools.authoring import ActionTool, BaseTool, ReadTool, tool
from agora_agent.tools.context import ToolContext


@tool
async def lookup_order(order_id: int) -> dict[str, Any]:
    """Look up an order (the first tool named lookup_order)."""
    return {"order_id": order_id, "source": "a_orders"}


class ShipInput(BaseModel):
    order_id: int


class ShipOrder(ActionTool):
    """Ship an order."""

    name = "ship_order"
    Input = ShipInput
    roles = ("ops",)

    async def execute(self, input: ShipInput, ctx: ToolContext) -> str:
        return f"shipped {input.order_id}"


class AuditedTool(ReadTool, ABC):
    """An abstract intermediate base: never a tool itself."""

    audited = True


def helper(x: int) -> int:
    """A plain function, not a tool."""
    return x


NOT_A_TOOL = {"spec": "nope"}
__all__ = ["ActionTool", "BaseTool", "ReadTool", "ShipOrder", "lookup_order"]
