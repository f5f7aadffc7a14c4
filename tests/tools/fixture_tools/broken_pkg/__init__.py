"""A subpackage whose __init__ fails: discovery skips it and everything below it."""

import agora_agent_module_that_does_not_exist  # noqa: F401
