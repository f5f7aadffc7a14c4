"""The demo application `agora-agent demo` serves: a small shop governed by an agent, with no API key.

`create_demo_app(db_path)` builds it (see `agora_agent.demo.app`); `DemoModel` is the offline,
deterministic stand-in for a language model; `DemoIdentity` is the demo-only user switcher.
"""

from agora_agent.demo.app import DEMO_PRICES, DemoSetup, build_demo, create_demo_app
from agora_agent.demo.model import DEMO_MODEL_ID, DemoModel
from agora_agent.demo.users import DEMO_USERS, DemoIdentity, DemoUser

__all__ = [
    "DEMO_MODEL_ID",
    "DEMO_PRICES",
    "DEMO_USERS",
    "DemoIdentity",
    "DemoModel",
    "DemoSetup",
    "DemoUser",
    "build_demo",
    "create_demo_app",
]
