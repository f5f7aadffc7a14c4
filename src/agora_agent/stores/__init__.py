"""Persistence: the `AgentStore` protocol (`base.py`; the records it reads back live in `agora_agent.records`),
the in-process twins (`memory.py`, `memory_queries.py`), SQLite/PostgreSQL (`sql/`), attachment staging
(`attachments.py`), budget stores (`budgets.py`) and run owner leases (`leases.py`). Import from the modules.
"""
