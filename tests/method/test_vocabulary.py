"""The verdict words, their combination, and the fixture both measurements share."""

from __future__ import annotations

import itertools
import math

from reasonwire.eval.fixture import make_fixture
from reasonwire.method.fixture import CANARY_IN_TEXT, TOOL, SeededTrace, canary_in
from reasonwire.method.verdicts import (
    HARNESS_VERDICTS,
    SCAN_VERDICTS,
    Outcome,
    Thresholds,
    Verdict,
    combine,
)
from reasonwire.templates.fixture import TOOLS
from reasonwire.templates.fixture import Fixture as ScanFixture
from reasonwire.templates.scan import verdict as scan_verdict


def test_every_word_says_what_it_means() -> None:
    for word in (*Outcome, *Verdict):
        assert word.__doc__ and word.__doc__ != type(word).__doc__, word
    assert set(HARNESS_VERDICTS) | set(SCAN_VERDICTS) | {Verdict.BASELINE} == set(Verdict)


def test_combine() -> None:
    c, d = Outcome.CONSUMED, Outcome.DROPPED
    assert combine(c, c) is Verdict.CONSUMES_ALL_TURNS
    assert combine(Outcome.REQUIRED, d) is Verdict.IN_LOOP_ONLY
    assert combine(d, c) is Verdict.CROSS_TURN_ONLY
    assert combine(d, d) is Verdict.ACCEPTED_IGNORED
    assert combine(Outcome.MISSING, Outcome.REJECTED) is Verdict.REJECTED
    assert combine(Outcome.BASELINE_FAILED, Outcome.MISSING) is Verdict.BASELINE_FAILED
    assert combine(c, Outcome.MISSING) is Verdict.INCOMPLETE


def test_the_scan_and_the_harness_draw_the_same_line() -> None:
    for T, ratio in itertools.product((1, 57, 577, 600), (0.25, 0.5, 1.0)):
        th = Thresholds(consume_ratio=ratio)
        for a, b in itertools.product(range(-2, T + 2, max(1, T // 7)), repeat=2):
            harness = combine(th.text_outcome(a, T), th.text_outcome(b, T))
            assert scan_verdict(a, b, math.ceil(ratio * T)) == harness, (T, ratio, a, b)


def test_both_fixtures_carry_the_methods_trace() -> None:
    for seed in (0, 1, 20261109):
        trace = SeededTrace.from_seed(seed)
        live, offline = make_fixture(seed), ScanFixture.from_seed(seed)
        assert (live.trace, live.canary) == (offline.trace, offline.canary)
        assert (live.trace, live.canary) == (trace.trace, trace.canary)
        assert CANARY_IN_TEXT.findall(trace.trace) == [trace.canary]
        assert canary_in(trace.trace) == trace.canary
    assert TOOLS[0]["function"]["name"] == TOOL.name
    assert TOOLS[0]["function"]["parameters"] == TOOL.parameters
