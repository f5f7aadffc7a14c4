"""Access control for retrieval: who may read which chunk.

Out of the box every chunk carries two metadata keys, stamped at ingestion from the uploader's identity
(never from the document's own metadata, which a user may have written):
- `tenant_ref`: the tenant that owns it, or `SHARED` (`"*"`) for a corpus every tenant may read;
- `allowed_roles`: the roles that may read it, or `[EVERYONE]` (`["*"]`) for any role.

`acl_filter(actor)` turns an actor into the filter that enforces both inside the store query. It is the
default `AgentConfig.retrieval_filter` and `knowledge_tool(filter=...)`; an actor with no tenant sees the
shared corpus only. `unscoped` opts out explicitly (a single-tenant app with no private documents).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias

from agora_agent.actors import Actor
from agora_agent.rag.filters import FilterValue

__all__ = [
    "EVERYONE",
    "SHARED",
    "RetrievalFilter",
    "acl_filter",
    "resolve_filter",
    "stamp_acl",
    "unscoped",
]

SHARED = "*"
"""`tenant_ref` of a chunk every tenant may read."""
EVERYONE = "*"
"""The `allowed_roles` entry that lets every role read a chunk."""

RetrievalFilter: TypeAlias = Callable[[Actor], "Mapping[str, Any] | Awaitable[Mapping[str, Any]]"]
"""`(actor) -> filter`, sync or async; raising fails the retrieval (never unfiltered)."""


def acl_filter(actor: Actor) -> dict[str, FilterValue]:
    """The default filter: the actor's tenant or the shared corpus, and one of the actor's roles or everyone."""
    tenants: list[str | int | float | bool | None] = [SHARED]
    if actor.tenant_ref:
        tenants.insert(0, actor.tenant_ref)
    roles: list[str | int | float | bool | None] = [*actor.roles, EVERYONE]
    return {"tenant_ref": tenants, "allowed_roles": roles}


def unscoped(actor: Actor) -> dict[str, FilterValue]:
    """No restriction: every chunk is visible to every actor. Only for corpora with nothing private."""
    return {}


async def resolve_filter(retrieval_filter: RetrievalFilter | None, actor: Actor) -> dict[str, Any]:
    """Call the hook (awaiting it when async). Whatever it raises propagates: the caller must fail, not
    fall back to an unfiltered search. A hook returning a non-mapping is an error too."""
    if retrieval_filter is None:
        return {}
    result = retrieval_filter(actor)
    if isinstance(result, Awaitable):
        result = await result
    if not isinstance(result, Mapping):
        raise TypeError(f"retrieval_filter must return a mapping, not {type(result).__name__}")
    return dict(result)


def stamp_acl(
    metadata: Mapping[str, Any] | None,
    *,
    tenant_ref: str | None,
    allowed_roles: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The document's metadata with the ACL keys set by the ingesting side.

    `tenant_ref` always overwrites (None removes it: such a chunk matches no `acl_filter`); `allowed_roles`
    overwrites when given, else the document's own list is kept when it is a list of strings, else
    `[EVERYONE]`.
    """
    out = dict(metadata or {})
    if tenant_ref is None:
        out.pop("tenant_ref", None)
    else:
        out["tenant_ref"] = tenant_ref
    if allowed_roles is not None:
        out["allowed_roles"] = list(allowed_roles)
    else:
        own = out.get("allowed_roles")
        if not (isinstance(own, list) and own and all(isinstance(r, str) for r in own)):
            out["allowed_roles"] = [EVERYONE]
    return out
