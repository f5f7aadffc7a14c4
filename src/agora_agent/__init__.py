"""agora-agent: a governed, durable AI agent for Python web applications.

The public API, grouped by topic. Everything else lives in submodules (`agora_agent.web`,
`agora_agent.stores.sql`, `agora_agent.models`, `agora_agent.tools.sql`, `agora_agent.testing` …).
"""

from agora_agent._version import __version__
from agora_agent.actors import (
    Actor,
    ActorResolver,
    CallableActorResolver,
    HeaderActorResolver,
    UnconfiguredActorResolver,
)
from agora_agent.agents import AgentDefinition, Delegation, Persona, PromptContext
from agora_agent.config import AgentConfig, DashboardConfig
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
