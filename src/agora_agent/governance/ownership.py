"""Ownership of threads and runs: may this actor touch this thread or run? (REFERENCE OWN-01..04)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OwnershipDecision", "evaluate_ownership"]


@dataclass(frozen=True, slots=True)
class OwnershipDecision:
    """The verdict and the HTTP status/error body the web layer answers with when it is not ok."""

    ok: bool
    status: int
    error: str | None = None


def evaluate_ownership(actor_id: str, owner_ref: str | None, privileged: bool) -> OwnershipDecision:
    """OWN-01: unknown (owner None) -> 404 even when privileged; the owner or a privileged actor -> ok; else 403.

    `privileged` is the governance gate's verdict (False when no gate is configured, OWN-03).
    """
    if owner_ref is None:
        return OwnershipDecision(ok=False, status=404, error="not found")
    if owner_ref == actor_id or privileged:
        return OwnershipDecision(ok=True, status=200)
    return OwnershipDecision(ok=False, status=403, error="forbidden")
