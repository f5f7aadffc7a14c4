"""`OpenAIEmbedder` against a real HTTP server speaking the OpenAI embeddings wire format on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn

from agora_agent.errors import ModelError
from agora_agent.models.openai import OpenAIChatModel
from agora_agent.rag import OpenAIEmbedder


class EmbeddingsServer:
    """`POST /v1/embeddings` -> one vector per input ([len(text), index, 1.0]), data listed in reverse order."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.fail_with: int | None = None
        self.port = 0

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        body = json.loads(raw)
        self.bodies.append(body)
        if self.fail_with is not None:
            status, payload = self.fail_with, {"error": {"message": "model not found", "type": "invalid_request"}}
        else:
            data = [
                {"object": "embedding", "index": i, "embedding": [float(len(t)), float(i), 1.0]}
                for i, t in enumerate(body["input"])
            ]
            status = 200
            payload = {"object": "list", "data": data[::-1], "model": body["model"], "usage": {}}
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]}
        )
        await send({"type": "http.response.body", "body": json.dumps(payload).encode()})


@pytest.fixture
async def server() -> AsyncIterator[EmbeddingsServer]:
    fake = EmbeddingsServer()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.setblocking(False)
    fake.port = sock.getsockname()[1]
    config = uvicorn.Config(
        fake.app, interface="asgi3", lifespan="off", log_level="warning", access_log=False, timeout_graceful_shutdown=1
    )
    uv = uvicorn.Server(config)
    task = asyncio.create_task(uv._serve(sockets=[sock]))
    yield fake
    uv.should_exit = True
    await asyncio.wait_for(task, 10)


async def test_batches_orders_by_index_and_learns_the_dimension(server: EmbeddingsServer) -> None:
    embedder = OpenAIEmbedder("nomic-embed-text", base_url=f"http://127.0.0.1:{server.port}/v1", batch_size=2)
    assert embedder.dimensions is None
    vectors = await embedder.embed(["a", "bb", "ccc"])
    assert vectors == [[1.0, 0.0, 1.0], [2.0, 1.0, 1.0], [3.0, 0.0, 1.0]]
    assert [b["input"] for b in server.bodies] == [["a", "bb"], ["ccc"]]
    assert server.bodies[0]["model"] == "nomic-embed-text" and "dimensions" not in server.bodies[0]
    assert embedder.dimensions == 3 and embedder.model_id == "openai:nomic-embed-text"
    await embedder.aclose()


async def test_reuses_the_chat_adapters_client(server: EmbeddingsServer) -> None:
    chat = OpenAIChatModel("some-chat-model", base_url=f"http://127.0.0.1:{server.port}/v1")
    embedder = OpenAIEmbedder.from_chat_model(chat, "text-embedding-3-small", dimensions=3, request_dimensions=True)
    assert embedder.client is chat.client
    await embedder.embed(["x"])
    assert server.bodies[-1]["dimensions"] == 3
    await chat.aclose()


async def test_errors_are_model_errors_and_dimension_drift_is_refused(server: EmbeddingsServer) -> None:
    embedder = OpenAIEmbedder("m", base_url=f"http://127.0.0.1:{server.port}/v1", dimensions=5)
    with pytest.raises(ModelError) as drift:
        await embedder.embed(["x"])
    assert drift.value.code == "dimensions_changed" and "expected 5" in str(drift.value)
    server.fail_with = 404
    with pytest.raises(ModelError) as failed:
        await embedder.embed(["x"])
    assert (failed.value.status, failed.value.retryable) == (404, False)
    await embedder.aclose()
