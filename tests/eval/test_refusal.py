"""A safety layer's refusal, through the harness against a loopback Messages stub.

The method's rule (WIRE.md, "Some providers refuse a probe that asks about 'earlier
reasoning'"): a ``403``, or a ``200`` whose stop reason is ``refusal`` / ``content_filter``
with no usage, is a refusal of the probe wording; the position is measured again in the
neutral wording, and the neutral answers are the measurement. A ``200`` without usage and
with an ordinary stop reason is no refusal: it is an answer without figures, and nothing is
re-sent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reasonwire.eval import EvalConfig, build_matrix, run_eval
from reasonwire.eval._records import read_jsonl
from reasonwire.eval.runner import Target
from reasonwire.routes import Route

from .anthropic_stub import Stub, serve


def _run(stub: Stub, out: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    with serve(stub) as url:
        route = Route("stub", "anthropic", url, headers={"anthropic-version": "2023-06-01"})
        run_eval(EvalConfig(targets=[Target(route, "claude-stub")], out=out, workers=2))
    calls = [r for r in read_jsonl(out / "calls.jsonl") if r.get("type") == "call"]
    return calls, build_matrix(out)["rows"][0]


@pytest.mark.parametrize("refusal", ["refusal", "content_filter", "403"])
def test_a_refused_probe_is_measured_again_in_the_neutral_wording(
    tmp_path: Path, refusal: str
) -> None:
    stub = Stub(refuse=refusal, base=300, read=100)
    calls, row = _run(stub, tmp_path)
    turn2 = [r for r in calls if r.get("step") == "opaque" and r.get("position") != "turn1"]
    probe = [r for r in turn2 if r.get("wording") == "probe"]
    neutral = [r for r in turn2 if r.get("wording") == "neutral"]
    # verbatim and stripped, in both positions: refused in the probe wording, then re-sent
    pairs = {(p, m) for p in ("in_loop", "cross_turn") for m in ("verbatim", "stripped")}
    assert {(r["position"], r["variant"]) for r in probe} == pairs
    assert {(r["position"], r["variant"]) for r in neutral} == pairs
    assert not any(r.get("ok") for r in probe)
    assert all(r.get("ok") for r in neutral)
    if refusal != "403":
        for r in probe:
            assert r["status"] == 200 and r["filtered"] is True and r["billed_input"] is None
            assert r["finish_reason"] == refusal
            assert "without usage" not in str(r.get("error"))
    # the measurement is the neutral one: the stub's delta, above the 25-token threshold
    for position in ("in_loop", "cross_turn"):
        cell = row["opaque"]["replay"][position]
        assert cell["wording"] == "neutral"
        assert (cell["verbatim_input"], cell["stripped_input"]) == (400, 300)
        assert cell["delta"] == 100 and cell["outcome"] == "consumed"
    assert row["verdict"] == "consumes-all-turns"


def test_a_200_without_usage_and_an_ordinary_stop_is_no_refusal(tmp_path: Path) -> None:
    stub = Stub(refuse="end_turn")  # the same body, stop_reason end_turn: not a safety layer
    calls, _ = _run(stub, tmp_path)
    turn2 = [r for r in calls if r.get("step") == "opaque" and r.get("position") != "turn1"]
    assert turn2 and all(r.get("wording") == "probe" for r in turn2)
    assert all(r["filtered"] is False and r["error"] == "answer without usage figures"
               for r in turn2)  # fmt: skip
