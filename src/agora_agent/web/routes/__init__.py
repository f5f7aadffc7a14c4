"""The agent API's routes, one module per topic, each with module-level handlers and an `add_routes(router)`.

`agent_router` (web/router.py) calls every module's `add_routes` on one router, so the handlers share
its route class (body cap, identity, error bodies) and reach the service through `web/deps.py`.
"""
