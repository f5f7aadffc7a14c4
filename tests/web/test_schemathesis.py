"""schemathesis over the OpenAPI document, against the app: no 5xx on any route, for any generated input.

Every route is mounted (governance gate, pricing, uploads) and the caller is a governance admin, so the
generated requests get past identity into the handlers. Bounded (few examples per operation): a
smoke-fuzz that runs in CI, not an exhaustive search.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from agora_agent.stores.attachments import MemoryAttachmentStore
from agora_agent.web import create_app

from .conftest import ADMIN, is_admin, make_config

# Built at import (nothing starts until the first call: schemathesis runs the app's lifespan itself).
schema = schemathesis.openapi.from_asgi(
    "/openapi.json",
    create_app(make_config(governance_authorize=is_admin, attachment_staging=MemoryAttachmentStore())),
)


@pytest.mark.slow
@pytest.mark.ref("HTTP-01", "HTTP-16")
@schema.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case: Any) -> None:
    response = case.call(headers=ADMIN, timeout=10)
    assert response.status_code < 500, (case.method, case.path, response.status_code, response.text[:300])
    if response.status_code >= 400 and response.headers.get("content-type", [""])[0].startswith("application/json"):
        body = response.json()
        assert isinstance(body, dict) and isinstance(body.get("error"), str), body
