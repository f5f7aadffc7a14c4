"""Alembic migrations of the RAG vector tables; one linear chain under `versions/`."""
