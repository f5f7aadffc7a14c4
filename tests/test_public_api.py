"""The curated public surface: every name in __all__ exists and the documented imports work."""

import agora_agent
import agora_agent.testing


def test_all_names_exist_and_are_sorted() -> None:
    for name in agora_agent.__all__:
        assert hasattr(agora_agent, name), name
    assert agora_agent.__all__ == sorted(agora_agent.__all__)


def test_every_lazy_export_is_public_and_comes_from_where_its_module_defines_it() -> None:
    """The names loaded on first use (PEP 562) are exactly the public ones not imported with the package."""
    import importlib
    import subprocess
    import sys

    lazy = agora_agent._MODULE_OF
    assert set(lazy) <= set(agora_agent.__all__)
    fresh = subprocess.run(
        [sys.executable, "-c", "import agora_agent; print(sorted(set(agora_agent.__all__) - set(vars(agora_agent))))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert fresh.stdout.strip() == str(sorted(lazy))  # every public name is eager or lazily resolvable
    for name, module in lazy.items():
        assert getattr(agora_agent, name) is getattr(importlib.import_module(module), name)


def test_issue_api_names() -> None:
    from agora_agent import (  # noqa: F401
        AbilityPolicy,
        ActionTool,
        Actor,
        AgentConfig,
        AgentDefinition,
        AgentService,
        BaseTool,
        CallableActorResolver,
        ClosedRolesPolicy,
        DefaultRolesPolicy,
        HeaderActorResolver,
        Persona,
        PromptContext,
        ReadTool,
        ToolContext,
        UnconfiguredActorResolver,
        define_tool,
        evaluate_governance_gate,
        evaluate_ownership,
        tool,
    )
    from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, echo_script  # noqa: F401

    assert agora_agent.testing.__all__ == sorted(agora_agent.testing.__all__)


def test_the_mcp_names_stay_importable_from_agora_agent_mcp() -> None:
    import agora_agent.mcp as edge
    from agora_agent.tools.mcp import MCPServer
    from agora_agent.tools.mcp.client import MCPConnections, ServerStatus

    assert edge.MCPServer is MCPServer
    assert (edge.MCPConnections, edge.ServerStatus) == (MCPConnections, ServerStatus)
    assert callable(edge.mount_mcp)


def test_the_records_keep_their_documented_import_path() -> None:
    import agora_agent.records as records
    import agora_agent.stores.base as base

    for name in records.__all__:
        assert getattr(base, name) is getattr(records, name), name
