"""Ownership of threads and runs: may this caller touch this thread or run?

The verdict only; `AgentService` raises `NotFoundError` / `ForbiddenError` from it and the web layer
maps those to 404 / 403.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agora_agent.governance.gate import GovernanceScope, Grant

__all__ = ["OwnershipDecision", "evaluate_ownership"]

Verdict = Literal["owner", "privileged", "not_found", "forbidden"]


@dataclass(frozen=True, slots=True)
class OwnershipDecision:
    """`verdict`: the owner, someone the grant covers (`privileged`), `not_found` or `forbidden`."""

    verdict: Verdict

    @property
    def ok(self) -> bool:
        """Whether the caller may go on."""
        return self.verdict in ("owner", "privileged")


def evaluate_ownership(
    actor_id: str, owner_ref: str | None, grant: Grant, *, tenant_ref: str | None = None
) -> OwnershipDecision:
    """Unknown (owner None) -> not_found even for a global admin; the owner -> owner; a global grant, or a
    `GovernanceScope` covering the row's `tenant_ref` -> privileged; anyone else -> forbidden.

    `grant` is the governance gate's answer (False when no gate is configured).
    """
    if owner_ref is None:
        return OwnershipDecision("not_found")
    if owner_ref == actor_id:
        return OwnershipDecision("owner")
    if grant is True or (isinstance(grant, GovernanceScope) and grant.covers(tenant_ref)):
        return OwnershipDecision("privileged")
    return OwnershipDecision("forbidden")
