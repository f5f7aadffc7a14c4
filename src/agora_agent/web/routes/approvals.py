"""Decide a pending action: approve or reject one tool call of a run.

Unknown run or tool call -> 404; already decided -> 409 with the standing decision in `detail`;
not the requester's and no governance grant covering the run, or approving without one of the tool's
`approver_roles` -> 403.
"""

from __future__ import annotations

from fastapi import APIRouter

from agora_agent.web.deps import CallerDep, ServiceDep, error_responses
from agora_agent.web.schemas import ApprovalDecisionResponse, ApproveRequest, RejectRequest

__all__ = ["add_routes", "approve", "reject"]


async def approve(service: ServiceDep, caller: CallerDep, body: ApproveRequest) -> ApprovalDecisionResponse:
    """Approve a pending action; the run continues and executes it."""
    record = await service.approve(caller, body.run_id, body.tool_call_id)
    return ApprovalDecisionResponse.of(record)


async def reject(service: ServiceDep, caller: CallerDep, body: RejectRequest) -> ApprovalDecisionResponse:
    """Reject a pending action; `reason` is fed back to the model."""
    record = await service.reject(caller, body.run_id, body.tool_call_id, reason=body.reason)
    return ApprovalDecisionResponse.of(record)


def add_routes(router: APIRouter) -> None:
    """Add the approve and reject routes."""
    responses = error_responses(403, 404, 409, 422)
    router.post("/tool-call/approve", response_model=ApprovalDecisionResponse, responses=responses)(approve)
    router.post("/tool-call/reject", response_model=ApprovalDecisionResponse, responses=responses)(reject)
