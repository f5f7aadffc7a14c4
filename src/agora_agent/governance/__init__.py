"""Governance: who may see and decide what, what it costs, and the record of it. Import from the modules.

- `gate.py` (the governance gate and its scopes), `ownership.py` (threads and runs), `policy.py` (roles policies);
- `quota.py` (budgets by reservation), `budgets.py` (budget rules as data), `pricing.py` and `price_changes.py`;
- `queries.py` (what the dashboard reads), `console.py` (inspector, compare, audit export), `audit.py`,
  `directory.py` (actor labels), `retrieval_stats.py` (the RAG panel).
"""
