"""SSE serving overhead: agora-agent's POST /agent/chat vs a raw Starlette SSE endpoint, same deltas, same run.

N concurrent chats (default 200), each streaming D text deltas (default 100) from a scripted model with
no network. The raw endpoint yields the same `data: {"delta": …}` frames from a generator; ours goes
through identity, validation, the run row, the governed loop, the token sink and sse-starlette. Both
servers run on uvicorn on 127.0.0.1 in their own process; the load generator (httpx2) runs here.

    .venv/bin/python bench/sse.py [--chats 200] [--deltas 100] [--rounds 3]

Prints throughput (deltas/s and chats/s over the wall time of a round), p50/p99 time to first delta
and the ratios; targets: ours ≥ 0.5× raw throughput, p99 TTFT ≤ 2× raw.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2

PATHS = {"raw": "/raw/chat", "agora": "/agent/chat"}


def words(deltas: int) -> list[str]:
    return [f"w{i} " for i in range(deltas)]


def raw_app(deltas: int) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    async def chat(request: Request) -> StreamingResponse:
        await request.body()

        async def events() -> AsyncIterator[bytes]:
            yield b'event: meta\ndata: {"runId":"r","threadId":"t"}\n\n'
            for i, word in enumerate(words(deltas), start=1):
                yield f"id: {i}\ndata: {json.dumps({'delta': word})}\n\n".encode()
            yield b"event: done\ndata: {}\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(routes=[Route("/raw/chat", chat, methods=["POST"])])


def agora_app(deltas: int) -> Any:
    from agora_agent import AgentConfig
    from agora_agent.actors import HeaderActorResolver
    from agora_agent.testing import FakeModel, ScriptedTurn
    from agora_agent.web import create_app

    text = "".join(words(deltas))  # FakeModel streams one delta per word
    model = FakeModel(lambda request, i: ScriptedTurn(text=text))
    return create_app(AgentConfig(model=model, actor_resolver=HeaderActorResolver()))


def _serve(kind: str, deltas: int, sock: socket.socket) -> None:
    import logging

    import uvicorn

    logging.getLogger("agora_agent").setLevel(logging.ERROR)
    app = raw_app(deltas) if kind == "raw" else agora_app(deltas)
    config = uvicorn.Config(app, log_level="error", access_log=False, lifespan="on", backlog=2048)
    uvicorn.Server(config).run(sockets=[sock])


@dataclass
class Round:
    wall: float
    ttft: list[float]
    deltas: int
    errors: int


async def one_chat(client: httpx2.AsyncClient, path: str, i: int) -> tuple[float | None, int]:
    start = time.perf_counter()
    first: float | None = None
    count = 0
    headers = {"x-actor-id": f"user{i % 50}"}
    async with client.stream("POST", path, json={"message": f"hello {i}"}, headers=headers) as response:
        if response.status_code != 200:
            await response.aread()
            return None, 0
        async for line in response.aiter_lines():
            if line.startswith('data: {"delta"'):
                count += 1
                if first is None:
                    first = time.perf_counter() - start
    return first, count


async def run_round(base: str, path: str, chats: int) -> Round:
    limits = httpx2.Limits(max_connections=chats, max_keepalive_connections=chats)
    async with httpx2.AsyncClient(base_url=base, limits=limits, timeout=120) as client:
        start = time.perf_counter()
        results = await asyncio.gather(*(one_chat(client, path, i) for i in range(chats)), return_exceptions=True)
        wall = time.perf_counter() - start
    ttft = [r[0] for r in results if isinstance(r, tuple) and r[0] is not None]
    got = sum(r[1] for r in results if isinstance(r, tuple))
    return Round(wall=wall, ttft=ttft, deltas=got, errors=chats - len(ttft))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


async def bench(kind: str, chats: int, deltas: int, rounds: int) -> list[Round]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)  # requests queue here until the server accepts: no readiness polling
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    proc = multiprocessing.get_context("fork").Process(target=_serve, args=(kind, deltas, sock), daemon=True)
    proc.start()
    try:
        await run_round(base, PATHS[kind], min(chats, 20))  # warm-up (imports, first connections)
        return [await run_round(base, PATHS[kind], chats) for _ in range(rounds)]
    finally:
        proc.terminate()
        proc.join(10)
        sock.close()


def summarise(kind: str, rounds: list[Round], chats: int, deltas: int) -> dict[str, float]:
    best = min(rounds, key=lambda r: r.wall)  # least disturbed round
    ttft = [t for r in rounds for t in r.ttft]
    row = {
        "deltas_per_s": best.deltas / best.wall,
        "chats_per_s": chats / best.wall,
        "p50_ttft_ms": pct(ttft, 0.5) * 1000,
        "p99_ttft_ms": pct(ttft, 0.99) * 1000,
        "errors": float(sum(r.errors for r in rounds)),
        "complete": float(all(r.deltas == chats * deltas for r in rounds)),
    }
    print(
        f"{kind:>6}: {row['deltas_per_s']:>10,.0f} deltas/s  {row['chats_per_s']:>7.1f} chats/s  "
        f"TTFT p50 {row['p50_ttft_ms']:7.1f} ms  p99 {row['p99_ttft_ms']:7.1f} ms  "
        f"errors {int(row['errors'])}  all deltas received: {bool(row['complete'])}"
    )
    return row


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--deltas", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{args.chats} concurrent chats x {args.deltas} deltas, {args.rounds} rounds each, "
        f"uvicorn on 127.0.0.1, {os.cpu_count()} CPUs"
    )
    raw = summarise("raw", await bench("raw", args.chats, args.deltas, args.rounds), args.chats, args.deltas)
    ours = summarise("agora", await bench("agora", args.chats, args.deltas, args.rounds), args.chats, args.deltas)
    throughput = ours["deltas_per_s"] / raw["deltas_per_s"]
    ttft = ours["p99_ttft_ms"] / raw["p99_ttft_ms"]
    print(
        f"ratios: throughput {throughput:.2f}x raw (target >= 0.5x: {'ok' if throughput >= 0.5 else 'MISSED'}), "
        f"p99 TTFT {ttft:.2f}x raw (target <= 2x: {'ok' if ttft <= 2 else 'MISSED'}), "
        f"p50 TTFT {ours['p50_ttft_ms'] / raw['p50_ttft_ms']:.2f}x raw"
    )


if __name__ == "__main__":
    asyncio.run(main())
