"""Import rules: ``method`` stands on ``wire`` and ``errors`` only; ``agent`` reads the matrix
through ``method``, never through the harness. Every import counts, lazy ones included."""

from __future__ import annotations

import ast
from pathlib import Path

import reasonwire

SRC = Path(reasonwire.__file__).parent


def _imports(package: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in sorted((SRC / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
        out[str(path.relative_to(SRC))] = {n for n in names if n.startswith("reasonwire")}
    return out


def test_method_imports_only_wire_and_errors() -> None:
    allowed = ("reasonwire.method", "reasonwire.wire", "reasonwire.errors")
    for path, names in _imports("method").items():
        bad = {n for n in names if not n.startswith(allowed)}
        assert not bad, (path, bad)


def test_agent_does_not_import_the_harness() -> None:
    # eval._variants moves into the wire dialects; until then it is the one exception
    for path, names in _imports("agent").items():
        bad = {
            n for n in names if n.startswith("reasonwire.eval") and n != "reasonwire.eval._variants"
        }
        assert not bad, (path, bad)
