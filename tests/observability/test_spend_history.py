"""Spend is history: usage priced at record time (price id kept), price changes never rewrite it,
`prices reprice` does (audited), and a price change beyond the sanity bound needs `confirm`."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agora_agent import Actor
from agora_agent.cli import main
from agora_agent.messages import Usage
from agora_agent.testing import FakeModel, ScriptedTurn
from agora_agent.testing.helpers import OBSERVER

from .conftest import ADMIN_H, asgi, web_config

ALICE = Actor("alice", roles=("support",), tenant_ref="acme")
USAGE = Usage(input_tokens=1_000_000, output_tokens=100_000)


def model() -> FakeModel:
    return FakeModel(lambda request, i: ScriptedTurn(text="ok", usage=USAGE), model_id="m1")


async def chat(client: Any, service: Any) -> str:
    started = await service.chat(ALICE, "hi")
    await service.wait_for_run(OBSERVER, started.run_id)
    return str(started.run_id)


async def usage_of(client: Any, run_id: str) -> dict[str, Any]:
    r = await client.get(f"/agent/governance/runs/{run_id}", headers=ADMIN_H)
    [row] = r.json()["usage"]
    return dict(row)


async def set_price(client: Any, inp: float, out: float, **extra: Any) -> Any:
    body = {"modelId": "m1", "inputPricePer1m": inp, "outputPricePer1m": out, **extra}
    return await client.post("/agent/governance/pricing", json=body, headers=ADMIN_H)


def today() -> str:
    return datetime.now(UTC).date().isoformat()


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_usage_is_priced_at_record_time_and_a_price_change_keeps_past_spend(tmp_path: Path, store: str) -> None:
    url = f"sqlite:///{tmp_path / 'spend.db'}" if store == "sqlite" else None
    async with asgi(web_config(model=model(), store=url)) as (client, service):
        unpriced = await chat(client, service)
        assert (await set_price(client, 3, 15)).json() == {"ok": True}  # price A
        first = await chat(client, service)
        assert (await set_price(client, 6, 30)).json() == {"ok": True}  # price B (2×: within the bound)
        second = await chat(client, service)

        a, b, none = await usage_of(client, first), await usage_of(client, second), await usage_of(client, unpriced)
        assert (a["costUsd"], a["costSource"]) == (pytest.approx(4.5), "priced")
        assert (b["costUsd"], b["costSource"]) == (pytest.approx(9.0), "priced")
        assert a["priceId"] and b["priceId"] and a["priceId"] != b["priceId"]
        assert (none["costUsd"], none["priceId"], none["costSource"]) == (None, None, None)  # visibly unpriced

        spend = (await client.get(f"/agent/governance/spend/model?from={today()}&to={today()}", headers=ADMIN_H)).json()
        assert [(r["modelId"], r["requests"], r["costUsd"]) for r in spend] == [("m1", 3, pytest.approx(13.5))]
        run = (await client.get(f"/agent/governance/runs/{first}", headers=ADMIN_H)).json()["run"]
        assert run["costUsd"] == pytest.approx(4.5)

        entries = await service.audit.entries()
        assert [(e.action, e.actor_ref, e.target) for e in entries] == [("price.set", "root", "m1")] * 2
        assert entries[1].detail["before"]["input_price_per_1m"] == 3
        assert entries[1].detail["after"]["input_price_per_1m"] == 6


async def test_a_price_beyond_the_sanity_bound_needs_confirm() -> None:
    async with asgi(web_config(model=model())) as (client, service):
        assert (await set_price(client, 3, 15)).status_code == 200
        r = await set_price(client, 30.01, 15)
        assert r.status_code == 422
        error = r.json()["error"]
        assert "from $3 to $30.01" in error and "10× sanity bound" in error and '"confirm": true' in error
        assert (await set_price(client, 3, 1.4)).status_code == 422  # a drop below 1/10 too
        current = {p.model_id: p for p in await service.pricing.list_current_prices()}
        assert current["m1"].input_price_per_1m == 3  # nothing changed
        ok = await set_price(client, 30.01, 15, confirm=True)
        assert ok.json() == {"ok": True}
        assert [e.detail["confirmed"] for e in await service.audit.entries()] == [False, True]


def test_reprice_changes_past_spend_on_purpose_and_leaves_an_audit_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'reprice.db'}"

    async def before() -> str:
        async with asgi(web_config(model=model(), store=url)) as (client, service):
            assert (await set_price(client, 3, 15)).status_code == 200
            first = await chat(client, service)
            assert (await set_price(client, 6, 30)).status_code == 200
            assert (await usage_of(client, first))["costUsd"] == pytest.approx(4.5)
            return first

    first = asyncio.run(before())
    assert main(["prices", "reprice", "--since", today(), "--url", url, "--by", "ops@shop"]) == 0
    out = capsys.readouterr().out
    assert "re-priced 1 usage rows" in out and "$4.5000 -> $9.0000" in out

    async def after() -> None:
        async with asgi(web_config(model=model(), store=url)) as (client, service):
            row = await usage_of(client, first)
            assert (row["costUsd"], row["costSource"]) == (pytest.approx(9.0), "priced")
            spend = (
                await client.get(f"/agent/governance/spend/model?from={today()}&to={today()}", headers=ADMIN_H)
            ).json()
            assert spend[0]["costUsd"] == pytest.approx(9.0)  # the daily rollup was rebuilt
            [audit] = [e for e in await service.audit.entries() if e.action == "prices.reprice"]
            assert audit.actor_ref == "ops@shop"
            assert (audit.detail["rows"], audit.detail["before_usd"], audit.detail["after_usd"]) == (1, 4.5, 9.0)
            export = (await client.get("/agent/governance/audit", headers=ADMIN_H)).json()
            [change] = [r for r in export["records"] if r["action"] == "prices.reprice"]
            assert (change["detail"]["beforeUsd"], change["detail"]["afterUsd"]) == (4.5, 9.0)  # the wire: camelCase

    asyncio.run(after())


def test_cli_bad_input_is_one_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    assert main(["prices", "reprice", "--since", "yesterday", "--url", url]) == 1
    assert "--since must be a UTC day as YYYY-MM-DD" in capsys.readouterr().err
    assert main(["prices", "set", "m1", "--input", "3", "--output", "15", "--url", url]) == 0
    assert main(["prices", "set", "m1", "--input", "300", "--output", "15", "--url", url]) == 1
    err = capsys.readouterr().err
    assert "sanity bound" in err and "pass --confirm" in err
    assert main(["prices", "set", "m1", "--input", "300", "--output", "15", "--url", url, "--confirm"]) == 0
