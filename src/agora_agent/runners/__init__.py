"""What executes runs: the `Runner` protocol (`base.py`), the inline runner (`inline.py`, asyncio tasks in this
process), the durable runner (`durable/`, DBOS workflows; `AgentConfig(durable=True)`), the lease keeper
(`leases.py`) and a run's stream rebuilt from the store (`transcript.py`). Import from the modules.
"""
