"""`RedisTokenSink` against a real Redis: resume by sequence, one blocking reader per process, trimmed
resumes detected, and the service answering from the store when Redis cannot serve the stream."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agora_agent import Actor, AgentConfig, AgentService
from agora_agent.streaming.frames import StreamEvent, TextFrame, ToolFrame
from agora_agent.streaming.redis import RedisTokenSink
from agora_agent.streaming.sink import StreamGap
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, sequence_script
from agora_agent.testing.helpers import OBSERVER
from tests.conftest import REDIS_HOST, REDIS_PORT

pytestmark = pytest.mark.redis
URL = f"redis://{REDIS_HOST}:{REDIS_PORT}/0"
ALICE = Actor("alice", roles=("support",))


async def test_a_second_process_resumes_after_last_event_id_and_stops_at_the_end_marker(redis_prefix: str) -> None:
    writer_side, reader_side = RedisTokenSink(URL, prefix=redis_prefix), RedisTokenSink(URL, prefix=redis_prefix)
    try:
        writer = await writer_side.open("r1")
        for i in range(20):
            await writer.write(TextFrame(delta=f"t{i} "))
        got: list[StreamEvent] = []

        async def follow() -> None:
            async for event in reader_side.subscribe("r1", after=15):
                got.append(event)

        follower = asyncio.create_task(follow())
        await asyncio.sleep(0.2)
        await writer.write(ToolFrame(tool_call_id="c1", name="lookup", kind="read", status="executed", output={"a": 1}))
        await writer.end()
        await asyncio.wait_for(follower, 5)
        assert [e.id for e in got] == [16, 17, 18, 19, 20, 21]
        assert got[0].frame == TextFrame(delta="t15 ")
        assert got[-1].frame == ToolFrame(
            tool_call_id="c1", name="lookup", kind="read", status="executed", output={"a": 1}
        )
        ttl = await reader_side._client().ttl(reader_side.key("r1"))
        assert 0 < ttl <= reader_side.ended_ttl_seconds
    finally:
        await writer_side.aclose()
        await reader_side.aclose()


async def test_a_writer_opened_in_another_process_continues_the_numbering(redis_prefix: str) -> None:
    """What recovery does: process B closes a run whose frames process A wrote. Its frames must come after
    A's, or a follower that saw A's frames drops them as already seen (the error frame never showed)."""
    from agora_agent.streaming.frames import ErrorFrame

    a, b = RedisTokenSink(URL, prefix=redis_prefix), RedisTokenSink(URL, prefix=redis_prefix)
    try:
        first = await a.open("r1")
        for i in range(3):
            await first.write(TextFrame(delta=f"t{i} "))
        await asyncio.sleep(0.1)  # flushed
        got: list[StreamEvent] = []

        async def follow() -> None:
            async for event in b.subscribe("r1"):
                got.append(event)

        follower = asyncio.create_task(follow())
        await asyncio.sleep(0.2)
        recovering = await b.open("r1")
        assert await recovering.write(ErrorFrame(message="interrupted", code="run_interrupted")) == 4
        await recovering.end()
        await asyncio.wait_for(follower, 5)
        assert [e.id for e in got] == [1, 2, 3, 4] and isinstance(got[-1].frame, ErrorFrame)
        assert [e.id async for e in a.subscribe("r1", after=3)] == [4]  # a late re-attach sees it too
        assert await (await b.open("r1")).write(TextFrame(delta="late")) == 4  # an ended stream takes nothing
    finally:
        await a.aclose()
        await b.aclose()


async def test_fifty_followers_share_one_blocking_connection(redis_prefix: str) -> None:
    sink = RedisTokenSink(URL, prefix=redis_prefix, block_ms=2000)
    try:
        writers = [await sink.open(f"run{i}") for i in range(50)]
        for w in writers:
            await w.write(TextFrame(delta="hello"))
        counts = [0] * 50

        async def follow(i: int) -> None:
            async for _ in sink.subscribe(f"run{i}"):
                counts[i] += 1

        tasks = [asyncio.create_task(follow(i)) for i in range(50)]
        for _ in range(100):
            await asyncio.sleep(0.05)
            if len(sink._followers) == 50:
                break
        await asyncio.sleep(0.1)
        mine = [c for c in await sink._client().client_list() if c.get("name") == sink.reader_name]
        assert [c.get("cmd") for c in mine] == ["xread"]  # one blocking XREAD for fifty live subscribers
        for w in writers:
            await w.write(TextFrame(delta=" world"))
            await w.end()
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        assert counts == [2] * 50
    finally:
        await sink.aclose()


async def test_a_resume_from_a_trimmed_id_is_detected(redis_prefix: str) -> None:
    sink = RedisTokenSink(URL, prefix=redis_prefix, maxlen=100)
    try:
        writer = await sink.open("long")
        for i in range(1000):
            await writer.write(TextFrame(delta=str(i)))
        await writer.end()
        with pytest.raises(StreamGap) as gap:
            async for _ in sink.subscribe("long", after=5):
                pass
        assert gap.value.after == 5 and gap.value.first_available > 6
    finally:
        await sink.aclose()


def lookup_script() -> object:
    return sequence_script(
        ScriptedTurn(text="Looking. ", tool_calls=[ToolCallRequest("lookup", {"order": 1})]),
        ScriptedTurn(text="Shipped."),
    )


async def test_redis_down_the_run_completes_and_the_stream_is_the_stored_transcript(tmp_path: Path) -> None:
    from agora_agent import tool

    @tool
    def lookup(order: int) -> str:
        """Look up."""
        return "shipped"

    dead = RedisTokenSink("redis://127.0.0.1:1/0")  # nothing listens on port 1
    config = AgentConfig(
        model=FakeModel(lookup_script()), tools=[lookup], store=f"sqlite:///{tmp_path / 'a.db'}", sink=dead
    )
    async with AgentService.from_config(config) as service:
        started = await service.chat(ALICE, "where is it?")
        run = await service.wait_for_run(OBSERVER, started.run_id, timeout=10)
        assert run.status == "completed"
        frames = [e.frame async for e in await service.subscribe(OBSERVER, started.run_id)]
        assert frames[0] == TextFrame(delta="Looking. ") and frames[-1] == TextFrame(delta="Shipped.")
        assert isinstance(frames[1], ToolFrame) and frames[1].status == "executed"
    await dead.aclose()
