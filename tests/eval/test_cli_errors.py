"""``eval run`` errors are clear and cost nothing: a flag is honoured or refused, never
ignored; a report that cannot be written keeps the records; a run with every baseline failed
exits non-zero."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reasonwire.eval._records import read_jsonl
from reasonwire.eval.cli import app
from reasonwire.sim import SimServer

ENV = {"COLUMNS": "200", "NO_COLOR": "1"}


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["run", "--no-progress", *args], env=ENV)
    return res.exit_code, res.output


def _routes(tmp_path: Path, base: str, catalog: bool = True) -> Path:
    p = tmp_path / "routes.toml"
    extra = "" if catalog else 'catalog_path = ""\n'
    p.write_text(f'[routes.mine]\nkind = "chat"\nbase_url = "{base}"\n{extra}')
    return p


def _calls(out: Path) -> int:
    return sum(1 for r in read_jsonl(out / "calls.jsonl") if r.get("type") == "call")


def test_base_url_on_a_named_route_is_honoured(sim: SimServer, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    routes = _routes(tmp_path, dead)
    out = tmp_path / "out"
    code, output = _run("--route", "mine", "--routes-file", str(routes), "--models",
                        "sim-qwen3", "--base-url", sim.base_url, "--out", str(out))  # fmt: skip
    assert code == 0, output
    assert _calls(out) > 2
    calls = list(read_jsonl(out / "calls.jsonl"))
    assert all(r.get("ok") for r in calls if r.get("type") == "call")


@pytest.mark.parametrize("models", ["", ",", " , "])
def test_an_empty_model_list_is_an_error(tmp_path: Path, models: str) -> None:
    routes = _routes(tmp_path, "http://127.0.0.1:9/v1")
    code, output = _run("--route", "mine", "--routes-file", str(routes), "--models", models,
                        "--out", str(tmp_path / "o"))  # fmt: skip
    assert code == 2 and "no model id" in output
    assert not (tmp_path / "o" / "calls.jsonl").exists()


def test_a_price_filter_without_a_catalog_is_an_error(tmp_path: Path) -> None:
    routes = _routes(tmp_path, "https://api.example.invalid/v1", catalog=False)
    code, output = _run("--route", "mine", "--routes-file", str(routes), "--models",
                        "portal-max:4", "--out", str(tmp_path / "o"))  # fmt: skip
    assert code == 2 and "has no catalog" in output


def test_flags_of_a_route_without_a_route_are_refused(tmp_path: Path) -> None:
    code, output = _run("--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "o"))
    assert code == 2 and "--base-url need --route" in output


def test_an_unwritable_report_keeps_the_records(sim: SimServer, tmp_path: Path) -> None:
    routes = _routes(tmp_path, sim.base_url)
    out = tmp_path / "out"
    (out / "report.html").mkdir(parents=True)  # the report path cannot be written
    code, output = _run("--route", "mine", "--routes-file", str(routes), "--models",
                        "sim-qwen3", "--out", str(out))  # fmt: skip
    assert code == 1
    assert "cannot write the report" in output and len(output.strip().splitlines()) == 1
    assert _calls(out) > 2 and (out / "runs.jsonl").exists()


def test_every_baseline_failed_exits_non_zero(sim: SimServer, tmp_path: Path) -> None:
    routes = _routes(tmp_path, sim.base_url)
    code, output = _run("--route", "mine", "--routes-file", str(routes), "--models",
                        "sim-image,sim-tts", "--out", str(tmp_path / "o"))  # fmt: skip
    assert code == 1 and "every model's baseline failed" in output
    assert _calls(tmp_path / "o") == 2
