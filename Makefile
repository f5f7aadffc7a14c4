# The two commands the README promises. Each creates .venv and installs what it needs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: test demo lint typecheck pytest clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

# The demo needs the core, the OpenAI adapter (for AGORA_MODEL / an OpenAI-compatible server), the rag extra
# (its help centre lives in the SQLite vector store), durable (demo --durable) and the MCP SDK (it serves /agent/mcp),
# not the dev tools.
$(DEMO_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[openai,rag,durable,mcp]'
	touch $(DEMO_STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/lint-imports --no-cache

typecheck: $(STAMP)
	$(BIN)/mypy src

# Two worker processes (pytest-xdist): the suite spends most of its time waiting on servers, subprocesses
# and browsers, not on the CPU. `make pytest PYTEST_WORKERS=0` runs it in this one process.
PYTEST_WORKERS ?= 2
pytest: $(STAMP)
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

## test: the whole suite — ruff, mypy --strict on src/, pytest
test: lint typecheck pytest

## demo: the offline demo on SQLite (no API key, no network)
demo: $(DEMO_STAMP)
	$(BIN)/agora-agent demo

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
