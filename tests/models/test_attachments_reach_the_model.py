"""Uploaded files reach each adapter's fake provider as native parts: an image and a PDF staged on disk
arrive inline (`data:`), a text file is inlined into the message, an unsupported type never calls the model."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeProviderServer, an_text_block, anthropic_reply, openai_reply
from test_adapter_loop import CASES

from agora_agent import Actor, AgentConfig, AgentService
from agora_agent.errors import InvalidRequestError
from agora_agent.media.prepare import UnsupportedAttachmentError
from agora_agent.stores.attachments import FilesystemAttachmentStore
from agora_agent.testing.helpers import OBSERVER

ALICE = Actor("alice", roles=("member",))
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x01" * 40
PDF = b"%PDF-1.7\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n"


@pytest.fixture(params=list(CASES))
async def setup(
    request: pytest.FixtureRequest, fake_server: FakeProviderServer, tmp_path: Path
) -> AsyncIterator[tuple[str, AgentService, FilesystemAttachmentStore]]:
    build, _ = CASES[request.param]
    reply = anthropic_reply(blocks=[an_text_block(0, ["Seen."])]) if request.param == "anthropic" else None
    fake_server.queue(reply or openai_reply(text=["Seen."]))
    closers: list[Any] = []
    model = await build(fake_server, closers)
    store = FilesystemAttachmentStore(tmp_path / "files")
    async with AgentService.from_config(AgentConfig(model=model, attachment_staging=store)) as svc:
        yield request.param, svc, store
    for close in closers:
        await close()


async def test_image_pdf_and_text_arrive_as_native_parts(
    setup: tuple[str, AgentService, FilesystemAttachmentStore], fake_server: FakeProviderServer
) -> None:
    name, service, store = setup
    image = await store.stage(data=PNG, filename="cat.png", content_type="image/png", size_bytes=len(PNG), actor=ALICE)
    pdf = await store.stage(
        data=PDF, filename="a.pdf", content_type="application/pdf", size_bytes=len(PDF), actor=ALICE
    )
    notes = await store.stage(
        data=b"order 1001 arrived broken", filename="notes.txt", content_type="text/plain", size_bytes=25, actor=ALICE
    )
    assert image.url.startswith("/agent/attachments/att_")  # our route: no provider can reach it
    started = await service.chat(ALICE, "What is in these?", attachments=[image, pdf, notes])
    run = await service.wait_for_run(OBSERVER, started.run_id)
    assert run.status == "completed", run.error
    body = json.dumps(fake_server.requests[0].body)
    png64, pdf64 = base64.b64encode(PNG).decode(), base64.b64encode(PDF).decode()
    assert png64 in body and pdf64 in body and "/agent/attachments/" not in body
    assert "order 1001 arrived broken" in body and "notes.txt" in body
    wire = fake_server.requests[0].body
    if name == "anthropic":
        blocks = wire["messages"][0]["content"]
        assert {b["type"] for b in blocks} >= {"image", "document", "text"}
        assert next(b for b in blocks if b["type"] == "image")["source"]["media_type"] == "image/png"
    else:
        parts = wire["messages"][-1]["content"]
        assert any(p["type"] == "image_url" for p in parts)
        assert any(p["type"] == "file" for p in parts)


async def test_an_unsupported_type_is_refused_before_the_model_is_called(
    setup: tuple[str, AgentService, FilesystemAttachmentStore], fake_server: FakeProviderServer
) -> None:
    _, service, store = setup
    zipped = b"PK\x03\x04" + b"\x00" * 30
    zip_file = await store.stage(
        data=zipped, filename="a.zip", content_type="application/zip", size_bytes=len(zipped), actor=ALICE
    )
    with pytest.raises(UnsupportedAttachmentError) as refused:
        await service.chat(ALICE, "open this", attachments=[zip_file])
    assert isinstance(refused.value, InvalidRequestError)  # a 422
    assert "application/zip" in str(refused.value)  # the 422 names the type
    assert fake_server.requests == []
