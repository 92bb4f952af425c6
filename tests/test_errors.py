"""One exception tree: every exception class reasonwire defines is in ``errors.py``, under
:class:`reasonwire.errors.ReasonwireError`.

Derived, not listed: the source tree is read with :mod:`ast`, and a class is an exception when
one of its bases is (a builtin exception, a class of an imported module that is one, or a class
of reasonwire that is one, followed to a fixed point). A new ``class X(ValueError)`` anywhere
else fails here.
"""

from __future__ import annotations

import ast
import builtins
import importlib
from pathlib import Path

import pytest

import reasonwire
import reasonwire.errors
from reasonwire.errors import ReasonwireError

SRC = Path(reasonwire.__file__).resolve().parent
ERRORS = SRC / "errors.py"

Key = tuple[str, str]  # (module path relative to SRC, class name)


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    if isinstance(node, ast.Subscript):  # Generic[T]-style bases
        return _dotted(node.value)
    return None


class Tree:
    """The classes of a set of modules and what their base names resolve to."""

    def __init__(self, sources: dict[str, tuple[str, str]]) -> None:
        """``sources``: relative path -> (module name, source text)."""
        self.classes: dict[Key, list[str]] = {}  # class -> its bases as absolute dotted names
        self.by_name: dict[str, Key] = {}  # "pkg.mod.Class" -> key
        for rel, (mod, text) in sources.items():
            tree = ast.parse(text)
            names = self._imports(tree, mod)
            top = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
            for node in ast.walk(tree):
                if not isinstance(node, ast.ClassDef):
                    continue
                bases = []
                for b in node.bases:
                    d = _dotted(b)
                    if d is None:
                        continue
                    head, _, rest = d.partition(".")
                    if head in names:
                        d = names[head] + (f".{rest}" if rest else "")
                    elif head in top:
                        d = f"{mod}.{d}"
                    bases.append(d)
                self.classes[(rel, node.name)] = bases
                self.by_name[f"{mod}.{node.name}"] = (rel, node.name)

    @staticmethod
    def _imports(tree: ast.Module, mod: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    out[a.asname or a.name.partition(".")[0]] = (
                        a.name if a.asname else a.name.partition(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom):
                assert not node.level, f"{mod}: a relative import (the house uses absolute ones)"
                for a in node.names:
                    out[a.asname or a.name] = f"{node.module}.{a.name}"
        return out

    def _external(self, dotted: str) -> bool:
        """A base outside the tree: a builtin exception, or a class of an importable module."""
        if "." not in dotted:
            value = getattr(builtins, dotted, None)
            return isinstance(value, type) and issubclass(value, BaseException)
        modname, _, attr = dotted.rpartition(".")
        try:
            value = getattr(importlib.import_module(modname), attr, None)
        except ImportError:
            return dotted.endswith(("Error", "Exception"))  # an absent optional module
        return isinstance(value, type) and issubclass(value, BaseException)

    def exceptions(self) -> set[Key]:
        """Every class of the tree that is an exception, to a fixed point over its bases."""
        found: set[Key] = set()
        changed = True
        while changed:
            changed = False
            for key, bases in self.classes.items():
                if key in found:
                    continue
                for b in bases:
                    inner = self.by_name.get(b)
                    if (inner in found) if inner is not None else self._external(b):
                        found.add(key)
                        changed = True
                        break
        return found


def _source_tree() -> Tree:
    sources = {}
    for path in sorted(SRC.rglob("*.py")):
        sources[str(path.relative_to(SRC))] = (_module_name(path), path.read_text("utf-8"))
    return Tree(sources)


def test_the_detector_finds_exception_classes_however_they_are_spelled() -> None:
    """The walk is not vacuous: direct, indirect, aliased, attribute and third-party bases."""
    tree = Tree(
        {
            "a.py": (
                "reasonwire.a",
                "import httpx\n"
                "from reasonwire.errors import ConfigError as CE\n"
                "from reasonwire import errors\n"
                "class One(ValueError): ...\n"
                "class Two(One): ...\n"
                "class Three(CE): ...\n"
                "class Four(errors.WireError): ...\n"
                "class Five(httpx.HTTPError): ...\n"
                "class Six(BaseException): ...\n"
                "class Plain: ...\n"
                "class Data(dict): ...\n"
                "def f():\n    class Inner(KeyError): ...\n",
            ),
            "b.py": ("reasonwire.b", "from reasonwire.a import Two\nclass Seven(Two): ...\n"),
        }
    )
    names = {name for _, name in tree.exceptions()}
    assert names == {"One", "Two", "Three", "Four", "Five", "Six", "Inner", "Seven"}


def test_no_exception_class_outside_errors_py() -> None:
    outside = sorted(k for k in _source_tree().exceptions() if k[0] != "errors.py")
    assert not outside, f"exception classes outside errors.py (move them there): {outside}"


def test_every_exception_class_in_errors_py_derives_from_reasonwire_error() -> None:
    in_file = {name for rel, name in _source_tree().exceptions() if rel == "errors.py"}
    defined = {
        name
        for name, value in vars(reasonwire.errors).items()
        if isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == "reasonwire.errors"
    }
    assert in_file == defined  # the walk and the module agree on what errors.py defines
    assert "ReasonwireError" in defined
    outside = sorted(
        n for n in defined if not issubclass(getattr(reasonwire.errors, n), ReasonwireError)
    )
    assert not outside, f"outside the ReasonwireError tree: {outside}"


@pytest.mark.parametrize(
    ("name", "also"),
    [
        ("MissingExtra", ModuleNotFoundError),  # ``except ImportError`` keeps catching it
        ("ShapeError", ValueError),
        ("FastLoadRefused", ValueError),  # what the stream decoders catch to take the exact path
    ],
)
def test_classes_that_stay_builtin_errors_too(name: str, also: type[BaseException]) -> None:
    cls = getattr(reasonwire.errors, name)
    assert issubclass(cls, ReasonwireError) and issubclass(cls, also)


def test_missing_extra_is_made_with_its_one_line() -> None:
    from reasonwire._extras import missing_extra_error

    exc = missing_extra_error("govern", "the PostgreSQL store", "psycopg")
    assert (
        str(exc)
        == "the PostgreSQL store needs the 'govern' extra: pip install 'reasonwire[govern]'"
    )
    assert exc.name == "psycopg" and exc.extra == "govern"


def test_the_tree_drawn_in_the_module_doc_is_the_tree() -> None:
    """Each public class of errors.py is drawn once in the module docstring, under its parent
    in the tree (the first base that is a ReasonwireError), and nothing else is drawn."""
    doc = reasonwire.errors.__doc__ or ""
    drawn: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped == "ReasonwireError":
            stack = [(line.index("R"), "ReasonwireError")]
            continue
        if not stack or not stripped.startswith(("├── ", "└── ", "│")):
            continue
        name_at = max(line.find("├── "), line.find("└── "))
        if name_at < 0:
            continue
        name = line[name_at + 4 :].split()[0]
        while stack and stack[-1][0] > name_at:
            stack.pop()
        drawn[name] = stack[-1][1]
        stack.append((name_at + 4, name))
    actual = {
        name: next(b.__name__ for b in value.__bases__ if issubclass(b, ReasonwireError))
        for name, value in vars(reasonwire.errors).items()
        if not name.startswith("_")
        and isinstance(value, type)
        and issubclass(value, ReasonwireError)
        and value is not ReasonwireError
    }
    assert drawn == actual
