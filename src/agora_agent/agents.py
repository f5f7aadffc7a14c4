"""Named agents, personas, system prompts and delegation tools."""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agora_agent.actors import Actor
from agora_agent.tools.spec import ToolSpec

if TYPE_CHECKING:
    from agora_agent.actors import ActorResolver

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "AgentDefinition",
    "Delegation",
    "DelegationInput",
    "Persona",
    "PromptBuilder",
    "PromptContext",
    "delegation_specs",
    "delegation_tool_name",
    "resolve_system_prompt",
]

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."


@dataclass(frozen=True, kw_only=True, slots=True)
class PromptContext:
    """What a prompt builder sees. `base_prompt` is the agent's resolved prompt when building a persona's."""

    actor: Actor
    persona: Persona | None = None
    page_context: Mapping[str, Any] | None = None
    base_prompt: str = ""


PromptBuilder = Callable[[PromptContext], "str | Awaitable[str]"]
"""Builds a system prompt. Must be pure (no clock, no randomness): a durable replay rebuilds it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Persona:
    """A selectable voice of an agent: its own prompt (which may wrap the agent's) and tool allow-list."""

    id: str
    label: str
    system_prompt: str | PromptBuilder = ""
    allowed_tools: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Delegation:
    """A delegation edge with its own governance: who may hand work to `agent`."""

    agent: str
    roles: tuple[str, ...] | None = None
    ability: str | None = None


@dataclass(frozen=True, kw_only=True)
class AgentDefinition:
    """A named agent: prompt, tool allow-list, delegates, personas and limits.

    `tools=None` means no allow-list (every tool the roles policy allows); a tuple restricts the
    agent to those names plus the `ask_<agent>` tools of its `delegates_to`.
    """

    name: str = "default"
    system_prompt: str | PromptBuilder | None = None
    tools: tuple[str, ...] | None = None
    delegates_to: tuple[str | Delegation, ...] = ()
    personas: tuple[Persona, ...] = ()
    default_persona: str = "default"
    model_id: str | None = None
    max_steps: int | None = None
    actor_resolver: ActorResolver | None = field(default=None, compare=False)
    description: str | None = None

    def persona(self, persona_id: str | None) -> Persona | None:
        """The persona with this id, the default persona when None, or None when there is no such persona."""
        wanted = persona_id if persona_id is not None else self.default_persona
        return next((p for p in self.personas if p.id == wanted), None)

    def delegations(self) -> list[Delegation]:
        return [d if isinstance(d, Delegation) else Delegation(agent=d) for d in self.delegates_to]

    def allow_list(self) -> frozenset[str] | None:
        """The agent's tools plus its delegation tools; None when neither restricts."""
        if self.tools is None:
            # Deliberate: delegates alone do not restrict the other tools (the reference's AGENT-03
            # would leave such an agent able only to delegate). Foreign `ask_*` tools are excluded
            # separately, see `delegation_names`.
            return None
        return frozenset(self.tools) | self.delegation_names()

    def delegation_names(self) -> frozenset[str]:
        """The `ask_<agent>` tools this agent may use; other agents' delegation tools are never offered."""
        return frozenset(delegation_tool_name(d.agent) for d in self.delegations())


def effective_allow_list(agent: AgentDefinition, persona: Persona | None) -> frozenset[str] | None:
    """Agent allow-list ∩ persona allow-list; None = unrestricted."""
    agent_list = agent.allow_list()
    persona_list = frozenset(persona.allowed_tools) if persona and persona.allowed_tools is not None else None
    if agent_list is None:
        return persona_list
    if persona_list is None:
        return agent_list
    return agent_list & persona_list


async def _resolve(prompt: str | PromptBuilder | None, ctx: PromptContext) -> str:
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    result = prompt(ctx)
    if inspect.isawaitable(result):
        result = await result
    return str(result)


async def resolve_system_prompt(
    agent: AgentDefinition, persona: Persona | None, actor: Actor, page_context: Mapping[str, Any] | None
) -> str:
    """The agent's prompt, then the persona's with `base_prompt` = the agent's."""
    base_ctx = PromptContext(actor=actor, persona=persona, page_context=page_context, base_prompt="")
    base = await _resolve(agent.system_prompt, base_ctx) if agent.system_prompt is not None else DEFAULT_SYSTEM_PROMPT
    if persona is None or not persona.system_prompt:
        return base
    persona_ctx = PromptContext(actor=actor, persona=persona, page_context=page_context, base_prompt=base)
    return await _resolve(persona.system_prompt, persona_ctx)


def delegation_tool_name(agent_name: str) -> str:
    """`ask_<target>` with runs of non-alphanumerics folded to `_`."""
    return "ask_" + re.sub(r"[^a-zA-Z0-9]+", "_", agent_name)


class DelegationInput(BaseModel):
    """Input of every `ask_<agent>` tool."""

    task: str = Field(min_length=1, description="The task for the other agent, self-contained.")


def delegation_specs(agents: Sequence[AgentDefinition]) -> list[ToolSpec]:
    """One agent-kind spec per delegation edge, deduplicated by name (the first edge wins)."""
    by_name = {a.name: a for a in agents}
    specs: dict[str, ToolSpec] = {}
    for agent in agents:
        for edge in agent.delegations():
            name = delegation_tool_name(edge.agent)
            if name in specs:
                continue
            target = by_name.get(edge.agent)
            description = f'Delegate a task to the "{edge.agent}" agent and get its answer.'
            if target is not None:
                about = target.description or (target.system_prompt if isinstance(target.system_prompt, str) else None)
                if about:
                    description += f" It is: {about}"
            specs[name] = ToolSpec(
                name=name,
                description=description,
                kind="agent",
                input_model=DelegationInput,
                roles=edge.roles,
                ability=edge.ability,
                target_agent=edge.agent,
            )
    return list(specs.values())


def derive_title(text: str, limit: int = 60) -> str:
    """A thread title from the first user message: first line, whitespace folded, cut at a word."""
    line = " ".join(text.strip().split())
    if len(line) <= limit:
        return line or "New chat"
    cut = line[:limit].rsplit(" ", 1)[0] or line[:limit]
    return cut + "…"
