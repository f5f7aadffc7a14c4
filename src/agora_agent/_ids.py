"""`new_id()`: a random UUID4 in hex, as `uuid.uuid4().hex` spells it, without building the `UUID` object."""

from __future__ import annotations

import os

__all__ = ["new_id"]


def new_id() -> str:
    """32 hex digits of a version-4, RFC 4122-variant UUID (`uuid.uuid4().hex`, ~3x cheaper: a chat makes a few)."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40  # version 4
    b[8] = (b[8] & 0x3F) | 0x80  # variant 10xx
    return b.hex()
