"""The HTTP layer: `agent_router(config)` for any FastAPI app, `create_app(config)` for a ready one.

Routes, status codes and the SSE envelope follow the reference implementation (see docs/http.md).
"""

from agora_agent.web.app import create_app
from agora_agent.web.router import AgentRouter, agent_router

__all__ = ["AgentRouter", "agent_router", "create_app"]
