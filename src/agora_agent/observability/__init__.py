"""Observability: typed lifecycle events, logging, OpenTelemetry spans and metrics (see docs/observability.md)."""

from agora_agent.observability.events import (
    AgentEvent,
    ApprovalDecided,
    ApprovalExpired,
    ApprovalRequested,
    BudgetThresholdReached,
    Delegated,
    EventHandler,
    QuotaExceeded,
    Retrieved,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunStarted,
    ToolCallStatusChanged,
)
from agora_agent.observability.telemetry import Telemetry

__all__ = [
    "AgentEvent",
    "ApprovalDecided",
    "ApprovalExpired",
    "ApprovalRequested",
    "BudgetThresholdReached",
    "Delegated",
    "EventHandler",
    "QuotaExceeded",
    "Retrieved",
    "RunCancelled",
    "RunFailed",
    "RunFinished",
    "RunStarted",
    "Telemetry",
    "ToolCallStatusChanged",
]
