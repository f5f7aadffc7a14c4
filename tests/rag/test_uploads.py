"""Ingesting files: allow-list, size limit, extractors (text, Markdown, HTML, CSV, JSON, PDF), skip reasons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agora_agent import Actor
from agora_agent.errors import ConfigurationError, NotFoundError
from agora_agent.rag import HashingEmbedder, KeywordRetriever, MemoryVectorStore, acl_filter
from agora_agent.rag.extract import TextExtractor, guess_content_type, html_to_text
from agora_agent.rag.uploads import UploadedFile, ingest_attachment, ingest_files, ingest_upload
from agora_agent.stores.attachments import FilesystemAttachmentStore

from .pdf import make_pdf

pytestmark = pytest.mark.ref("RAG-25", "RAG-26")

HTML = b"""<html><head><title>t</title><style>p{color:red}</style></head><body>
<script>alert('x')</script><h1>Returns&nbsp;policy</h1><p>Send it back within <b>30</b> days &amp; get a refund.</p>
</body></html>"""


def test_html_text_drops_scripts_styles_and_tags() -> None:
    assert html_to_text(HTML) == "Returns\xa0policy\n\nSend it back within 30 days & get a refund."


def test_guess_content_type() -> None:
    assert guess_content_type("notes/guide.MD") == "text/markdown"
    assert guess_content_type("rows.csv") == "text/csv"
    assert guess_content_type("blob.bin") == "application/octet-stream"


def test_registered_extractors_and_families() -> None:
    extractor = TextExtractor().register("application/x-upper", lambda b: b.decode().upper())
    assert extractor.extract(b"abc", "Application/X-Upper; charset=utf-8") == "ABC"
    assert extractor.extract(b"x", "image/png") is None
    assert extractor.register("image/*", lambda b: "an image").extract(b"", "image/png") == "an image"


async def test_each_type_ingests_and_every_skip_has_a_reason() -> None:
    store, embedder = MemoryVectorStore(), HashingEmbedder(64)
    rows = "sku,name\n" + "\n".join(f"{i},widget number {i}" for i in range(200))
    files = [
        UploadedFile(document_id="a.txt", data=b"plain words about parcels", content_type="text/plain"),
        UploadedFile(document_id="b.md", data=b"# Title\n\nmarkdown about refunds", content_type="text/markdown"),
        UploadedFile(document_id="c.html", data=HTML, content_type="text/html; charset=utf-8"),
        UploadedFile(document_id="d.csv", data=rows.encode(), content_type="text/csv"),
        UploadedFile(
            document_id="e.json",
            data=json.dumps({"faq": "invoice downloads"}).encode(),
            content_type="application/json",
        ),
        UploadedFile(
            document_id="f.pdf",
            data=make_pdf(["Warranty covers two years", "of repairs"]),
            content_type="application/pdf",
            source="f.pdf",
        ),
        UploadedFile(document_id="g.png", data=b"\x89PNG", content_type="image/png"),
        UploadedFile(document_id="h.txt", data=b"x" * 101, content_type="text/plain"),
        UploadedFile(document_id="i.txt", data=b"   \n ", content_type="text/plain"),
        UploadedFile(document_id="j.pdf", data=b"%PDF-1.4 broken", content_type="application/pdf"),
    ]
    outcomes = await ingest_files(files, embedder=embedder, store=store, tenant_ref="acme", max_bytes=100_000)
    by_id = {o.document_id: o for o in outcomes}
    assert all(
        by_id[i].status == "ingested" and by_id[i].chunks >= 1 for i in ("a.txt", "b.md", "c.html", "e.json", "f.pdf")
    )
    assert by_id["d.csv"].chunks > 1  # rows packed into several chunks, never cut mid-row
    assert (by_id["g.png"].status, by_id["g.png"].reason) == ("skipped", "unsupported-type")
    assert (by_id["i.txt"].reason, by_id["j.pdf"].reason) == ("empty-text", "unreadable")
    small = await ingest_files([files[7]], embedder=embedder, store=store, tenant_ref="acme", max_bytes=100)
    assert small[0].reason == "too-large"
    keyword = KeywordRetriever(store)
    (hit,) = await keyword.retrieve("warranty repairs", top_k=1)
    assert hit.document_id == "f.pdf" and "Warranty covers two years" in hit.text and hit.source == "f.pdf"
    csv_chunks = await keyword.retrieve("widget", top_k=50)
    assert all(line.count(",") == 1 for p in csv_chunks for line in p.text.split("\n") if line)
    assert await store.list_document_ids({"tenant_ref": "acme"}) == sorted(
        ["a.txt", "b.md", "c.html", "d.csv", "e.json", "f.pdf", "h.txt"]
    )
    # the allow-list is the caller's: markdown refused when not listed
    (refused,) = await ingest_files(
        [files[1]], embedder=embedder, store=store, tenant_ref="acme", content_types=("text/plain",)
    )
    assert refused.reason == "unsupported-type"


async def test_an_upload_is_stamped_with_the_uploaders_tenant() -> None:
    store, embedder = MemoryVectorStore(), HashingEmbedder(64)
    uploader = Actor("u1", roles=("member",), tenant_ref="globex")
    await ingest_upload(
        uploader,
        UploadedFile(document_id="m1", data=b"globex private pricing sheet", content_type="text/plain"),
        embedder=embedder,
        store=store,
    )
    acme = Actor("u2", roles=("member",), tenant_ref="acme")
    assert await KeywordRetriever(store).retrieve("pricing", filter=acl_filter(acme)) == []
    assert len(await KeywordRetriever(store).retrieve("pricing", filter=acl_filter(uploader))) == 1
    with pytest.raises(ConfigurationError) as no_tenant:
        await ingest_upload(
            Actor("anon"),
            UploadedFile(document_id="m2", data=b"x", content_type="text/plain"),
            embedder=embedder,
            store=store,
        )
    assert no_tenant.value.code == "no_tenant"


async def test_a_chat_attachment_is_ingested_from_the_staging_store(tmp_path: Path) -> None:
    staging = FilesystemAttachmentStore(tmp_path)
    store, embedder = MemoryVectorStore(), HashingEmbedder(64)
    alice = Actor("alice", roles=("member",), tenant_ref="acme")
    data = b"Acme warranty: skates are covered for two years."
    att = await staging.stage(
        data=data, filename="warranty.txt", content_type="text/plain", size_bytes=len(data), actor=alice
    )
    outcome = await ingest_attachment(alice, att.media_id, staging=staging, embedder=embedder, store=store)
    assert (outcome.status, outcome.document_id) == ("ingested", f"attachment:{att.media_id}")
    hits = await KeywordRetriever(store).retrieve("warranty skates", filter=acl_filter(alice))
    assert hits and hits[0].metadata["tenant_ref"] == "acme"
    bob = Actor("bob", roles=("member",), tenant_ref="globex")
    assert await KeywordRetriever(store).retrieve("warranty skates", filter=acl_filter(bob)) == []
    with pytest.raises(NotFoundError):  # not bob's upload: he cannot put it in any knowledge base
        await ingest_attachment(bob, att.media_id, staging=staging, embedder=embedder, store=store)
    with pytest.raises(NotFoundError):
        await ingest_attachment(alice, "att_missing", staging=staging, embedder=embedder, store=store)
