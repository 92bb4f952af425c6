"""The layer contract of ``src/reasonwire`` (DESIGN.md, "The house" and "Dependencies"), read
off the source with ``ast``, so nothing is imported and every module is checked, imported
by a test or not:

- ``wire``: imports nothing of reasonwire above it (only ``reasonwire.wire.*`` and
  ``reasonwire.errors``; not even ``credentials``: wire is pure data shapes).
- ``agent`` does not import ``eval`` (continuity must not depend on the harness).
- ``fold`` imports none of its users: ``eval``, ``govern``, ``agent`` (the fold is one package;
  what stays in them - eval's fold step and rows, the gateway's upstream fold - uses it).
- ``templates`` and ``localserver`` do not import each other; ``crosscheck``, which joins them
  (the scan checked on the real server, and the ``templates`` command that offers it), sits
  above both: neither imports it.
- The lean core (``reasonwire`` itself, ``wire``, ``probe``, ``agent``, ``http``,
  ``credentials``, ``errors``, ``_wrapping``: the transport base of probe and fold) imports,
  when it is imported, nothing but the standard library, httpx, orjson and reasonwire
  modules that obey the same rule (followed transitively through
  every module-level import; a function-level import or one under ``if TYPE_CHECKING:`` runs
  only when called). The CLI modules of those packages are not part of it: only the
  ``reasonwire`` command imports them, after checking the [cli] extra.
- The commands: a package's commands are in its ``cli`` module (``<package>/cli.py``, or a
  ``<package>/cli/`` package with one module a command group where it has several: govern),
  and nothing but the ``reasonwire`` command (``reasonwire/cli.py``) and other CLI modules
  imports a CLI module; no module is named ``*_cli``.
- Private modules: a module or package named ``_x`` inside a package is imported only from
  inside that package (tests may import it; src may not from elsewhere). The top-level ones
  (``reasonwire._extras``, ``reasonwire._httpcompat``) are the house's own, for every package.
- No import cycles, between modules nor between the packages ``reasonwire.<x>`` (every import
  counts here, function-level ones too; importing ``a.b.c`` runs ``a/__init__`` and
  ``a/b/__init__`` as well, so those are edges too).
- Nothing outside ``wire/`` and ``sim/`` compares a string against a dialect or vendor name
  (``==``/``!=``/``in``/``is`` with such a constant, alone or in a literal tuple/list/set, and
  ``case "..."`` patterns): a provider difference is data, never an ``if`` (DESIGN.md).

Each failure lists every violation as ``file:line``. Violations that exist today in code being
restructured elsewhere are in :data:`KNOWN_VIOLATIONS`; an entry that no longer matches
anything fails the test too, so the list can only shrink.
"""

from __future__ import annotations

import ast
import itertools
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "reasonwire"

CORE = ("reasonwire", "reasonwire.wire", "reasonwire.probe", "reasonwire.agent")
CORE_MODULES = (
    "reasonwire.http", "reasonwire.credentials", "reasonwire.errors", "reasonwire._wrapping",
)  # fmt: skip
# What the lean core may import besides the standard library and itself (pyproject
# `dependencies`; h2 is httpx's own, loaded by httpx).
CORE_THIRD_PARTY = frozenset({"httpx", "orjson"})
# Named in the message when one of them is the offender (DESIGN.md, Dependencies).
HEAVY = frozenset(
    {
        "pydantic", "typer", "rich", "starlette", "uvicorn", "jwt", "cryptography", "jinja2",
        "gguf", "numpy", "tokenizers", "platformdirs", "psycopg",
    }
)  # fmt: skip
VENDOR_NAMES = frozenset(
    {
        "openai", "anthropic", "gemini", "google", "openrouter", "deepseek", "xai", "chat",
        "responses", "vllm", "llamacpp", "zai", "cerebras",
    }
)  # fmt: skip
VENDOR_FREE_EXEMPT = ("reasonwire.wire", "reasonwire.sim")

# (rule, file relative to src/reasonwire, detail) of every violation present today, each
# in code another branch is restructuring. Delete an entry when its violation goes; a stale
# entry fails test_known_violations_are_current. Never add one to make a new violation pass.
KNOWN_VIOLATIONS: frozenset[tuple[str, str, str]] = frozenset({})


# ------------------------------------------------------------------------------------------
# the source tree as data
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    target: str  # the module named (``from a import b``: ``a.b`` if that is a module, else ``a``)
    line: int
    runtime: bool  # runs when the importing module is imported (not in a def, not TYPE_CHECKING)


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    imports: list[Import] = field(default_factory=list)

    @property
    def rel(self) -> str:
        return self.path.relative_to(SRC / ROOT).as_posix()

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk_imports(
    node: ast.AST, runtime: bool = True
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import under ``node``, with whether it runs at import time of the module."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, runtime
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _walk_imports(child, False)
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _walk_imports(ast.Module(body=[stmt], type_ignores=[]), False)
            for stmt in child.orelse:
                yield from _walk_imports(ast.Module(body=[stmt], type_ignores=[]), runtime)
        else:
            yield from _walk_imports(child, runtime)


def _load() -> dict[str, Module]:
    mods: dict[str, Module] = {}
    for path in sorted((SRC / ROOT).rglob("*.py")):
        name = _module_name(path)
        mods[name] = Module(name, path, ast.parse(path.read_text("utf-8"), str(path)))
    for mod in mods.values():
        for node, runtime in _walk_imports(mod.tree):
            for target in _targets(mod, node, mods):
                mod.imports.append(Import(target, node.lineno, runtime))
    return mods


def _targets(mod: Module, node: ast.Import | ast.ImportFrom, mods: dict[str, Module]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.module == "__future__":
        return []
    base = node.module or ""
    if node.level:
        parts = mod.name.split(".")
        if not mod.is_package:
            parts = parts[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join([*parts, *([base] if base else [])])
    out: list[str] = []
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        target = sub if sub in mods else base
        if target not in out:
            out.append(target)
    return out


def _owner(name: str, mods: dict[str, Module]) -> str | None:
    """The reasonwire module that ``name`` is or lies in (``None``: not reasonwire's)."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _executed(importer: str, target: str, mods: dict[str, Module]) -> list[str]:
    """The reasonwire modules that importing ``target`` from ``importer`` may run: the target
    and the packages above it that ``importer`` is not already inside."""
    owner = _owner(target, mods)
    if owner is None:
        return []
    out = [a for a in _ancestors(owner) if a in mods and not _within(importer, a)]
    if owner != importer and not _within(importer, owner):
        out.append(owner)
    return out


MODS = _load()


@dataclass(frozen=True, order=True)
class Violation:
    rule: str
    file: str  # relative to src/reasonwire
    detail: str
    line: int = field(default=0, compare=False)
    note: str = field(default="", compare=False)
    at: str = field(default="", compare=False)  # file shown, when not ``file`` (cycles)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.rule, self.file, self.detail)

    def __str__(self) -> str:
        where = f"src/reasonwire/{self.at or self.file}:{self.line}"
        return f"{where}: [{self.rule}] {self.detail}" + (f" ({self.note})" if self.note else "")


# ------------------------------------------------------------------------------------------
# the rules
# ------------------------------------------------------------------------------------------


def wire_above() -> Iterator[Violation]:
    for mod in MODS.values():
        if not _within(mod.name, "reasonwire.wire"):
            continue
        for imp in mod.imports:
            if not _within(imp.target, ROOT):
                continue
            if _within(imp.target, "reasonwire.wire") or _within(imp.target, "reasonwire.errors"):
                continue
            yield Violation("wire-above", mod.rel, imp.target, imp.line)


def agent_imports_eval() -> Iterator[Violation]:
    for mod in MODS.values():
        if _within(mod.name, "reasonwire.agent"):
            for imp in mod.imports:
                if _within(imp.target, "reasonwire.eval"):
                    yield Violation("agent-imports-eval", mod.rel, imp.target, imp.line)


FOLD_USERS = ("reasonwire.eval", "reasonwire.govern", "reasonwire.agent")


def fold_imports_users() -> Iterator[Violation]:
    for mod in MODS.values():
        if _within(mod.name, "reasonwire.fold"):
            for imp in mod.imports:
                if any(_within(imp.target, user) for user in FOLD_USERS):
                    yield Violation("fold-imports-users", mod.rel, imp.target, imp.line)


def templates_localserver() -> Iterator[Violation]:
    pairs = (
        ("reasonwire.templates", "reasonwire.localserver"),
        ("reasonwire.localserver", "reasonwire.templates"),
        ("reasonwire.templates", "reasonwire.crosscheck"),
        ("reasonwire.localserver", "reasonwire.crosscheck"),
    )
    for mod in MODS.values():
        for here, there in pairs:
            if _within(mod.name, here):
                for imp in mod.imports:
                    if _within(imp.target, there):
                        yield Violation("templates-localserver", mod.rel, imp.target, imp.line)


def _is_cli(name: str) -> bool:
    """A CLI module: ``reasonwire.cli`` (the command), a package's ``cli`` module, or a module
    of a package's ``cli/`` package."""
    return "cli" in name.split(".")[1:]


def cli_modules() -> Iterator[Violation]:
    """Commands in ``<package>.cli`` only, and only the command and CLI modules import them."""
    for mod in MODS.values():
        last = mod.name.rpartition(".")[2]
        if last.endswith("_cli"):
            yield Violation("cli-modules", mod.rel, f"{last}: not the cli naming rule", 1)
        if _is_cli(mod.name):
            continue
        for imp in mod.imports:
            if _within(imp.target, ROOT) and _is_cli(imp.target):
                yield Violation("cli-modules", mod.rel, imp.target, imp.line, "imports a CLI")


def _private_home(name: str) -> str | None:
    """The package a ``_private`` module or package belongs to (``None``: nothing private on
    the path of ``name``)."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def private_modules() -> Iterator[Violation]:
    for mod in MODS.values():
        for imp in mod.imports:
            owner = _owner(imp.target, MODS) if _within(imp.target, ROOT) else None
            home = _private_home(owner) if owner else None
            if home is not None and home != ROOT and not _within(mod.name, home):
                yield Violation("private-modules", mod.rel, imp.target, imp.line)


def core_modules() -> list[str]:
    out = [
        m
        for m in MODS
        if (m in CORE or any(_within(m, p) for p in CORE[1:]) or m in CORE_MODULES)
        and not _is_cli(m)
    ]
    return sorted(out)


def _runtime_edges(name: str) -> Iterator[tuple[str, Import]]:
    for imp in MODS[name].imports:
        if imp.runtime:
            for target in _executed(name, imp.target, MODS):
                yield target, imp


def core_imports_heavy() -> Iterator[Violation]:
    """Breadth-first over module-level imports from every core module; a third-party module
    other than httpx/orjson imported on the way is a violation where it is imported, with
    the chain that reaches it from the core."""
    stdlib = sys.stdlib_module_names
    chain: dict[str, list[str]] = {m: [m] for m in core_modules()}
    queue = list(chain)
    seen: set[tuple[str, str]] = set()
    while queue:
        name = queue.pop(0)
        mod = MODS[name]
        for imp in mod.imports:
            if not imp.runtime:
                continue
            top = imp.target.partition(".")[0]
            if top == ROOT or top in stdlib or top in CORE_THIRD_PARTY:
                continue
            if (mod.rel, top) in seen:
                continue
            seen.add((mod.rel, top))
            kind = "heavy dependency" if top in HEAVY else "not a core dependency"
            via = " -> ".join(chain[name])
            yield Violation("core-imports-heavy", mod.rel, top, imp.line, f"{kind}; via {via}")
        for target, _ in _runtime_edges(name):
            if target not in chain:
                chain[target] = [*chain[name], target]
                queue.append(target)


def _graph(level: int | None) -> dict[str, dict[str, int]]:
    """Import edges (every import) with the line of the first import making each edge; at
    ``level`` 1, modules are collapsed to ``reasonwire.<x>``."""

    def node(name: str) -> str:
        return name if level is None else ".".join(name.split(".")[: level + 1])

    edges: dict[str, dict[str, int]] = {node(m): {} for m in MODS}
    where: dict[tuple[str, str], tuple[str, int]] = {}
    for name, mod in MODS.items():
        for imp in mod.imports:
            for target in _executed(name, imp.target, MODS):
                a, b = node(name), node(target)
                if a != b and b not in edges[a]:
                    edges[a][b] = imp.line
                    where[(a, b)] = (mod.rel, imp.line)
    _WHERE[level] = where
    return edges


_WHERE: dict[int | None, dict[tuple[str, str], tuple[str, int]]] = {}


def _sccs(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp: list[str] = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def _cycle_path(start: str, members: set[str], edges: dict[str, dict[str, int]]) -> list[str]:
    """A shortest cycle through ``start`` inside one component: ``[start, ..., start]``."""
    prev: dict[str, str] = {}
    queue = [start]
    while queue:
        a = queue.pop(0)
        for b in sorted(edges[a]):
            if b not in members:
                continue
            if b == start:
                path = [a]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return [*reversed(path), start]
            if b not in prev:
                prev[b] = a
                queue.append(b)
    raise AssertionError(f"no cycle through {start}")


def cycles(level: int | None) -> Iterator[Violation]:
    """One violation per component, keyed by its first module's file; the message shows
    one shortest cycle through that module, each import with its file:line."""
    rule = "module-cycle" if level is None else "package-cycle"
    edges = _graph(level)
    where = _WHERE[level]
    for comp in _sccs(edges):
        path = _cycle_path(comp[0], set(comp), edges)
        steps = [(a, b, *where[(a, b)]) for a, b in itertools.pairwise(path)]
        shown = "; ".join(f"{a} -> {b} at src/reasonwire/{f}:{ln}" for a, b, f, ln in steps)
        _, _, at_file, at_line = steps[0]
        yield Violation(
            rule, MODS[comp[0]].rel, " <-> ".join(comp), at_line, f"cycle: {shown}", at_file
        )


def _vendor_constants(node: ast.expr) -> Iterator[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for elt in node.elts:
            yield from _vendor_constants(elt)


def vendor_names() -> Iterator[Violation]:
    for mod in MODS.values():
        if any(_within(mod.name, p) for p in VENDOR_FREE_EXEMPT):
            continue
        for node in ast.walk(mod.tree):
            found: Iterable[str] = ()
            if isinstance(node, ast.Compare):
                found = [
                    s for side in (node.left, *node.comparators) for s in _vendor_constants(side)
                ]
            elif isinstance(node, ast.MatchValue):
                found = list(_vendor_constants(node.value))
            for value in found:
                if value in VENDOR_NAMES:
                    yield Violation("vendor-name", mod.rel, value, getattr(node, "lineno", 0))


RULES = {
    "wire-above": wire_above,
    "agent-imports-eval": agent_imports_eval,
    "templates-localserver": templates_localserver,
    "fold-imports-users": fold_imports_users,
    "cli-modules": cli_modules,
    "private-modules": private_modules,
    "core-imports-heavy": core_imports_heavy,
    "module-cycle": lambda: cycles(None),
    "package-cycle": lambda: cycles(1),
    "vendor-name": vendor_names,
}


def _report_order(v: Violation) -> tuple[str, int, str]:
    return (v.file, v.line, v.detail)


def all_violations() -> list[Violation]:
    return sorted((v for rule in RULES.values() for v in rule()), key=_report_order)


# ------------------------------------------------------------------------------------------
# the tests
# ------------------------------------------------------------------------------------------


def test_tree_is_read() -> None:
    assert len(MODS) > 50 and "reasonwire.wire.model" in MODS and "reasonwire" in MODS
    assert "reasonwire.agent.loop" in core_modules()
    assert "reasonwire.probe.cli" not in core_modules()
    assert "reasonwire._wrapping" in core_modules()
    assert "reasonwire.govern.cli.gateway" in MODS and _is_cli("reasonwire.govern.cli.gateway")
    assert not _is_cli("reasonwire.clients") and not _is_cli("reasonwire.doctor.inspect")


@pytest.mark.parametrize("rule", sorted(RULES))
def test_layer_rule(rule: str) -> None:
    found = sorted(RULES[rule](), key=_report_order)
    new = [v for v in found if v.key not in KNOWN_VIOLATIONS]
    assert not new, f"{len(new)} violation(s) of [{rule}]:\n" + "\n".join(map(str, new))


def test_known_violations_are_current() -> None:
    """Every allow-listed violation still exists: when one is fixed, delete its entry."""
    present = {v.key for v in all_violations()}
    stale = sorted(KNOWN_VIOLATIONS - present)
    assert not stale, "stale KNOWN_VIOLATIONS entries (fixed; delete them):\n" + "\n".join(
        map(repr, stale)
    )
    assert {rule for rule, _, _ in KNOWN_VIOLATIONS} <= set(RULES)
