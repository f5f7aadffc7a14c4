"""`agora-agent rag ingest | search | remove` on a SQLite file, as a user types them."""

from __future__ import annotations

from pathlib import Path

import pytest

from agora_agent.cli import main


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "help"
    root.mkdir()
    (root / "refunds.md").write_text("# Refunds\n\nRefunds are paid to the original card within five days.\n")
    (root / "shipping.html").write_text("<p>Parcels ship in <b>two</b> days.</p><script>evil()</script>")
    (root / "sub").mkdir()
    (root / "sub" / "prices.csv").write_text("plan,price\nbasic,5\npro,20\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n")
    return root


def test_ingest_search_remove(docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    assert main(["rag", "ingest", str(docs), "--url", url, "--tenant", "acme"]) == 0
    out = capsys.readouterr().out
    assert "skipped help/logo.png: unsupported-type (image/png)" in out
    assert "ingested 3 file(s), skipped 1" in out
    assert "agent-rag.db" in out.replace("\n", "")  # the chunks' own file, beside the agent store's
    assert (tmp_path / "agent-rag.db").is_file()

    assert main(["rag", "search", "refund card", "--url", url, "--tenant", "acme"]) == 0
    out = capsys.readouterr().out
    assert "help/refunds.md#0" in out and "five days" in out
    assert main(["rag", "search", "refund card", "--url", url, "--tenant", "globex"]) == 0
    assert "no passage found" in capsys.readouterr().out  # another tenant sees nothing

    assert main(["rag", "search", "pro price", "--url", url, "--tenant", "acme", "--mode", "keyword"]) == 0
    assert "help/sub/prices.csv#0" in capsys.readouterr().out

    assert main(["rag", "remove", "help/refunds.md", "--url", url]) == 0
    assert "removed 1 chunk(s)" in capsys.readouterr().out
    assert main(["rag", "remove", "--where", "tenant_ref=acme", "--url", url]) == 0
    assert "removed 2 chunk(s)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["rag", "ingest", "{docs}"], "--tenant TENANT or --shared"),
        (["rag", "ingest", "{docs}/nope.md", "--shared"], "no such file or directory"),
        (["rag", "ingest", "{docs}", "--shared", "--embedder", "word2vec"], "unknown embedder 'word2vec'"),
        (["rag", "remove"], "give document ids, or --where"),
        (["rag", "remove", "--where", "tenant_ref"], "--where takes key=value"),
        (["rag", "search", "x", "--mode", "magic"], "unknown mode 'magic'"),
    ],
)
def test_mistakes_are_one_line_and_exit_1(
    docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    argv = [a.format(docs=docs) for a in args] + ["--url", url]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
