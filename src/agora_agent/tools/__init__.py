"""Tools: writing them (`authoring.py`: `@tool`, `define_tool`, the class forms; `context.py`: `ToolContext`),
what the registry runs (`spec.py`, `registry.py`: offer and invoke through one filter chain), confirmed tools
(`confirmed.py`), retries (`retry.py`), sync tools' worker threads (`threads.py`), discovery in a package
(`discovery.py`), the governed SQL tool (`sql/`) and MCP servers' tools (`mcp/`). The common names are
re-exported from `agora_agent`.
"""
