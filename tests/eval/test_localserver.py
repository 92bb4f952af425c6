"""Ground truth on a real llama.cpp server with the real Qwen3-0.6B chat template.

llama-server --jinja reads ``reasoning_content`` only and Qwen3's template renders it only
after the last user query: in the loop, not across turns. ``reasoning`` and
``reasoning_details`` are accepted and ignored. ``all`` holds ``reasoning_content``, so it is
consumed in the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from reasonwire.eval import EvalConfig, build_matrix, run_eval
from reasonwire.eval.embedded import local_target
from reasonwire.localserver.pytest_plugin import local_servers, qwen3_server  # noqa: F401
from reasonwire.localserver.server import LocalServer

pytestmark = [pytest.mark.localserver, pytest.mark.slow]


def test_qwen3_template_verdicts(qwen3_server: LocalServer, tmp_path: Path) -> None:  # noqa: F811
    run_eval(EvalConfig(targets=[local_target(qwen3_server.base_url)], out=tmp_path, workers=1))
    matrix = build_matrix(tmp_path)
    (row,) = matrix["rows"]
    text = row["text"]
    assert text["reasoning_content"]["verdict"] == "in-loop-only"
    assert text["reasoning"]["verdict"] == "accepted-ignored"
    assert text["reasoning_details"]["verdict"] == "accepted-ignored"
    assert text["all"]["in_loop"]["outcome"] == "consumed"
    assert text["all"]["verdict"] == "in-loop-only"
    # the delta is the real tokenization of the trace through the template: near T
    delta = text["reasoning_content"]["in_loop"]["delta"]
    assert 0.5 * row["T"] <= delta <= 1.5 * row["T"]
    assert text["reasoning"]["in_loop"]["delta"] == 0


REFERENCE_CALLS = 12
"""Paid calls per model of the reference method on this server with these templates."""

TEMPLATE_VERDICTS = {
    "Qwen-Qwen3-0.6B": "in-loop-only",  # renders reasoning after the last user query only
    "Kimi-K3": "consumes-all-turns",  # renders every assistant turn's reasoning
    "meta-llama-Llama-3.1-8B-Instruct": "accepted-ignored",  # has no reasoning field at all
}


def _timed(server: LocalServer, out: Path, workers: int | None) -> tuple[float, dict[str, int]]:
    import time

    cfg = EvalConfig(targets=[local_target(server.base_url)], out=out)
    if workers is not None:
        cfg.workers = workers
    t = time.monotonic()
    res = run_eval(cfg)
    return time.monotonic() - t, res.calls_per_model


@pytest.mark.parametrize("template", sorted(TEMPLATE_VERDICTS))
def test_real_templates_verdicts_calls_and_one_slot_timing(
    local_servers: Callable[[str], LocalServer],  # noqa: F811
    tmp_path: Path,
    template: str,
) -> None:
    """The method's verdict per model, calls per model within the reference, and the default
    settings (8 workers) never slower than one worker on a one-slot server (``--parallel 1``,
    ``total_slots`` 1): min of three interleaved runs each, within 1.5x."""
    server = local_servers(template)
    default, one = [], []
    for i in range(3):  # interleaved: a busy moment of the machine hits both alike
        default.append(_timed(server, tmp_path / f"d{i}", None))
        one.append(_timed(server, tmp_path / f"o{i}", 1))
    (row,) = build_matrix(tmp_path / "d0")["rows"]
    assert row["verdict"] == TEMPLATE_VERDICTS[template]
    for _, calls in default + one:
        (n,) = calls.values()
        assert n <= REFERENCE_CALLS
    t_default, t_one = min(t for t, _ in default), min(t for t, _ in one)
    # Sub-second runs: the absolute slack keeps scheduling noise out; the stall this guards
    # against (idle keep-alive connections holding llama-server's HTTP threads) cost 5 s.
    assert t_default <= 1.5 * t_one + 0.5, (t_default, t_one)


def test_fold_on_the_real_qwen3_template(qwen3_server: LocalServer, tmp_path: Path) -> None:  # noqa: F811
    """``--fold`` on the real server: Qwen3's template renders the folded ``reasoning_content``
    in the loop (still consumed against the folded text's own T), and the prompt shrinks by
    about the folded share of the trace's characters (10,000 of 16,000, the placement's
    design), counted by the real tokenizer; the fields the server ignores get no fold call."""
    from reasonwire.wire.fold import FoldSettings

    cfg = EvalConfig(
        targets=[local_target(qwen3_server.base_url)],
        out=tmp_path,
        workers=1,
        fold=FoldSettings(enabled=True),
    )
    run_eval(cfg)
    matrix = build_matrix(tmp_path)
    rows = {r["field"]: r for r in matrix["fold"]["rows"]}
    assert set(rows) == {"reasoning_content", "all"}
    for row in rows.values():
        assert row["unfolded_outcome"] == "consumed" and row["folded_outcome"] == "consumed"
        assert 0.5 * row["T_unfolded"] <= row["unfolded_delta"] <= 1.5 * row["T_unfolded"]
        assert 0.5 * row["T_folded"] <= row["folded_delta"] <= 1.5 * row["T_folded"]
        assert row["folded_share"] == 0.625
        assert abs(row["saved_share"] - 0.625) <= 0.05
    (mrow,) = matrix["rows"]
    notes = " ".join(mrow["notes"])
    assert "fold: reasoning: not consumed" in notes
    assert "fold: reasoning_details: not consumed" in notes
