"""Below a broken package: never reached."""

from agora_agent.tools.authoring import tool


@tool
async def inner_tool() -> str:
    """Unreachable."""
    return "no"
