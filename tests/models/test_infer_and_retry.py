"""Model selection by string / environment, lazy SDK imports, and the retry policy."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agora_agent.errors import ConfigurationError, ModelError
from agora_agent.models import (
    AnthropicModel,
    OpenAIChatModel,
    PydanticAIModel,
    RetryPolicy,
    infer_model,
    model_from_env,
)
from agora_agent.models._history import parse_tool_arguments
from agora_agent.models._retry import RetryableModelError, run_with_retries
from agora_agent.testing import FakeModel, echo_script


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    for name in ("AGORA_MODEL", "AGORA_MODEL_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


async def test_strings_select_each_adapter() -> None:
    openai_model = infer_model("openai:gpt-4o-mini")
    assert isinstance(openai_model, OpenAIChatModel) and openai_model.model_id == "gpt-4o-mini"
    claude = infer_model("anthropic:claude-fake-1")
    assert isinstance(claude, AnthropicModel) and claude.model_id == "claude-fake-1"
    bridged = infer_model("pydantic-ai:openai:gpt-4o-mini")
    assert isinstance(bridged, PydanticAIModel) and bridged.model_id == "gpt-4o-mini"
    await openai_model.aclose()
    await claude.aclose()


def test_a_provider_object_passes_through() -> None:
    fake = FakeModel(echo_script())
    assert infer_model(fake) is fake


@pytest.mark.parametrize(
    ("spec", "code", "fix"),
    [
        ("gpt-4o-mini", "no_provider_prefix", "write e.g. 'openai:gpt-4o-mini'"),
        ("mistral:large", "unknown_provider", "use one of"),
        ("openai:", "no_provider_prefix", "write e.g."),
    ],
)
def test_bad_specs_explain_the_fix(spec: str, code: str, fix: str) -> None:
    with pytest.raises(ConfigurationError) as bad:
        infer_model(spec)
    assert bad.value.code == code and fix in str(bad.value)


async def test_environment_selects_a_model_with_a_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    assert model_from_env() is None
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("AGORA_MODEL", "openai:llama3.2")
    monkeypatch.setenv("AGORA_MODEL_BASE_URL", "http://127.0.0.1:11434/v1")
    model = model_from_env()
    assert isinstance(model, OpenAIChatModel)
    assert str(model.client.base_url) == "http://127.0.0.1:11434/v1/"
    await model.aclose()


def test_importing_models_loads_no_vendor_sdk() -> None:
    code = (
        "import sys, agora_agent.models\n"
        "loaded = [m for m in ('openai', 'anthropic', 'pydantic_ai') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_tool_arguments_parsing() -> None:
    assert parse_tool_arguments("") == {}
    assert parse_tool_arguments('{"a": 1}') == {"a": 1}
    assert parse_tool_arguments("[1, 2]") == {"_raw": "[1, 2]"}
    assert parse_tool_arguments('{"a": ') == {"_raw": '{"a": '}


async def test_retry_stops_on_a_non_retryable_error() -> None:
    calls = 0

    async def attempt() -> str:
        nonlocal calls
        calls += 1
        raise ModelError("bad request", status=400)

    with pytest.raises(ModelError) as info:
        await run_with_retries(RetryPolicy(base_delay=0), attempt)
    assert calls == 1 and (info.value.status, info.value.retryable) == (400, False)


async def test_retry_is_bounded_and_says_so() -> None:
    calls = 0

    async def attempt() -> str:
        nonlocal calls
        calls += 1
        raise RetryableModelError("busy", status=503)

    with pytest.raises(ModelError) as info:
        await run_with_retries(RetryPolicy(max_attempts=4, base_delay=0), attempt)
    assert calls == 4 and info.value.status == 503 and info.value.code == "model"  # the last attempt's code
    assert "gave up after 4 attempts" in str(info.value)  # says how many, and which setting to raise


def test_backoff_is_capped_and_honours_retry_after() -> None:
    policy = RetryPolicy(base_delay=1, max_delay=4)
    assert all(0 <= policy.delay(n) <= min(4, 2 ** (n - 1)) for n in range(1, 8) for _ in range(20))
    assert policy.delay(1, retry_after=2.5) == 2.5
    assert policy.delay(1, retry_after=60) == 4
    with pytest.raises(ConfigurationError) as bad:
        RetryPolicy(max_attempts=0)
    assert bad.value.option == "max_attempts"
