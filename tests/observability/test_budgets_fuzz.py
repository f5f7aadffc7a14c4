"""schemathesis over the budget routes only (mounted with `budget=`): no 5xx for any generated input, and
every error is JSON `{error}`."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from agora_agent.governance.quota import Budget
from agora_agent.testing import FakeModel, echo_script
from agora_agent.web import create_app

from .conftest import ADMIN_H, web_config

schema = schemathesis.openapi.from_asgi(
    "/openapi.json", create_app(web_config(model=FakeModel(echo_script("ok")), budget=Budget(tokens_per_actor=1000)))
).include(path_regex="/governance/budgets")


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_budget_routes_never_answer_a_server_error(case: Any) -> None:
    response = case.call(headers=ADMIN_H, timeout=10)
    assert response.status_code < 500, (case.method, case.path, response.status_code, response.text[:300])
    if response.status_code >= 400:
        body = response.json()
        assert isinstance(body, dict) and isinstance(body.get("error"), str), body
