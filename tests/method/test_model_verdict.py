"""The method's one verdict per (route, model, lane), from its carriers' position outcomes."""

from __future__ import annotations

import pytest

from reasonwire.method.verdicts import Outcome as O
from reasonwire.method.verdicts import Verdict as V
from reasonwire.method.verdicts import model_verdict

C, D, R, B, M, Q = O.CONSUMED, O.DROPPED, O.REJECTED, O.BASELINE_FAILED, O.MISSING, O.REQUIRED


@pytest.mark.parametrize(
    ("entries", "verdict"),
    [
        ([(C, C), (D, D)], V.CONSUMES_ALL_TURNS),
        ([(D, D), (D, C)], V.CONSUMES_ALL_TURNS),  # any cross-turn carrier read
        ([(Q, Q)], V.CONSUMES_ALL_TURNS),  # an opaque carrier the provider requires
        ([(C, D), (D, D), (R, R)], V.IN_LOOP_ONLY),
        ([(D, D), (D, D)], V.ACCEPTED_IGNORED),
        ([(R, R), (R, D)], V.REJECTED),  # every carrier refused somewhere
        ([(R, R), (D, D)], V.ACCEPTED_IGNORED),  # one refusal is not "rejected"
        ([(B, B), (B, B)], V.BASELINE_FAILED),
        ([(B, D), (B, D)], V.BASELINE_FAILED),
        ([(D, M), (D, D)], V.INCOMPLETE),
        ([], V.INCOMPLETE),
    ],
)
def test_model_verdict(entries: list[tuple[O, O]], verdict: V) -> None:
    assert model_verdict(entries) is verdict
