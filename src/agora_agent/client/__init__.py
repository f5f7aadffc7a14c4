"""Python client of the agora-agent HTTP API (httpx2, async): chat streams with re-attach, approvals, threads.

from agora_agent.client import AgentClient, TextFrame

async with AgentClient("http://127.0.0.1:8000", headers={"x-actor-id": "alice"}) as client:
    async for frame in client.chat("hello"):
        if isinstance(frame, TextFrame):
            print(frame.delta, end="")
"""

from agora_agent.client.agent_client import AgentClient, AgentHTTPError, ChatDisconnectedError, ResumePolicy
from agora_agent.client.frames import ClientFrame, DoneFrame, MetaFrame, decode_frame, parse_sse_text
from agora_agent.streaming.frames import AgentFrame, ComponentFrame, ErrorFrame, TextFrame, ToolFrame

__all__ = [
    "AgentClient",
    "AgentFrame",
    "AgentHTTPError",
    "ChatDisconnectedError",
    "ClientFrame",
    "ComponentFrame",
    "DoneFrame",
    "ErrorFrame",
    "MetaFrame",
    "ResumePolicy",
    "TextFrame",
    "ToolFrame",
    "decode_frame",
    "parse_sse_text",
]
