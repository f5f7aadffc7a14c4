"""Uploads on disk: sniffing at the door, the uploader-only download route, the SQLite default, restarts."""

from __future__ import annotations

from pathlib import Path

from agora_agent.stores.attachments import FilesystemAttachmentStore
from agora_agent.testing.helpers import OBSERVER

from .conftest import ALICE, BOB, asgi_client, make_config

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x01" * 40
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script></svg>'
ALL_TYPES = ("image/png", "text/plain", "image/svg+xml", "text/html")


def _files(directory: Path) -> list[Path]:
    return list(directory.rglob("att_*"))


async def upload(client: object, name: str, data: bytes, content_type: str, headers: dict[str, str]) -> object:
    return await client.post("/agent/attachments", files={"file": (name, data, content_type)}, headers=headers)  # type: ignore[attr-defined]


async def test_a_disguised_file_is_refused_as_what_it_is(tmp_path: Path) -> None:
    store = FilesystemAttachmentStore(tmp_path)
    async with asgi_client(make_config(attachment_staging=store)) as (client, _):
        r = await upload(client, "notes.txt", PNG, "text/plain", ALICE)
        assert r.status_code == 415
        assert r.json() == {"error": 'the file was sent as "text/plain" but its content is "image/png"'}
        r = await upload(client, "cat.png", b"just text", "image/png", ALICE)
        assert r.status_code == 415 and '"text/plain"' in r.json()["error"]
        r = await upload(client, "empty.txt", b"", "text/plain", ALICE)
        assert (r.status_code, r.json()) == (415, {"error": "the file is empty"})
        r = await upload(client, "x.txt", SVG, "text/plain", ALICE)  # markup posing as text
        assert r.status_code == 415 and "image/svg+xml" in r.json()["error"]
        r = await upload(client, "cat.bin", PNG, "application/octet-stream", ALICE)  # unknown type
        assert r.status_code == 415  # octet-stream itself is not on the allow-list: refused before sniffing
    assert _files(tmp_path) == []  # nothing refused was written


async def test_uploader_only_download_with_safe_headers(tmp_path: Path) -> None:
    store = FilesystemAttachmentStore(tmp_path)
    config = make_config(attachment_staging=store, attachment_allowed_content_types=ALL_TYPES)
    async with asgi_client(config) as (client, _):
        r = await upload(client, "cat.png", PNG, "image/png", ALICE)
        assert r.status_code == 200
        staged = r.json()
        assert staged["url"] == f"/agent/attachments/{staged['mediaId']}" and staged["contentType"] == "image/png"
        got = await client.get(staged["url"], headers=ALICE)
        assert got.status_code == 200 and got.content == PNG
        assert got.headers["content-type"] == "image/png" and got.headers["x-content-type-options"] == "nosniff"
        assert got.headers["content-disposition"].startswith("inline")
        assert "sandbox" in got.headers["content-security-policy"]
        assert (await client.get(staged["url"], headers=BOB)).status_code == 404  # not yours: not even "forbidden"
        assert (await client.get(staged["url"])).status_code == 401
        assert (await client.get("/agent/attachments/att_../../etc/passwd", headers=ALICE)).status_code == 404
        assert (await client.get("/agent/attachments/att_0000", headers=ALICE)).status_code == 404

        svg = (await upload(client, "logo.svg", SVG, "image/svg+xml", ALICE)).json()
        served = await client.get(svg["url"], headers=ALICE)
        assert served.headers["content-disposition"].startswith("attachment")  # never drawn inline
        assert served.headers["content-type"].startswith("image/svg+xml")


async def test_sqlite_deployments_get_uploads_that_survive_a_restart(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'agent.db'}"
    async with asgi_client(make_config(store=url)) as (client, _):
        staged = (await upload(client, "cat.png", PNG, "image/png", ALICE)).json()
    assert _files(tmp_path / "attachments")  # beside the database file
    async with asgi_client(make_config(store=url)) as (client, _):  # a new process: metadata came from SQL
        got = await client.get(staged["url"], headers=ALICE)
        assert got.status_code == 200 and got.content == PNG
        assert (await client.get(staged["url"], headers=BOB)).status_code == 404


async def test_chat_attachments_must_be_the_callers_own_uploads(tmp_path: Path) -> None:
    store = FilesystemAttachmentStore(tmp_path)
    async with asgi_client(make_config(attachment_staging=store)) as (client, service):
        staged = (await upload(client, "cat.png", PNG, "image/png", ALICE)).json()
        forged = [
            {**staged, "mediaId": "att_" + "0" * 32},  # unknown
            {"mediaId": "x", "url": "file:///etc/passwd", "contentType": "text/plain", "name": "passwd"},
            {
                "mediaId": "y",
                "url": "http://169.254.169.254/latest/meta-data/",
                "contentType": "image/png",
                "name": "m",
            },
        ]
        for attachment in forged:
            r = await client.post("/agent/chat", json={"message": "look", "attachments": [attachment]}, headers=ALICE)
            assert r.status_code == 422 and "not one of your uploads" in r.json()["error"]
        r = await client.post("/agent/chat", json={"message": "look", "attachments": [staged]}, headers=BOB)
        assert r.status_code == 422  # alice's upload is not bob's to send
        tampered = {**staged, "url": "http://169.254.169.254/x", "contentType": "text/plain", "name": "evil"}
        r = await client.post("/agent/chat", json={"message": "look", "attachments": [tampered]}, headers=ALICE)
        assert r.status_code == 200
        await service.wait_for_run(OBSERVER, r.headers["x-agent-run-id"])
        detail = (await client.get(f"/agent/threads/{r.headers['x-agent-thread-id']}", headers=ALICE)).json()
        assert detail["messages"][0]["attachments"] == [staged]  # the stored record, not the client's claims
    async with asgi_client(make_config()) as (client, _):  # no staging store: nothing to check them against
        r = await client.post("/agent/chat", json={"message": "look", "attachments": [staged]}, headers=ALICE)
        assert r.status_code == 422 and "uploaded first" in r.json()["error"]
