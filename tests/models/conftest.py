"""Fixtures for the model-adapter tests: a fake provider server per test on 127.0.0.1."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fakes import FakeProviderServer


@pytest.fixture
async def fake_server() -> AsyncIterator[FakeProviderServer]:
    async with FakeProviderServer() as server:
        yield server
