"""`new_id()` spells the ids it makes as `uuid.uuid4().hex` does: random version-4 UUIDs, RFC 4122 variant."""

from __future__ import annotations

import uuid

from agora_agent._ids import new_id


def test_new_ids_are_random_uuid4_hex() -> None:
    ids = [new_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for value in ids:
        parsed = uuid.UUID(hex=value)
        assert parsed.hex == value and len(value) == 32
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
