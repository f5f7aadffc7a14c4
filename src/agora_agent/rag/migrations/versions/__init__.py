"""The RAG migration chain, one module per revision."""
