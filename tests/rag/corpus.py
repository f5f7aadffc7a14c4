"""A small two-tenant corpus for the inject-mode and access-control tests."""

from __future__ import annotations

from agora_agent import Actor
from agora_agent.rag import SHARED, Document, HashingEmbedder, MemoryVectorStore, VectorStore, ingest_documents

ACME_SECRET = "ACME-ESCALATION-7731"
ACME_ADMIN_SECRET = "AZURE-PAYROLL-42"
GLOBEX_SECRET = "GLOBEX-CONTRACT-9924"
FOREIGN_TO_ACME_MEMBER = (ACME_ADMIN_SECRET, GLOBEX_SECRET)

ACME_MEMBER = Actor("alice", roles=("member",), tenant_ref="acme")
ACME_ADMIN = Actor("ada", roles=("admin",), tenant_ref="acme")
GLOBEX_USER = Actor("bob", roles=("member",), tenant_ref="globex")
NO_TENANT = Actor("drifter", roles=("member",))

SHARED_DOCS = [
    Document(id="refunds", text="Refunds are paid within five days to the original card.", source="refunds.md"),
    Document(id="shipping", text="Parcels ship in two days; tracking links arrive by email.", source="shipping.md"),
]


async def load(store: VectorStore | None = None, embedder: HashingEmbedder | None = None) -> VectorStore:
    """Shared help articles, one acme-private note, one acme admin-only note, one globex-private note."""
    store = store or MemoryVectorStore()
    embedder = embedder or HashingEmbedder(64)
    await ingest_documents(SHARED_DOCS, embedder=embedder, store=store, tenant_ref=SHARED)
    await ingest_documents(
        [Document(id="acme-escalation", text=f"Acme escalation code for urgent tickets: {ACME_SECRET}. Secret code.")],
        embedder=embedder,
        store=store,
        tenant_ref="acme",
    )
    await ingest_documents(
        [Document(id="acme-payroll", text=f"Acme payroll budget and secret code: {ACME_ADMIN_SECRET}.")],
        embedder=embedder,
        store=store,
        tenant_ref="acme",
        allowed_roles=["admin"],
    )
    await ingest_documents(
        [
            Document(
                id="globex-contract",
                text=f"Globex contract secret code for tickets, payroll and refunds: {GLOBEX_SECRET}.",
                metadata={"tenant_ref": "acme", "allowed_roles": ["*"]},  # forged: ingestion overwrites tenant_ref
            )
        ],
        embedder=embedder,
        store=store,
        tenant_ref="globex",
    )
    return store
