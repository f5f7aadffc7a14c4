"""The testing kit: scripted models and helpers, runnable offline."""

from agora_agent.testing.fake_model import FakeModel, ScriptedTurn, ToolCallRequest, echo_script, sequence_script
from agora_agent.testing.helpers import RunFrames, collect_frames, wait_for_tool_status

__all__ = [
    "FakeModel",
    "RunFrames",
    "ScriptedTurn",
    "ToolCallRequest",
    "collect_frames",
    "echo_script",
    "sequence_script",
    "wait_for_tool_status",
]
