"""POST /attachments (HTTP-13, ATT-03..05): mounting, check order 401 -> 400 -> 415 -> 413, staging, chat use."""

from __future__ import annotations

import base64

import pytest

from agora_agent.stores.attachments import MemoryAttachmentStore
from agora_agent.testing.helpers import OBSERVER

from .conftest import ALICE, asgi_client, make_config


async def test_not_mounted_without_a_store() -> None:
    async with asgi_client(make_config()) as (client, _):
        r = await client.post("/agent/attachments", files={"file": ("a.txt", b"x", "text/plain")}, headers=ALICE)
        assert r.status_code == 404


@pytest.mark.ref("HTTP-13", "ATT-03", "ATT-04", "ATT-05", "ATT-01")
async def test_upload_checks_in_order_then_stages() -> None:
    store = MemoryAttachmentStore()
    async with asgi_client(make_config(attachment_staging=store, attachment_max_bytes=10)) as (client, service):
        files = {"file": ("notes.txt", b"hello", "text/plain; charset=utf-8")}
        assert (await client.post("/agent/attachments", files=files)).status_code == 401
        r = await client.post("/agent/attachments", files={"other": ("a", b"x", "text/plain")}, headers=ALICE)
        assert (r.status_code, r.json()) == (400, {"error": 'multipart field "file" is required'})
        r = await client.post("/agent/attachments", json={"file": "x"}, headers=ALICE)
        assert r.status_code == 400
        # Type is checked before size: an oversized markdown file is a 415.
        r = await client.post("/agent/attachments", files={"file": ("a.md", b"x" * 50, "text/markdown")}, headers=ALICE)
        assert r.status_code == 415
        assert r.json()["error"].startswith('content type "text/markdown" is not allowed (allowed: image/png, ')
        r = await client.post("/agent/attachments", files={"file": ("a.txt", b"x" * 11, "text/plain")}, headers=ALICE)
        assert (r.status_code, r.json()) == (413, {"error": "file exceeds the 10-byte limit"})
        assert store.staged == []

        r = await client.post("/agent/attachments", files=files, headers=ALICE)
        assert r.status_code == 200
        staged = r.json()
        assert staged == {
            "mediaId": "media-1",
            "url": "data:text/plain;base64," + base64.b64encode(b"hello").decode(),
            "contentType": "text/plain",
            "name": "notes.txt",
        }
        assert (store.staged[0].actor_id, store.staged[0].size_bytes) == ("alice", 5)

        chat = await client.post("/agent/chat", json={"message": "read this", "attachments": [staged]}, headers=ALICE)
        assert chat.status_code == 200
        await service.wait_for_run(OBSERVER, chat.headers["x-agent-run-id"])
        detail = (await client.get(f"/agent/threads/{chat.headers['x-agent-thread-id']}", headers=ALICE)).json()
        assert detail["messages"][0]["attachments"] == [staged]
