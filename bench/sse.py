"""SSE serving overhead: agora-agent's POST /agent/chat vs a raw Starlette SSE endpoint, same deltas, same run.

N concurrent chats (default 200), each streaming D text deltas (default 100) from a scripted model with
no network. The raw endpoint yields the same `data: {"delta": …}` frames from a generator; ours goes
through identity, validation, the run row, the governed loop, the token sink and sse-starlette. Both
servers run on uvicorn on 127.0.0.1 in their own process; the load generator (httpx2) runs here.

    .venv/bin/python bench/sse.py [--chats 200] [--deltas 100] [--rounds 3] [--store memory|sqlite]

Prints throughput (deltas/s and chats/s over the wall time of a round), p50/p99 time to first delta
and the ratios; targets: ours ≥ 0.5× raw throughput, p99 TTFT ≤ 2× raw.

    .venv/bin/python bench/sse.py --table [--chats 500] [--sequential 100] [--rounds 3]

The two rows of issue #18, from three servers running side by side (a raw FastAPI SSE endpoint, ours on the
memory store, ours on a SQLite file), in interleaved rounds: (1) `POST /agent/chat` time to first byte on
SQLite ÷ the raw FastAPI endpoint, `--sequential` chats one after another alternating the two servers request
by request, each on its own keep-alive connection (p50 per round, and of all rounds' samples): the headline
with a client that writes each request in one `write` and does nothing else (`LeanClient`), then the same
through httpx2, whose own 1–1.5 ms per request (measured here) dilutes the ratio; (2) `--chats` concurrent
chats on SQLite, time to first text p50 ÷ the same on the memory store. Median [min–max] of the per-round
ratios, and the load average before→after.

The servers' listening socket is IPPROTO_TCP, as `agora-agent serve` binds it: with proto 0 asyncio leaves
Nagle on for accepted connections, and a frame written behind an unacknowledged one waits for the client's
delayed ACK (~40 ms) — which once made this ratio 12× one run and 0.2× the next.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx2
from fastapi import Request  # module level: the raw endpoint's annotation must resolve

PATHS = {"raw": "/raw/chat", "agora": "/agent/chat"}


def words(deltas: int) -> list[str]:
    return [f"w{i} " for i in range(deltas)]


def raw_app(deltas: int) -> Any:
    from fastapi import FastAPI
    from fastapi.responses import StreamingResponse

    app = FastAPI()

    @app.post("/raw/chat")
    async def chat(request: Request) -> StreamingResponse:
        await request.json()

        async def events() -> AsyncIterator[bytes]:
            yield b'event: meta\ndata: {"runId":"r","threadId":"t"}\n\n'
            for i, word in enumerate(words(deltas), start=1):
                yield f"id: {i}\ndata: {json.dumps({'delta': word})}\n\n".encode()
            yield b"event: done\ndata: {}\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return app


def agora_app(deltas: int, store: str | None = None) -> Any:
    from agora_agent import AgentConfig
    from agora_agent.actors import HeaderActorResolver
    from agora_agent.testing import FakeModel, ScriptedTurn
    from agora_agent.web import create_app

    text = "".join(words(deltas))  # FakeModel streams one delta per word
    model = FakeModel(lambda request, i: ScriptedTurn(text=text))
    return create_app(AgentConfig(model=model, actor_resolver=HeaderActorResolver(), store=store))


def _serve(kind: str, deltas: int, sock: socket.socket, store: str | None = None) -> None:
    import logging

    import uvicorn

    logging.getLogger("agora_agent").setLevel(logging.ERROR)
    app = raw_app(deltas) if kind == "raw" else agora_app(deltas, store)
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


def start_server(kind: str, deltas: int, store: str | None = None) -> tuple[str, Callable[[], None]]:
    """A server process on a free port; returns its base URL and a stop function."""
    # IPPROTO_TCP, as `agora-agent serve` binds (cli/_net.py): with proto 0 asyncio leaves Nagle on for the
    # connections it accepts, and a frame written behind an unacknowledged one waits for the client's delayed
    # ACK (~40 ms) — the stall that made TTFB flip between 0.2× and 12× from run to run.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)  # requests queue here until the server accepts: no readiness polling
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    proc = multiprocessing.get_context("fork").Process(target=_serve, args=(kind, deltas, sock, store), daemon=True)
    proc.start()

    def stop() -> None:
        proc.terminate()
        proc.join(10)
        sock.close()

    return base, stop


async def bench(kind: str, chats: int, deltas: int, rounds: int, store: str | None = None) -> list[Round]:
    base, stop = start_server(kind, deltas, store)
    try:
        await run_round(base, PATHS[kind], min(chats, 20))  # warm-up (imports, first connections)
        return [await run_round(base, PATHS[kind], chats) for _ in range(rounds)]
    finally:
        stop()


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


async def first_byte(client: httpx2.AsyncClient, path: str, i: int) -> float:
    """httpx2: seconds from sending the request to the first byte of the response body (the stream drained)."""
    start = time.perf_counter()
    first: float | None = None
    headers = {"x-actor-id": f"user{i % 50}"}
    async with client.stream("POST", path, json={"message": f"hello {i}"}, headers=headers) as response:
        async for _chunk in response.aiter_raw():
            if first is None:
                first = time.perf_counter() - start
    assert first is not None and response.status_code == 200, response.status_code
    return first


class LeanClient:
    """One keep-alive HTTP/1.1 connection that writes each request in ONE `write` and times the first body
    byte: next to no client CPU, so the figure is the server's (httpx2 adds 1–1.5 ms of its own per request here).

    It reads the chunked body to its end, so the connection is reused as a browser's would be."""

    def __init__(self, base: str) -> None:
        self.host, port = base.removeprefix("http://").split(":")
        self.port = int(port)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def first_byte(self, path: str, i: int) -> float:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        reader, writer = self.reader, self.writer
        assert reader is not None
        body = json.dumps({"message": f"hello {i}"}).encode()
        request = (
            f"POST {path} HTTP/1.1\r\nhost: {self.host}:{self.port}\r\ncontent-type: application/json\r\n"
            f"x-actor-id: user{i % 50}\r\ncontent-length: {len(body)}\r\n\r\n"
        ).encode() + body
        start = time.perf_counter()
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and b"chunked" in head.lower(), head
        first: float | None = None
        while True:  # chunked body: <hex size>\r\n<data>\r\n ... 0\r\n\r\n
            size = int((await reader.readuntil(b"\r\n"))[:-2], 16)
            if first is None:
                first = time.perf_counter() - start
            await reader.readexactly(size + 2)
            if size == 0:
                return first

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            await self.writer.wait_closed()


def spread(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):.2f}×  [{min(ratios):.2f}–{max(ratios):.2f}]"


async def sequential_round(raw_base: str, lite_base: str, chats: int) -> dict[str, list[float]]:
    """`chats` requests to each server, alternating request by request, with both clients; seconds."""
    seq: dict[str, list[float]] = {"raw": [], "sqlite": [], "raw_httpx": [], "sqlite_httpx": []}
    raw, lite = LeanClient(raw_base), LeanClient(lite_base)
    try:
        async with httpx2.AsyncClient(timeout=120) as client:
            for i in range(chats):
                seq["raw"].append(await raw.first_byte(PATHS["raw"], i))
                seq["sqlite"].append(await lite.first_byte(PATHS["agora"], i))
                seq["raw_httpx"].append(await first_byte(client, raw_base + PATHS["raw"], i))
                seq["sqlite_httpx"].append(await first_byte(client, lite_base + PATHS["agora"], i))
    finally:
        await raw.close()
        await lite.close()
    return seq


async def table(args: argparse.Namespace) -> None:
    """The two SSE rows of issue #18, interleaved rounds against three servers running side by side."""
    load_before = os.getloadavg()
    tmp = tempfile.TemporaryDirectory(prefix="agora-sse-")
    raw_base, stop_raw = start_server("raw", args.deltas)
    mem_base, stop_mem = start_server("agora", args.deltas)
    lite_base, stop_lite = start_server("agora", args.deltas, f"sqlite:///{tmp.name}/sse.db")
    ttfb: dict[str, list[float]] = {"lean": [], "httpx": []}
    samples: dict[str, list[float]] = {"raw": [], "sqlite": [], "raw_httpx": [], "sqlite_httpx": []}
    concurrent: list[float] = []
    medians: dict[str, list[float]] = {"memory500": [], "sqlite500": []}
    try:
        for base, path in ((raw_base, PATHS["raw"]), (mem_base, PATHS["agora"]), (lite_base, PATHS["agora"])):
            await run_round(base, path, 20)  # warm-up
        await sequential_round(raw_base, lite_base, 10)
        for _ in range(args.rounds):
            seq = await sequential_round(raw_base, lite_base, args.sequential)
            for key, values in seq.items():
                samples[key] += values
            p50 = {key: pct(values, 0.5) for key, values in seq.items()}
            ttfb["lean"].append(p50["sqlite"] / p50["raw"])
            ttfb["httpx"].append(p50["sqlite_httpx"] / p50["raw_httpx"])
            mem = await run_round(mem_base, PATHS["agora"], args.chats)
            lite = await run_round(lite_base, PATHS["agora"], args.chats)
            if mem.errors or lite.errors:
                print(f"  errors: memory {mem.errors}, sqlite {lite.errors}")
            medians["memory500"].append(pct(mem.ttft, 0.5))
            medians["sqlite500"].append(pct(lite.ttft, 0.5))
            concurrent.append(pct(lite.ttft, 0.5) / pct(mem.ttft, 0.5))
    finally:
        stop_raw()
        stop_mem()
        stop_lite()
        tmp.cleanup()
    ms = {k: statistics.median(v) * 1000 for k, v in (medians | samples).items()}
    load = ", ".join(f"{a:.2f}→{b:.2f}" for a, b in zip(load_before, os.getloadavg(), strict=True))
    print(f"{args.rounds} interleaved rounds, {os.cpu_count()} CPUs, load average (1, 5, 15 min) {load}")
    print(
        f"  POST /agent/chat TTFB on SQLite ÷ raw FastAPI SSE ({args.sequential} sequential chats a round, p50, "
        f"keep-alive, one-write client): {spread(ttfb['lean'])}  (all rounds' p50 {ms['sqlite']:.2f} ms vs "
        f"{ms['raw']:.2f} ms = {ms['sqlite'] / ms['raw']:.2f}×)  target ≤ 2×"
    )
    print(
        f"      the same through httpx2: {spread(ttfb['httpx'])}  (all rounds' p50 {ms['sqlite_httpx']:.2f} ms vs "
        f"{ms['raw_httpx']:.2f} ms = {ms['sqlite_httpx'] / ms['raw_httpx']:.2f}×)"
    )
    print(
        f"  {args.chats} concurrent chats on SQLite, time to first text p50 ÷ memory store: "
        f"{spread(concurrent)}  ({ms['sqlite500']:.0f} ms vs {ms['memory500']:.0f} ms)  target ≤ 2×"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--deltas", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--store", choices=("memory", "sqlite"), default="memory", help="our server's store")
    parser.add_argument("--table", action="store_true", help="the issue #18 rows (TTFB and 500 chats on SQLite)")
    parser.add_argument("--sequential", type=int, default=100, help="--table: sequential chats per round for TTFB")
    args = parser.parse_args()
    if args.table:
        if args.chats == 200:
            args.chats = 500
        await table(args)
        return
    print(
        f"{args.chats} concurrent chats x {args.deltas} deltas, {args.rounds} rounds each, "
        f"uvicorn on 127.0.0.1, {os.cpu_count()} CPUs"
    )
    raw = summarise("raw", await bench("raw", args.chats, args.deltas, args.rounds), args.chats, args.deltas)
    with tempfile.TemporaryDirectory(prefix="agora-sse-") as tmp:
        store = f"sqlite:///{tmp}/sse.db" if args.store == "sqlite" else None
        rounds = await bench("agora", args.chats, args.deltas, args.rounds, store)
    ours = summarise("agora", rounds, args.chats, args.deltas)
    throughput = ours["deltas_per_s"] / raw["deltas_per_s"]
    ttft = ours["p99_ttft_ms"] / raw["p99_ttft_ms"]
    print(
        f"ratios: throughput {throughput:.2f}x raw (target >= 0.5x: {'ok' if throughput >= 0.5 else 'MISSED'}), "
        f"p99 TTFT {ttft:.2f}x raw (target <= 2x: {'ok' if ttft <= 2 else 'MISSED'}), "
        f"p50 TTFT {ours['p50_ttft_ms'] / raw['p50_ttft_ms']:.2f}x raw"
    )


if __name__ == "__main__":
    asyncio.run(main())
