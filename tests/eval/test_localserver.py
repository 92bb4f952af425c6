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
from reasonwire.eval._embedded import local_target
from reasonwire.localserver.pytest_plugin import local_servers, qwen3_server  # noqa: F401
from reasonwire.localserver.server import LocalServer
from tests.eval.inflight import counting_proxy

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


REFERENCE_CALLS = 10 + 3
"""Calls per model the method's documented rules give on this server with these templates:
the text step's 5 variants (``none`` and four carriers) at 2 positions = 10, and turn 1 once
per effort level (low > medium > high: it climbs on no tool call, and a tiny model never calls
the tool) = 3; nothing for turn 2 to replay, and T costs no call (no count endpoint)."""

TEMPLATE_VERDICTS = {
    "Qwen-Qwen3-0.6B": "in-loop-only",  # renders reasoning after the last user query only
    "Kimi-K3": "consumes-all-turns",  # renders every assistant turn's reasoning
    "meta-llama-Llama-3.1-8B-Instruct": "accepted-ignored",  # has no reasoning field at all
}


@pytest.mark.parametrize("template", sorted(TEMPLATE_VERDICTS))
def test_real_templates_verdicts_calls_and_one_slot_cap(
    local_servers: Callable[[str], LocalServer],  # noqa: F811
    tmp_path: Path,
    template: str,
) -> None:
    """The method's verdict per model, calls per model within the reference, and the default
    settings (8 workers) never hold more requests at a one-slot server (``--parallel 1``,
    ``total_slots`` 1) than it has slots: counted at a pass-through, so no load can change the
    answer (the speed of the default against one worker is measured in bench/, not here)."""
    server = local_servers(template)
    with counting_proxy(server.base_url) as (url, inflight):
        res = run_eval(EvalConfig(targets=[local_target(url)], out=tmp_path))
    (row,) = build_matrix(tmp_path)["rows"]
    assert row["verdict"] == TEMPLATE_VERDICTS[template]
    (n,) = res.calls_per_model.values()
    assert n <= REFERENCE_CALLS
    assert inflight.posts >= n  # every paid call went through the counter
    assert inflight.peak == 1


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
