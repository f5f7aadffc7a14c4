"""Durable runs on DBOS (`AgentConfig(durable=True)`). `DurableConfig` imports without the extra;
`agora_agent.runners.durable.runner` needs it (`pip install 'agora-agent[durable]'`)."""

from agora_agent.runners.durable.settings import DEFAULT_APPLICATION_VERSION, DurableConfig

__all__ = ["DEFAULT_APPLICATION_VERSION", "DurableConfig"]
