"""A module that fails to import: discovery must log it and go on."""

from agora_agent.tools.authoring import tool


@tool
async def never_registered() -> str:
    """Defined before the failure, but the module never finishes importing."""
    return "no"


raise RuntimeError("b_broken exploded at import time")
