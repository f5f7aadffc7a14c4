"""The demo's help-centre corpus (our own text) and the retriever built on it.

Eight shared articles every tenant reads, one document private to the `acme` tenant (its escalation line and
code) and one private to `globex`. With the demo users: Alice and Carol (acme) can get Acme's escalation code;
Bob (globex) never can — the access filter is applied inside the store query, so the passage never reaches
his prompt, his tool results, his stream or his stored thread.

The store is the SQLite vector store in the demo's own database file when the `rag` extra is installed (the
embedded default), else the in-memory store; the embedder is the deterministic hashing one (offline).
"""

from __future__ import annotations

import logging
from pathlib import Path

from agora_agent.errors import ConfigurationError
from agora_agent.rag import (
    SHARED,
    Document,
    EmbeddingRetriever,
    HashingEmbedder,
    HybridRetriever,
    KeywordRetriever,
    MemoryVectorStore,
    VectorStore,
    ingest_documents,
)

__all__ = ["ACME_ESCALATION_CODE", "ARTICLES", "GLOBEX_PRIVATE", "TENANT_DOCS", "HelpCentre"]

logger = logging.getLogger("agora_agent.demo")

ACME_ESCALATION_CODE = "ACME-ESC-7731"

ARTICLES: tuple[Document, ...] = (
    Document(
        id="returns",
        source="help/returns.md",
        text="Returns. You can return any unused item within 30 days of delivery. Start a return from the order "
        "page, print the prepaid label and drop the parcel at any courier point. Refunds go back to the original "
        "payment method within five working days after the parcel reaches our warehouse.",
    ),
    Document(
        id="shipping",
        source="help/shipping.md",
        text="Shipping times. Standard shipping takes two to four working days; express shipping arrives the next "
        "working day when ordered before 2 pm. Every parcel gets a tracking link by email as soon as it leaves the "
        "warehouse.",
    ),
    Document(
        id="password",
        source="help/password.md",
        text="Resetting your password. Open the sign-in page, choose 'Forgot password' and enter your email "
        "address. The reset link is valid for one hour. If the email does not arrive, check the spam folder.",
    ),
    Document(
        id="invoices",
        source="help/invoices.md",
        text="Invoices. Every order has a PDF invoice on the Billing page of your account. Company details and VAT "
        "numbers can be added before checkout; an invoice cannot be changed once it has been issued.",
    ),
    Document(
        id="payment-methods",
        source="help/payment-methods.md",
        text="Payment methods. We accept cards, bank transfer and PayPal. Bank transfers must arrive within seven "
        "days, otherwise the order is cancelled automatically.",
    ),
    Document(
        id="damaged-items",
        source="help/damaged-items.md",
        text="Damaged or missing items. Report a damaged or missing item within 48 hours of delivery with a photo "
        "of the parcel. We send a replacement or refund the item, and you keep nothing to return.",
    ),
    Document(
        id="account-deletion",
        source="help/account-deletion.md",
        text="Deleting your account. Write to support from the email address of the account. We delete personal "
        "data within 30 days; invoices are kept for ten years because the law requires it.",
    ),
    Document(
        id="opening-hours",
        source="help/opening-hours.md",
        text="Support hours. The support team answers chat and email from 8 am to 6 pm, Monday to Friday. Urgent "
        "tickets outside those hours are handled the next working day.",
    ),
)

TENANT_DOCS: dict[str, tuple[Document, ...]] = {
    "acme": (
        Document(
            id="acme-escalation",
            source="acme/escalation.md",
            text="Acme escalation. Acme has a dedicated escalation line for urgent tickets: call +1 555 0100 and "
            f"quote the escalation code {ACME_ESCALATION_CODE}. The line is open around the clock.",
        ),
    ),
    "globex": (
        Document(
            id="globex-discounts",
            source="globex/discounts.md",
            text="Globex contract discounts. Globex orders get a 12 percent contract discount on every invoice; "
            "quote contract number GLX-2291 when you call support.",
        ),
    ),
}
GLOBEX_PRIVATE = "GLX-2291"


class HelpCentre:
    """The corpus's store, and the retriever that inject mode and the `search_help` tool share.

    Built synchronously (the config needs the retriever); `load()` ingests, at application start-up.
    """

    def __init__(self, db_path: Path | None = None) -> None:
        self.store, self.kind = _open_store(db_path)
        self.path: Path | None = getattr(self.store, "path", None)  # its SQLite file (None: in memory)
        self.embedder = HashingEmbedder(256)
        self.retriever = HybridRetriever([EmbeddingRetriever(self.embedder, self.store), KeywordRetriever(self.store)])

    async def load(self) -> int:
        """Ingest the corpus (idempotent: each document's chunks are replaced); returns the chunks written."""
        options = {"embedder": self.embedder, "store": self.store, "chunk_size": 400, "overlap": 40}
        written = await ingest_documents(ARTICLES, tenant_ref=SHARED, **options)  # type: ignore[arg-type]
        for tenant, docs in TENANT_DOCS.items():
            written += await ingest_documents(docs, tenant_ref=tenant, **options)  # type: ignore[arg-type]
        return written

    async def close(self) -> None:
        close = getattr(self.store, "close", None)
        if close is not None:
            await close()


def _open_store(db_path: Path | None) -> tuple[VectorStore, str]:
    if db_path is not None:
        try:
            from agora_agent.rag.sqlite_store import SqliteVectorStore

            # Its own file beside the agent store's (demo.db -> demo-rag.db): see SqliteVectorStore's docstring.
            store = SqliteVectorStore.beside(db_path)
            store.probe()  # fail now (extra missing) rather than at the first chat
            return store, "sqlite-vec"
        except (ConfigurationError, ImportError) as exc:
            logger.info("help centre: %s; using the in-memory vector store", exc)
    return MemoryVectorStore(), "memory"
