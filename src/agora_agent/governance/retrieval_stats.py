"""Retrieval figures for the dashboard's RAG panel: how many retrievals, how often they
found nothing (zero-hit rate), how many passages reached the model on average, and the same per UTC day.

Both read-model twins feed `summarize_retrievals` the newest `RETRIEVAL_WINDOW` audit rows of the synthetic
`retrieve` tool call (inject mode) in the range, so the figures are computed one way everywhere.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

from pydantic import BaseModel

__all__ = [
    "RETRIEVAL_WINDOW",
    "RETRIEVE_TOOL",
    "RetrievalStats",
    "RetrievalTrendPoint",
    "passage_count",
    "summarize_retrievals",
]

RETRIEVE_TOOL = "retrieve"
"""The tool name of inject mode's synthetic audit row (one per retrieval; `message_id` is None)."""

RETRIEVAL_WINDOW = 5000
"""At most this many of the newest retrievals in the range are summarised (the reference's window)."""


class _Row(BaseModel):
    """Base of the stats rows: Python names only (the web layer writes them in camelCase)."""


class RetrievalTrendPoint(_Row):
    """One UTC day of retrievals."""

    day: date
    retrievals: int
    zero_hits: int
    mean_passages: float


class RetrievalStats(_Row):
    """Totals over the range plus the per-day trend (oldest day first). Rates and means are 0 without rows;
    means are rounded to 2 decimals."""

    retrievals: int
    zero_hit_rate: float
    mean_passages: float
    trend: list[RetrievalTrendPoint]


def passage_count(output: Any) -> int:
    """The number of passages an audit row's output records (0 for anything unexpected)."""
    passages = output.get("passages") if isinstance(output, dict) else None
    return len(passages) if isinstance(passages, list) else 0


def summarize_retrievals(rows: Iterable[tuple[datetime, Any]]) -> RetrievalStats:
    """`rows` = (created_at, output) of retrieve audit rows."""
    by_day: dict[date, list[int]] = defaultdict(list)
    counts: list[int] = []
    for created_at, output in rows:
        n = passage_count(output)
        counts.append(n)
        by_day[created_at.date()].append(n)
    total = len(counts)
    return RetrievalStats(
        retrievals=total,
        zero_hit_rate=round(sum(1 for n in counts if n == 0) / total, 4) if total else 0.0,
        mean_passages=round(sum(counts) / total, 2) if total else 0.0,
        trend=[
            RetrievalTrendPoint(
                day=day,
                retrievals=len(ns),
                zero_hits=sum(1 for n in ns if n == 0),
                mean_passages=round(sum(ns) / len(ns), 2),
            )
            for day, ns in sorted(by_day.items())
        ],
    )
