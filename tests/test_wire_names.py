"""Wire names (camelCase) only at the web edge: the layers below speak Python names.

A scan of the package's source for camelCase string keys — dict literal keys, `d["key"]`, `d.get("key")` and
keyword arguments — outside the edge (the web layer, the HTTP client and the CLI that reads it, the demo,
the stream encoders of the wire protocols, the MCP server). The few camelCase keys left below the edge are
payloads whose shape is not ours to choose, listed with the reason; an entry that disappears from the source
must leave the list too, so it only shrinks.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import agora_agent

PACKAGE = Path(agora_agent.__file__).parent
EDGE = ("web/", "client/", "cli/", "demo/", "mcp/", "streaming/")
CAMEL = re.compile(r"^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$")

# (module, key) -> why it stays camelCase below the edge.
ALLOWED: dict[tuple[str, str], str] = {
    ("tools/sql/tool.py", "rowCount"): "the SQL tool's result, read by the model and the UI as the reference shapes it",
    ("rag/inject.py", "topK"): "the recorded input of the `retrieve` call, shaped as the tool's own input",
    ("tools/confirmed.py", "confirmToken"): "the confirm round trip's field in the tool schema the model fills in",
    ("tools/confirmed.py", "expiresAt"): "the preview's result the model reads back (with its confirmToken)",
}


def _legacy_maps(tree: ast.AST) -> set[int]:
    """The dicts assigned to a `_LEGACY_*` name: the maps that read what older versions stored in camelCase."""
    maps: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id.startswith("_LEGACY") for t in targets):
                maps.add(id(node.value))
    return maps


def _keys(tree: ast.AST) -> Iterator[str]:
    """The string keys a module spells: dict literal keys, subscripts, `.get(...)` and keyword arguments."""
    legacy = _legacy_maps(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and id(node) not in legacy:
            yield from (k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            if isinstance(node.slice.value, str):
                yield node.slice.value
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("get", "pop", "setdefault") and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    yield first.value
            yield from (k.arg for k in node.keywords if k.arg is not None)


def camel_keys_below_the_edge() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module.startswith(EDGE):
            continue
        for key in _keys(ast.parse(path.read_text("utf-8"))):
            if CAMEL.match(key):
                found.add((module, key))
    return found


def test_no_camel_case_keys_below_the_web_edge() -> None:
    found = camel_keys_below_the_edge()
    unexpected = sorted(found - ALLOWED.keys())
    assert not unexpected, (
        f"camelCase keys below the web edge (use Python names; the web layer writes the wire names): {unexpected}"
    )
    gone = sorted(ALLOWED.keys() - found)
    assert not gone, f"no longer in the source: remove them from ALLOWED: {gone}"


def test_the_scan_sees_each_kind_of_key() -> None:
    source = (
        'd = {"fooBar": 1}\nd["bazQux"]\nd.get("oneTwo")\nf(keyWord=1)\n{"snake_case": 1, "word": 2}\n'
        '_LEGACY_KEYS = {"oldName": "old_name"}\n'
    )
    assert sorted(k for k in _keys(ast.parse(source)) if CAMEL.match(k)) == ["bazQux", "fooBar", "keyWord", "oneTwo"]
