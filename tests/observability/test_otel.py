"""OpenTelemetry spans and metrics, checked with the SDK's in-memory exporters (never the global provider)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agora_agent import AgentConfig, AgentDefinition, AgentService, Budget, QuotaExceededError
from agora_agent.governance.gate import Caller
from agora_agent.observability import Telemetry
from agora_agent.testing import FakeModel, collect_frames, wait_for_tool_status
from agora_agent.testing.helpers import OBSERVER
from tests.observability.test_events import ADMIN, ALICE, QuickRefund, Refund, lookup, script


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
async def make(exporter: InMemorySpanExporter, reader: InMemoryMetricReader) -> AsyncIterator[Callable[..., Any]]:
    made: list[AgentService] = []
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    mp = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)

    async def factory(**kwargs: Any) -> AgentService:
        config = AgentConfig(
            model=FakeModel(script),
            tools=[lookup, Refund, QuickRefund],
            default_agent=AgentDefinition(delegates_to=("billing",)),
            agents=[AgentDefinition(name="billing", system_prompt="You answer billing questions.")],
            governance_authorize=lambda actor, request: "admin" in actor.roles,
            tracer_provider=tp,
            meter_provider=mp,
            **kwargs,
        )
        service = AgentService.from_config(config)
        await service.start()
        made.append(service)
        return service

    yield factory
    for s in made:
        await s.close()
    mp.shutdown()


async def full_run(service: AgentService) -> str:
    started = await service.chat(ALICE, "full")
    await wait_for_tool_status(service, started.run_id)
    await service.approve(Caller(ADMIN, grant=True), started.run_id, "c-act")
    await collect_frames(service, started.run_id)
    await service.wait_for_run(OBSERVER, started.run_id)
    return started.run_id


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def one(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    [span] = by_name(spans, name)
    return span


async def test_spans_names_attributes_and_parenting_across_a_delegation(
    make: Any, exporter: InMemorySpanExporter
) -> None:
    service = await make()
    run_id = await full_run(service)
    spans = exporter.get_finished_spans()
    names = sorted(s.name for s in spans)
    assert names == sorted(
        [
            "invoke_agent default",
            "chat fake-model",
            "execute_tool lookup",
            "await_approval refund",
            "execute_tool refund",
            "execute_tool ask_billing",
            "invoke_agent billing",
            "chat fake-model",  # the billing agent's model call
            "chat fake-model",  # the default agent's answer after the tools
        ]
    )
    assert len({s.context.trace_id for s in spans}) == 1
    root = one(spans, "invoke_agent default")
    assert root.parent is None
    attrs = dict(root.attributes or {})
    assert attrs["gen_ai.operation.name"] == "invoke_agent"
    assert attrs["gen_ai.agent.name"] == "default"
    assert (attrs["agora.run.id"], attrs["agora.actor.id"], attrs["agora.tenant.id"]) == (run_id, "alice", "acme")
    assert attrs["agora.thread.id"] == attrs["gen_ai.conversation.id"]
    assert attrs["agora.run.status"] == "completed"

    delegation = one(spans, "execute_tool ask_billing")
    child = one(spans, "invoke_agent billing")
    assert delegation.parent is not None and delegation.parent.span_id == root.context.span_id
    assert child.parent is not None and child.parent.span_id == delegation.context.span_id
    assert dict(child.attributes or {})["agora.parent_run.id"] == run_id
    child_chats = [
        s for s in by_name(spans, "chat fake-model") if s.parent and s.parent.span_id == child.context.span_id
    ]
    assert len(child_chats) == 1

    chat = next(s for s in by_name(spans, "chat fake-model") if s.parent and s.parent.span_id == root.context.span_id)
    ca = dict(chat.attributes or {})
    assert ca["gen_ai.operation.name"] == "chat"
    assert ca["gen_ai.provider.name"] == "FakeModel"
    assert (ca["gen_ai.request.model"], ca["gen_ai.response.model"]) == ("fake-model", "fake-model")
    assert ca["gen_ai.usage.input_tokens"] >= 1 and "gen_ai.usage.output_tokens" in ca  # type: ignore[operator]
    assert ca["gen_ai.response.finish_reasons"] in (("tool_calls",), ("stop",))

    tool = dict(one(spans, "execute_tool refund").attributes or {})
    assert tool["gen_ai.tool.call.id"] == "c-act"
    assert (tool["agora.tool.kind"], tool["agora.policy.decision"], tool["agora.tool.status"]) == (
        "action",
        "approved",
        "executed",
    )
    assert tool["agora.tool.idempotency_key"] == f"{run_id}:c-act"
    wait = one(spans, "await_approval refund")
    wa = dict(wait.attributes or {})
    assert (wa["agora.approval.outcome"], wa["agora.approval.decided_by"], wa["agora.approval.requested_by"]) == (
        "approved",
        "root",
        "alice",
    )
    assert wait.end_time is not None and wait.start_time is not None and wait.end_time >= wait.start_time

    # no content by default
    for s in spans:
        keys = set((s.attributes or {}).keys())
        assert not keys & {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments"}


async def test_content_is_recorded_only_with_the_switch_and_through_the_redactor(
    make: Any, exporter: InMemorySpanExporter
) -> None:
    def redactor(name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {k: ("***" if k == "order_id" else v) for k, v in args.items()}

    service = await make(capture_content=True, redactor=redactor)
    await full_run(service)
    spans = exporter.get_finished_spans()
    chats = by_name(spans, "chat fake-model")
    first = next(s for s in chats if "full" in str((s.attributes or {}).get("gen_ai.input.messages")))
    messages = json.loads(str((first.attributes or {})["gen_ai.input.messages"]))
    assert messages[-1] == {"role": "user", "parts": [{"type": "text", "content": "full"}]}
    output = json.loads(str((first.attributes or {})["gen_ai.output.messages"]))
    call = next(p for p in output[0]["parts"] if p["type"] == "tool_call" and p["name"] == "lookup")
    assert call["arguments"] == {"order_id": "***"}
    tool = dict(one(spans, "execute_tool lookup").attributes or {})
    assert json.loads(str(tool["gen_ai.tool.call.arguments"])) == {"order_id": "***"}
    assert json.loads(str(tool["gen_ai.tool.call.result"])) == {"order_id": 1, "status": "shipped"}


async def test_the_environment_switch_turns_content_capture_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    assert Telemetry().capture_content is True
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "false")
    assert Telemetry().capture_content is False
    assert Telemetry(capture_content=True).capture_content is True


def points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    out: dict[str, list[Any]] = {}
    assert data is not None
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                out.setdefault(metric.name, []).extend(metric.data.data_points)
    return out


async def test_metrics_tokens_duration_tools_approvals_and_budget_refusals(
    make: Any, reader: InMemoryMetricReader
) -> None:
    service = await make()
    await full_run(service)
    rejected = await service.chat(ALICE, "reject")
    await wait_for_tool_status(service, rejected.run_id)
    await service.reject(ALICE, rejected.run_id, "c-rej")
    await service.wait_for_run(OBSERVER, rejected.run_id)
    got = points(reader)

    tokens = {p.attributes["gen_ai.token.type"]: p for p in got["gen_ai.client.token.usage"]}
    assert set(tokens) == {"input", "output"} and tokens["input"].count == 5  # 3 + billing's 1 + reject's 1
    durations = {p.attributes["gen_ai.operation.name"] for p in got["gen_ai.client.operation.duration"]}
    assert durations == {"chat", "invoke_agent"}
    tools = {
        (p.attributes["gen_ai.tool.name"], p.attributes["agora.tool.status"]): p.value for p in got["agora.tool.calls"]
    }
    assert tools == {
        ("lookup", "executed"): 1,
        ("refund", "executed"): 1,
        ("ask_billing", "executed"): 1,
        ("refund", "rejected"): 1,
    }
    outcomes = {p.attributes["agora.approval.outcome"]: p.value for p in got["agora.approvals"]}
    assert outcomes == {"approved": 1, "rejected": 1}
    assert sum(p.count for p in got["agora.approval.wait.duration"]) == 2

    limited = await make(budget=Budget(tokens_per_actor=0))
    with pytest.raises(QuotaExceededError):
        await limited.chat(ALICE, "hi")
    refusals = points(reader)["agora.budget.refusals"]
    assert [(p.attributes["agora.budget.scope"], p.value) for p in refusals] == [("actor", 1)]


async def test_failed_model_call_marks_the_spans() -> None:
    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    service = AgentService.from_config(AgentConfig(model=FakeModel(script), tracer_provider=tp))
    async with service:
        started = await service.chat(ALICE, "boom")
        await service.wait_for_run(OBSERVER, started.run_id)
    spans = exporter.get_finished_spans()
    chat = one(spans, "chat fake-model")
    root = one(spans, "invoke_agent default")
    assert chat.status.status_code == StatusCode.ERROR and dict(chat.attributes or {})["error.type"] == "ModelError"
    assert root.status.status_code == StatusCode.ERROR and dict(root.attributes or {})["agora.run.status"] == "failed"


async def test_without_a_provider_no_span_is_made() -> None:
    telemetry = Telemetry()
    assert telemetry.tracer() is None  # tests never set the global provider, so this is the default state
