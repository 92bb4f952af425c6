"""Every help page of the ``reasonwire`` command renders as written: markup in help texts is
literal (``[routes.NAME]`` stays), flags read as flags (no ``<bool>`` placeholder), and every
sub-command ends with an example. Rendered through the real entry point, in-process."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from reasonwire import cli


def _leaves(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    subs = getattr(cmd, "commands", None)
    if subs:
        for name, sub in subs.items():
            yield from _leaves(sub, (*path, name))
    else:
        yield path


LEAVES = list(_leaves(cli.command()))


def _help(path: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(sys, "argv", ["reasonwire", *path, "--help"])
    monkeypatch.setenv("COLUMNS", "200")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        cli.main()
    assert done.value.code in (0, None)
    return out.getvalue()


def test_every_sub_command_is_covered() -> None:
    assert len(LEAVES) >= 15 and ("eval", "run") in LEAVES and ("inspect",) in LEAVES


@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_help_renders_completely(path: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    text = _help(path, monkeypatch)
    assert "<bool>" not in text
    assert "Example: reasonwire " + path[0] in " ".join(text.split())


def test_markup_in_help_is_literal(monkeypatch: pytest.MonkeyPatch) -> None:
    text = " ".join(_help(("eval", "run"), monkeypatch).split())
    assert "TOML file with [routes.NAME]" in text


def test_every_group_lives_in_a_cli_module() -> None:
    """The naming rule (ARCHITECTURE.md, Commands): each group the command imports by name is
    a package's ``cli`` module or a module of its ``cli/`` package. The layer test reads
    imports; these are strings, so they are checked here."""
    for group in cli._GROUPS:
        parts = group.module.split(".")
        assert parts[0] == "reasonwire" and "cli" in parts[2:], group.module
        assert parts[-1] == "cli" or parts[-2] == "cli", group.module
