"""The governed agent loop.

- `turn.py`: `run_agent_loop` — one run: prompt, history, model steps, budget, cost, persistence.
- `tool_calls.py`: each tool call — authorize, park for approval, execute with retry, delegate.
- `interface.py`: the input, dependencies, hooks and result the loop runs on.
- `_state.py`: what one run's steps share, and the JSON helpers (private).
"""

from agora_agent.loop.interface import (
    ApprovalDecision,
    LoopDeps,
    LoopHooks,
    LoopResult,
    PendingApproval,
    Redactor,
    RunInput,
)
from agora_agent.loop.turn import run_agent_loop

__all__ = [
    "ApprovalDecision",
    "LoopDeps",
    "LoopHooks",
    "LoopResult",
    "PendingApproval",
    "Redactor",
    "RunInput",
    "run_agent_loop",
]
