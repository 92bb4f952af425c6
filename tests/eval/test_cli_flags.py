"""The ``eval`` commands' boolean options are plain flags with readable names."""

from __future__ import annotations

from typing import Any

import typer
from typer.testing import CliRunner

from reasonwire.eval.cli import app


def _bool_options() -> list[tuple[str, Any]]:
    """(command, option) for every boolean option, read by duck typing (typer vendors its own
    click, so click's classes are not the ones to check against)."""
    group: Any = typer.main.get_command(app)
    out = []
    for name, cmd in group.commands.items():
        for p in cmd.params:
            if p.param_type_name == "option" and isinstance(p.default, bool):
                out.append((name, p))
    return out


def test_bool_options_are_flags_without_double_negatives() -> None:
    opts = _bool_options()
    assert {o.name for _, o in opts} >= {"no_local_server", "progress"}
    for cmd, o in opts:
        assert o.is_flag, (cmd, o.opts)
        for name in (*o.opts, *o.secondary_opts):
            assert not name.startswith("--no-no-"), (cmd, name)


def test_no_local_server_is_a_single_flag_in_help() -> None:
    res = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert res.exit_code == 0, res.output
    assert "--no-local-server" in res.output
    assert "--no-no-local-server" not in res.output
    no_local = next(o for _, o in _bool_options() if o.name == "no_local_server")
    assert no_local.opts == ["--no-local-server"] and no_local.secondary_opts == []
    assert no_local.default is False
