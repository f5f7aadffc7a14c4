"""`agora-agent db …` and `agora-agent prices …`, called as functions (exit codes and output)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agora_agent.cli import main
from agora_agent.stores.sql import open_sql_backend
from agora_agent.stores.sql.migrate import head_revision


async def _prices(url: str) -> dict[str, tuple[float, float, float | None]]:
    backend = await open_sql_backend(url)
    try:
        return {
            p.model_id: (p.input_price_per_1m, p.output_price_per_1m, p.cache_read_price_per_1m)
            for p in await backend.pricing.list_current_prices()
        }
    finally:
        await backend.close()


def test_db_upgrade_current_downgrade(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    assert main(["db", "current", "--url", url]) == 0
    assert "no agora-agent schema" in capsys.readouterr().out
    assert main(["db", "upgrade", "--url", url]) == 0
    assert f"empty -> {head_revision()}" in capsys.readouterr().out
    assert main(["db", "current", "--url", url]) == 0
    assert "up to date" in capsys.readouterr().out
    assert main(["db", "downgrade", "--url", url, "--revision", "base"]) == 0
    assert "no agora-agent tables" in capsys.readouterr().out


def test_db_url_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGORA_DATABASE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    assert main(["db", "upgrade"]) == 0
    assert (tmp_path / "env.db").exists()


def test_db_without_url_or_with_a_dead_server_exits_non_zero(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AGORA_DATABASE_URL", raising=False)
    assert main(["db", "upgrade"]) == 2
    assert "AGORA_DATABASE_URL" in capsys.readouterr().err
    assert main(["db", "upgrade", "--url", "postgresql://u:pw@127.0.0.1:1/x"]) == 1
    err = capsys.readouterr().err
    assert "cannot connect" in err and "pw" not in err.replace("postgresql", "")


def test_prices_sync_set_and_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'prices.db'}"
    assert main(["prices", "sync", "--url", url, "--provider", "openai"]) == 0
    out = capsys.readouterr().out
    assert "from genai-prices (openai)" in out and "unchanged" in out
    synced = len(asyncio.run(_prices(url)))
    assert synced > 20
    assert main(["prices", "sync", "--url", url, "-p", "openai"]) == 0
    assert f"updated 0, {synced} unchanged" in capsys.readouterr().out

    assert (
        main(["prices", "set", "house-model", "--input", "1.5", "--output", "6", "--cache-read", "0.15", "--url", url])
        == 0
    )
    prices = asyncio.run(_prices(url))
    assert prices["house-model"] == (1.5, 6.0, 0.15)
    assert main(["prices", "list", "--url", url, "--contains", "house"]) == 0
    assert "house-model" in capsys.readouterr().out

    assert main(["prices", "set", "bad", "--input", "-1", "--output", "1", "--url", url]) == 1
    assert "--input must be a number >= 0" in capsys.readouterr().err
    assert main(["prices", "sync", "--url", url, "-p", "nope"]) == 1
    assert "unknown provider(s) nope" in capsys.readouterr().err
