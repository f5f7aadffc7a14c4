"""Tools in a nested module: a define_tool object and a bare Tool-protocol object."""

from typing import Any

from pydantic import BaseModel

from agora_agent.tools.authoring import define_tool
from agora_agent.tools.context import ToolContext
from agora_agent.tools.spec import ToolSpec


class Empty(BaseModel):
    pass


def _ping(value: Empty, ctx: ToolContext) -> str:
    return "pong"


ping = define_tool(name="ping", description="Answer pong.", input=Empty, execute=_ping)


class _Echo:
    spec = ToolSpec(name="echo", description="Echo.", kind="read", input_model=Empty)

    async def invoke(self, input: BaseModel, ctx: ToolContext) -> Any:
        return "echo"


echo = _Echo()
