"""Alembic migrations of the SQL store (`agora-agent db upgrade`); one linear chain under `versions/`."""
