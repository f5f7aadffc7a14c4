"""`knowledge_tool`: a read tool through the registry's filter chain, scoped to `ctx.actor` on every call."""

from __future__ import annotations

import pytest

from agora_agent import DefaultRolesPolicy, ToolContext
from agora_agent.errors import ToolForbiddenError, ToolInputInvalidError, ToolNotFoundError
from agora_agent.rag import EmbeddingRetriever, HashingEmbedder, knowledge_tool
from agora_agent.tools.registry import ToolRegistry

from . import corpus


async def registry_with(**kw: object) -> ToolRegistry:
    retriever = EmbeddingRetriever(HashingEmbedder(64), await corpus.load())
    registry = ToolRegistry()
    registry.register(knowledge_tool(retriever, **kw))  # type: ignore[arg-type]
    return registry


async def test_offered_and_invoked_through_the_filter_chain() -> None:
    registry = await registry_with(roles=["member", "admin"])
    policy = DefaultRolesPolicy()
    offered = await registry.offer(corpus.ACME_MEMBER, policy=policy)
    (definition,) = offered
    assert (definition.name, definition.kind) == ("search_knowledge", "read")
    assert definition.input_schema["required"] == ["query"]
    outsider = corpus.ACME_MEMBER.__class__("eve", roles=("guest",), tenant_ref="acme")
    assert await registry.offer(outsider, policy=policy) == []
    with pytest.raises(ToolForbiddenError):
        await registry.invoke("search_knowledge", {"query": "x"}, ToolContext(actor=outsider), policy=policy)
    with pytest.raises(ToolNotFoundError):
        await registry.invoke(
            "search_knowledge", {"query": "x"}, ToolContext(actor=corpus.ACME_MEMBER), policy=policy, allow_list=[]
        )


async def test_scoped_to_the_calling_actor_and_arguments_cannot_widen_it() -> None:
    registry = await registry_with()
    policy = DefaultRolesPolicy()
    args = {"query": "globex contract secret code", "filter": {}, "tenant_ref": "globex"}
    with pytest.raises(ToolInputInvalidError):  # unknown arguments are refused, not ignored
        await registry.invoke("search_knowledge", args, ToolContext(actor=corpus.ACME_MEMBER), policy=policy)
    mine = await registry.invoke(
        "search_knowledge", {"query": args["query"]}, ToolContext(actor=corpus.ACME_MEMBER), policy=policy
    )
    assert corpus.GLOBEX_SECRET not in str(mine) and mine["count"] == len(mine["passages"]) > 0
    theirs = await registry.invoke(
        "search_knowledge", {"query": args["query"]}, ToolContext(actor=corpus.GLOBEX_USER), policy=policy
    )
    assert theirs["passages"][0]["id"] == "globex-contract#0"
    assert set(theirs["passages"][0]) == {"id", "score", "text"}
    with pytest.raises(ToolInputInvalidError):
        await registry.invoke("search_knowledge", {"query": ""}, ToolContext(actor=corpus.GLOBEX_USER), policy=policy)
