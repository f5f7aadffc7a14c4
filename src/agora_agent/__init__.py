"""agora-agent: a governed, durable AI agent for Python web applications."""
