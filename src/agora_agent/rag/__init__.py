"""Retrieval with access control: chunking, embedders, vector stores, retrievers, inject mode and the
knowledge search tool. See docs/rag.md.

Core (no dependency): the hashing embedder, the in-memory store, keyword/hybrid/reranking retrievers.
`agora-agent[rag]`: the SQLite (sqlite-vec) and PostgreSQL (pgvector) stores, PDF extraction.
`agora-agent[rag-local]`: the local CPU embedder (all-MiniLM-L6-v2, int8 ONNX, shipped in a package).
"""

from agora_agent.rag.access import EVERYONE, SHARED, RetrievalFilter, acl_filter, stamp_acl, unscoped
from agora_agent.rag.chunking import Chunk, chunk_documents, chunk_text
from agora_agent.rag.embedders import Embedder, HashingEmbedder, OpenAIEmbedder
from agora_agent.rag.filters import (
    InvalidFilterError,
    MetadataFilter,
    UnsafeRemovalError,
    apply_metadata_patch,
    assert_removal_filter,
    effective_patch_keys,
    filter_denies_all,
    matches_filter,
)
from agora_agent.rag.ingest import ingest_chunks, ingest_documents, ingest_for_actor
from agora_agent.rag.inject import InjectRetrieval, context_block
from agora_agent.rag.retrievers import (
    EmbeddingRetriever,
    HybridRetriever,
    KeywordRetriever,
    Reranker,
    RerankingRetriever,
    Retriever,
    TermOverlapReranker,
)
from agora_agent.rag.store import MemoryVectorStore, VectorStore
from agora_agent.rag.tool import KnowledgeTool, knowledge_tool
from agora_agent.rag.types import ChunkRecord, Document, Passage, document_id_of

__all__ = [
    "EVERYONE",
    "SHARED",
    "Chunk",
    "ChunkRecord",
    "Document",
    "Embedder",
    "EmbeddingRetriever",
    "HashingEmbedder",
    "HybridRetriever",
    "InjectRetrieval",
    "InvalidFilterError",
    "KeywordRetriever",
    "KnowledgeTool",
    "MemoryVectorStore",
    "MetadataFilter",
    "OpenAIEmbedder",
    "Passage",
    "Reranker",
    "RerankingRetriever",
    "RetrievalFilter",
    "Retriever",
    "TermOverlapReranker",
    "UnsafeRemovalError",
    "VectorStore",
    "acl_filter",
    "apply_metadata_patch",
    "assert_removal_filter",
    "chunk_documents",
    "chunk_text",
    "context_block",
    "document_id_of",
    "effective_patch_keys",
    "filter_denies_all",
    "ingest_chunks",
    "ingest_documents",
    "ingest_for_actor",
    "knowledge_tool",
    "matches_filter",
    "stamp_acl",
    "unscoped",
]
