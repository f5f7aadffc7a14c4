"""agora-agent: a governed, durable AI agent for Python web applications.

The public API, grouped by topic. Everything else lives in submodules (`agora_agent.web`,
`agora_agent.stores.sql`, `agora_agent.models`, `agora_agent.tools.sql`, `agora_agent.testing` …).

The ground floor (`errors`, `__version__`) is imported with the package; every other name on first use
(PEP 562), so `import agora_agent.cli` (the `agora-agent` command) or `agora_agent.errors` does not load the
agent loop, the service and the model adapters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agora_agent._lazy import lazy_exports
from agora_agent._version import __version__
from agora_agent.errors import (
    AgoraError,
    ConfigurationError,
    ConflictError,
    ForbiddenError,
    InvalidRequestError,
    ModelError,
    NotFoundError,
    QuotaExceededError,
    ToolDisabledError,
    ToolError,
    ToolForbiddenError,
    ToolInputInvalidError,
    ToolNotFoundError,
    UnauthenticatedError,
)

if TYPE_CHECKING:
    from agora_agent.actors import (
        Actor,
        ActorResolver,
        CallableActorResolver,
        HeaderActorResolver,
        UnconfiguredActorResolver,
    )
    from agora_agent.agents import AgentDefinition, Delegation, Persona, PromptContext
    from agora_agent.config import AgentConfig, DashboardConfig
    from agora_agent.governance.gate import Caller, GovernanceScope, evaluate_governance_gate
    from agora_agent.governance.ownership import evaluate_ownership
    from agora_agent.governance.policy import AbilityPolicy, ClosedRolesPolicy, DefaultRolesPolicy
    from agora_agent.governance.pricing import ModelPrice, estimate_cost
    from agora_agent.governance.quota import Budget
    from agora_agent.loop import run_agent_loop
    from agora_agent.service import AgentService, ChatStarted
    from agora_agent.tools.authoring import ActionTool, BaseTool, ReadTool, define_tool, tool
    from agora_agent.tools.context import ToolContext
    from agora_agent.tools.retry import TransientRetry
    from agora_agent.tools.spec import RolesPolicy

__all__ = [
    "AbilityPolicy",
    "ActionTool",
    "Actor",
    "ActorResolver",
    "AgentConfig",
    "AgentDefinition",
    "AgentService",
    "AgoraError",
    "BaseTool",
    "Budget",
    "CallableActorResolver",
    "Caller",
    "ChatStarted",
    "ClosedRolesPolicy",
    "ConfigurationError",
    "ConflictError",
    "DashboardConfig",
    "DefaultRolesPolicy",
    "Delegation",
    "ForbiddenError",
    "GovernanceScope",
    "HeaderActorResolver",
    "InvalidRequestError",
    "ModelError",
    "ModelPrice",
    "NotFoundError",
    "Persona",
    "PromptContext",
    "QuotaExceededError",
    "ReadTool",
    "RolesPolicy",
    "ToolContext",
    "ToolDisabledError",
    "ToolError",
    "ToolForbiddenError",
    "ToolInputInvalidError",
    "ToolNotFoundError",
    "TransientRetry",
    "UnauthenticatedError",
    "UnconfiguredActorResolver",
    "__version__",
    "define_tool",
    "estimate_cost",
    "evaluate_governance_gate",
    "evaluate_ownership",
    "run_agent_loop",
    "tool",
]

_MODULE_OF = {
    "AbilityPolicy": "agora_agent.governance.policy",
    "ActionTool": "agora_agent.tools.authoring",
    "Actor": "agora_agent.actors",
    "ActorResolver": "agora_agent.actors",
    "AgentConfig": "agora_agent.config",
    "AgentDefinition": "agora_agent.agents",
    "AgentService": "agora_agent.service",
    "BaseTool": "agora_agent.tools.authoring",
    "Budget": "agora_agent.governance.quota",
    "CallableActorResolver": "agora_agent.actors",
    "Caller": "agora_agent.governance.gate",
    "ChatStarted": "agora_agent.service",
    "ClosedRolesPolicy": "agora_agent.governance.policy",
    "DashboardConfig": "agora_agent.config",
    "DefaultRolesPolicy": "agora_agent.governance.policy",
    "Delegation": "agora_agent.agents",
    "GovernanceScope": "agora_agent.governance.gate",
    "HeaderActorResolver": "agora_agent.actors",
    "ModelPrice": "agora_agent.governance.pricing",
    "Persona": "agora_agent.agents",
    "PromptContext": "agora_agent.agents",
    "ReadTool": "agora_agent.tools.authoring",
    "RolesPolicy": "agora_agent.tools.spec",
    "ToolContext": "agora_agent.tools.context",
    "TransientRetry": "agora_agent.tools.retry",
    "UnconfiguredActorResolver": "agora_agent.actors",
    "define_tool": "agora_agent.tools.authoring",
    "estimate_cost": "agora_agent.governance.pricing",
    "evaluate_governance_gate": "agora_agent.governance.gate",
    "evaluate_ownership": "agora_agent.governance.ownership",
    "run_agent_loop": "agora_agent.loop",
    "tool": "agora_agent.tools.authoring",
}


__getattr__ = lazy_exports(__name__, _MODULE_OF, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
