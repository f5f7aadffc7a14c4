"""Scrub key-shaped strings (API keys, bearer tokens, credentials in URLs) out of text we show or log.

A provider's error text can carry the caller's key: a 401 names its tail, an echoing proxy repeats the
whole header. `scrub_secrets` replaces every such string by `[redacted]`; `ModelError` applies it to
its message, and the runner to every error it stores or streams.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "scrub_secrets"]

REDACTED = "[redacted]"

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # key=value / "api_key": "…" / Authorization: … — keep the name, drop the value
    (
        re.compile(
            r"(?i)\b((?:x-)?api[_-]?key|authorization|access[_-]?token|refresh[_-]?token|client[_-]?secret"
            r"|secret|password|passwd|token)(\"?\s*[:=]\s*\"?|\s+)(?:bearer\s+|basic\s+)?[^\s\"',;&]{4,}"
        ),
        rf"\1\2{REDACTED}",
    ),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9\-._~+/=*]{8,}"), rf"\1 {REDACTED}"),
    # vendor key shapes (also their masked tails such as sk-abc*****wxyz)
    (re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-*.]{6,}"), REDACTED),
    (re.compile(r"\b(?:gsk|xai|ghp|gho|ghu|ghs|ghr|glpat|hf)[_-][A-Za-z0-9_\-]{12,}"), REDACTED),
    (re.compile(r"\bxox[abpr]-[A-Za-z0-9\-]{10,}"), REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z\-_]{30,}"), REDACTED),
    # credentials inside a URL: scheme://user:password@host
    (re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:)[^\s@/]+@", re.I), rf"\1{REDACTED}@"),
    # any other long token mixing upper case, lower case and digits (uuids and hex ids are left alone)
    (
        re.compile(r"\b(?=[A-Za-z0-9_\-]*[A-Z])(?=[A-Za-z0-9_\-]*[a-z])(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{32,}"),
        REDACTED,
    ),
)


def scrub_secrets(text: str) -> str:
    """`text` with every key-shaped string replaced by `[redacted]`."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
