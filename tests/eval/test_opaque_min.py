"""``eval run --opaque-min N``: the method's rule is that an opaque carrier is consumed when
turn 2 verbatim bills MORE than N tokens over turn 2 stripped (the method text: "more than 25
tokens"; its own harness runs with 8). Checked at the boundary, N taken from the flag, against a
loopback Messages stub whose verbatim/stripped delta is set by the test."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from reasonwire.eval import build_matrix
from reasonwire.eval.cli import app

from .anthropic_stub import Stub, serve

ENV = {"COLUMNS": "200", "NO_COLOR": "1"}
N = 8


def _run(delta: int, out: Path, *flags: str) -> dict[str, str]:
    with serve(Stub(base=300, read=delta)) as url:
        route = ["--route", "custom", "--kind", "anthropic", "--base-url", url]
        args = ["run", "--no-progress", *route, "--models", "claude-stub", "--out", str(out)]
        res = CliRunner().invoke(app, [*args, *flags], env=ENV)
    assert res.exit_code == 0, res.output
    matrix = build_matrix(out)
    assert matrix["thresholds"]["opaque_min"] == (int(flags[1]) if flags else 25)
    row = matrix["rows"][0]
    return {p: row["opaque"]["replay"][p]["outcome"] for p in ("in_loop", "cross_turn")}


@pytest.mark.parametrize(
    ("delta", "outcome"),
    [(N - 1, "dropped"), (N, "dropped"), (N + 1, "consumed")],
)
def test_opaque_min_boundary_from_the_flag(tmp_path: Path, delta: int, outcome: str) -> None:
    got = _run(delta, tmp_path, "--opaque-min", str(N))
    assert got == {"in_loop": outcome, "cross_turn": outcome}


def test_the_default_is_the_methods_25(tmp_path: Path) -> None:
    assert _run(25, tmp_path / "at") == {"in_loop": "dropped", "cross_turn": "dropped"}
    assert _run(26, tmp_path / "over") == {"in_loop": "consumed", "cross_turn": "consumed"}


def test_help_names_the_default_and_the_methods_own_harness() -> None:
    res = CliRunner().invoke(app, ["run", "--help"], env=ENV)
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.replace("│", " ").split())
    assert "--opaque-min" in text
    assert "Default 25, as the method says" in text
    assert "the method's own harness uses 8" in text and "~20 reasoning tokens" in text
