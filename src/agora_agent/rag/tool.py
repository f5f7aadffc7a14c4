"""`knowledge_tool(retriever, ...)`: a read tool the model calls with a query (the search-tool mode).

It goes through the registry's filter chain like any tool (allow-lists, roles, `can_use`). The filter is
computed from `ctx.actor` on every call — never from the model's arguments, which are only `query` — and a
filter hook that raises makes the call fail: there is no unfiltered fallback.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agora_agent.errors import ConfigurationError, ToolExecutionError
from agora_agent.rag.access import RetrievalFilter, acl_filter, resolve_filter
from agora_agent.rag.retrievers import Retriever
from agora_agent.tools.context import ToolContext
from agora_agent.tools.spec import ToolSpec

__all__ = ["KnowledgeTool", "knowledge_tool"]

MAX_QUERY_CHARS = 1000
_log = logging.getLogger(__name__)


class KnowledgeQuery(BaseModel):
    """The model's arguments: only the query (extra keys such as a `filter` are refused, not ignored)."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look up, in plain words.")


class KnowledgeTool:
    """A read-kind tool over a retriever. `invoke` returns `{"passages": [{id, source?, score, text}], "count"}`."""

    def __init__(
        self,
        retriever: Retriever,
        *,
        name: str = "search_knowledge",
        description: str | None = None,
        top_k: int = 5,
        min_score: float | None = None,
        filter: RetrievalFilter | None = acl_filter,
        roles: Iterable[str] | None = None,
        ability: str | None = None,
    ) -> None:
        if top_k < 1:
            raise ConfigurationError(f"knowledge_tool: top_k must be at least 1 (got {top_k})")
        self.retriever = retriever
        self.top_k = top_k
        self.min_score = min_score
        self.filter = filter
        self._spec = ToolSpec(
            name=name,
            kind="read",
            description=description
            or (
                f"Search the knowledge base and return up to {top_k} relevant passages with their sources. "
                "Cite a passage by its source when you use it."
            ),
            input_model=KnowledgeQuery,
            roles=tuple(roles) if roles is not None else None,
            ability=ability,
        )

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def invoke(self, input: BaseModel | Mapping[str, Any], ctx: ToolContext) -> dict[str, Any]:
        """Retrieve for `ctx.actor`; see the class docstring."""
        query = input.get("query") if isinstance(input, Mapping) else getattr(input, "query", None)
        if not isinstance(query, str) or not query.strip():
            raise ToolExecutionError(self._spec.name, "Send a non-empty `query`.")
        try:
            scope = await resolve_filter(self.filter, ctx.actor)
        except Exception:
            _log.exception("knowledge_tool %s: the retrieval filter raised for actor %s", self._spec.name, ctx.actor.id)
            # Never search unfiltered; the reason stays in the server log, not in the model's context.
            raise ToolExecutionError(
                self._spec.name, "The knowledge base is not available for you right now."
            ) from None
        passages = await self.retriever.retrieve(
            query[:MAX_QUERY_CHARS], top_k=self.top_k, filter=scope, min_score=self.min_score
        )
        await ctx.report_retrieval(
            query=query[:MAX_QUERY_CHARS],
            ids=[p.id for p in passages],
            scores=[p.score for p in passages],
            source=f"tool:{self._spec.name}",
        )
        return {
            "passages": [
                {"id": p.id, **({"source": p.source} if p.source else {}), "score": round(p.score, 6), "text": p.text}
                for p in passages
            ],
            "count": len(passages),
        }


def knowledge_tool(
    retriever: Retriever,
    *,
    name: str = "search_knowledge",
    description: str | None = None,
    top_k: int = 5,
    min_score: float | None = None,
    filter: RetrievalFilter | None = acl_filter,
    roles: Iterable[str] | None = None,
    ability: str | None = None,
) -> KnowledgeTool:
    """Build the knowledge search tool; register it like any tool (`AgentConfig(tools=[knowledge_tool(r)])`)."""
    return KnowledgeTool(
        retriever,
        name=name,
        description=description,
        top_k=top_k,
        min_score=min_score,
        filter=filter,
        roles=roles,
        ability=ability,
    )
