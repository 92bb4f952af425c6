"""Cell bodies: a variant's request differs from the ``none`` baseline only in its carrier."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasonwire.eval._cells import CallOutcome, Cell
from reasonwire.eval._params import ParamFix, fix_for_error, route_params
from reasonwire.eval._variants import TEXT_VARIANTS, carriers_for
from reasonwire.eval.fixture import POSITIONS, TOOL, make_fixture
from reasonwire.routes import Route

FX = make_fixture()


def _cell(dialect: Any, variant: str, position: str) -> Cell:
    route = Route(name=f"t-{dialect}", dialect=dialect, base_url="http://127.0.0.1:9")
    carriers = carriers_for(dialect, variant, FX.trace)
    return Cell(
        route=route, model="m", step="text", position=position, variant=variant,
        wording="probe", effort="low", transcript=tuple(FX.transcript(position, "probe", carriers)),
        tools=(TOOL,), params=route_params(route, "m", "low"), fix=ParamFix(),
    )  # fmt: skip


def _diff(a: Any, b: Any, path: str = "$") -> list[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in dict.fromkeys([*a, *b]):
            out += _diff(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _diff(x, y, f"{path}[{i}]")
        ]
    return [] if a == b else [(path, a, b)]


CASES = [(d, v, p) for d, vs in TEXT_VARIANTS.items() for v in vs if v != "none" for p in POSITIONS]


@pytest.mark.parametrize(("dialect", "variant", "position"), CASES)
def test_variant_differs_from_baseline_only_in_its_carrier(
    dialect: Any, variant: str, position: str
) -> None:
    base = _cell(dialect, "none", position).body()
    body = _cell(dialect, variant, position).body()
    diffs = _diff(base, body)
    assert diffs, "the carrier must reach the body"
    for path, old, new in diffs:
        # every difference sits on the tool-call turn and carries the trace
        assert FX.trace in json.dumps(new, ensure_ascii=False), (path, new)
        if old != "<absent>":
            # a list that grew (Responses items, Gemini parts): the baseline's entries are kept
            assert isinstance(old, list) and isinstance(new, list), path
            assert [x for x in new if FX.trace not in json.dumps(x, ensure_ascii=False)] == old
    names = {p.rsplit(".", 1)[-1] for p, _, _ in diffs}
    if dialect == "chat":
        kinds = {c.kind for c in carriers_for(dialect, variant, FX.trace)}
        assert names == kinds


def test_fix_for_error_names() -> None:
    params = {"max_tokens": 5, "reasoning_effort": "low"}
    fix = fix_for_error(
        params, "Unsupported parameter: 'max_tokens' ... Use 'max_completion_tokens'"
    )
    assert fix is not None and fix.apply(params) == {
        "max_completion_tokens": 5,
        "reasoning_effort": "low",
    }
    fix = fix_for_error(params, "Unrecognized request argument supplied: reasoning_effort")
    assert fix is not None and fix.apply(params) == {"max_tokens": 5}
    gem = {"generationConfig": {"maxOutputTokens": 5, "thinkingConfig": {"thinkingLevel": "low"}}}
    fix = fix_for_error(gem, "Thinking level is not supported for this model.")
    assert fix is not None and fix.apply(gem) == {"generationConfig": {"maxOutputTokens": 5}}
    assert fix_for_error(params, "model overloaded") is None


def test_a_call_the_budget_stopped_has_no_answer_facts() -> None:
    """CallOutcome's documented rule: no record (not sent) means skipped, not ok, not
    filtered, and no status, lane or error (the step code reads ``not res.ok`` as a failure)."""
    out = CallOutcome(record=None)
    facts = (out.skipped, out.ok, out.filtered, out.status, out.lane, out.error, out.error_body)
    assert facts == (True, False, False, None, None, None, None)
