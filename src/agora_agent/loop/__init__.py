"""The governed agent loop (REFERENCE ARCH-LOOP-01..18).

- `turn.py`: `run_agent_loop` — one run: prompt, history, model steps, budget, cost, persistence.
- `tool_calls.py`: each tool call — authorize, park for approval, execute with retry, delegate.
- `types.py`: the input, dependencies, hooks and result the loop runs on.
"""

from agora_agent.loop.turn import run_agent_loop
from agora_agent.loop.types import (
    ApprovalDecision,
    LoopDeps,
    LoopHooks,
    LoopResult,
    PendingApproval,
    Redactor,
    RunInput,
    approval_deadline_passed,
    serialize_output,
)

__all__ = [
    "ApprovalDecision",
    "LoopDeps",
    "LoopHooks",
    "LoopResult",
    "PendingApproval",
    "Redactor",
    "RunInput",
    "approval_deadline_passed",
    "run_agent_loop",
    "serialize_output",
]
