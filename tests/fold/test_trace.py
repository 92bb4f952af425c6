"""The fold evidence's trace: its canaries sit where the fold's documented rule keeps or
removes them, at the exact boundaries, and ``kept_region`` calls a sentence across a cut
neither kept nor folded.

The expected positions come from the rule as documented (``wire/fold.py``: the fold keeps
``text[:head_chars]`` and ``text[len - tail_chars:]`` of a text longer than ``floor_chars``;
the marker is ``\\n\\n[... N characters folded ...]\\n\\n``), written out here by hand; the
folded text is built by hand from that rule, not by the fold."""

from __future__ import annotations

import pytest

from reasonwire.errors import ConfigError
from reasonwire.fold.trace import kept_region, make_fold_trace
from reasonwire.method.fixture import CANARY_WORDS
from reasonwire.wire.fold import FoldSettings, fold_request, fold_text

SENTENCE = "The verification word for this task is {}."


def by_hand(text: str, head: int, tail: int) -> str:
    """The documented fold of an ASCII text (every position is a safe cut)."""
    n = len(text)
    return text[:head] + f"\n\n[... {n - head - tail} characters folded ...]\n\n" + text[n - tail :]


@pytest.mark.parametrize(
    ("start", "end", "want"),
    [
        (3950, 4000, "head"),  # ends exactly where the kept head ends
        (3951, 4001, "straddles"),  # one character past it: across the head cut
        (14000, 14050, "tail"),  # starts exactly where the kept tail starts
        (13999, 14049, "straddles"),  # one character before it: across the tail cut
        (4000, 4050, "folded"),  # first character the fold removes
        (13950, 14000, "folded"),  # last character the fold removes
        (3990, 14010, "straddles"),  # spans the whole cut
    ],
)
def test_kept_region_boundaries(start: int, end: int, want: str) -> None:
    assert kept_region(start, end, 4000, 14000) == want
    # the same verdict from the text the fold actually sends
    text = "".join("x" if i % 7 else " " for i in range(16000))
    sentence = "S" * (end - start)
    marked = text[:start] + sentence + text[end:]
    sent = fold_text(marked, FoldSettings(enabled=True))
    assert (sentence in sent) == (want in ("head", "tail"))


@pytest.mark.parametrize(
    ("floor", "head", "tail", "length"),
    [
        (12000, 4000, 2000, 16000),  # floor + floor // 3
        (3000, 1000, 600, 4000),
        (2001, 1000, 1000, 2668),
        (400, 150, 200, 546),  # head + tail + 4 x the longest canary sentence (49 chars)
    ],
)
def test_canaries_sit_on_the_documented_boundaries(
    floor: int, head: int, tail: int, length: int
) -> None:
    settings = FoldSettings(enabled=True, floor_chars=floor, head_chars=head, tail_chars=tail)
    trace = make_fold_trace(7, settings)
    text = trace.text
    assert len(text) == length
    h, m, t = trace.canaries
    assert [c.region for c in (h, m, t)] == ["head", "middle", "tail"]
    assert len({h.word, m.word, t.word}) == 3 and {h.word, m.word, t.word} <= set(CANARY_WORDS)
    for c in (h, m, t):
        assert text[c.start : c.end] == SENTENCE.format(c.word)
        assert text.count(c.word) == 1
    assert h.end == head  # the last sentence the fold keeps in front of its marker
    assert t.start == length - tail  # the first sentence of the kept tail
    assert head <= m.start and m.end <= length - tail
    assert (h.kept, m.kept, t.kept) == ("head", "folded", "tail")
    sent = by_hand(text, head, tail)
    assert trace.folded == sent
    assert SENTENCE.format(h.word) in sent and SENTENCE.format(t.word) in sent
    assert m.word not in sent
    # one character less kept on either side and that canary is no longer whole
    assert SENTENCE.format(h.word) not in by_hand(text, head - 1, tail)
    assert SENTENCE.format(t.word) not in by_hand(text, head, tail - 1)
    setup = trace.setup()
    assert setup.trace_chars == length and setup.kept_chars == head + tail
    assert setup.folded_chars == len(sent)
    assert setup.T_unfolded == round(length / 4) and setup.T_folded == round(len(sent) / 4)


def test_the_trace_is_folded_by_fold_request_as_a_chat_carrier() -> None:
    settings = FoldSettings(enabled=True)
    trace = make_fold_trace(0, settings)
    body = {"model": "m", "messages": [{"role": "assistant", "reasoning_content": trace.text}]}
    new, report = fold_request("chat", body, settings, route="r")
    assert new["messages"][0]["reasoning_content"] == by_hand(trace.text, 4000, 2000)
    assert report.folded_chars == 10000


def test_same_seed_same_trace_other_seed_other_words() -> None:
    s = FoldSettings(enabled=True)
    assert make_fold_trace(3, s) == make_fold_trace(3, s)
    assert make_fold_trace(3, s).fold_id != make_fold_trace(4, s).fold_id
    other = FoldSettings(enabled=True, tail_chars=2500)
    assert make_fold_trace(3, s).fold_id != make_fold_trace(3, other).fold_id


LONGEST = max(len(SENTENCE.format(w)) for w in CANARY_WORDS)
OPENING = len("The user wants the weather in Lisbon; I should call get_weather.")


def test_regions_too_small_for_a_canary_are_refused_at_their_limit() -> None:
    head_min = OPENING + LONGEST + 2  # the opening, a space each side, the sentence
    make_fold_trace(0, FoldSettings(enabled=True, floor_chars=8000, head_chars=head_min))
    with pytest.raises(ConfigError, match="head_chars"):
        make_fold_trace(0, FoldSettings(enabled=True, floor_chars=8000, head_chars=head_min - 1))
    make_fold_trace(0, FoldSettings(enabled=True, tail_chars=LONGEST))
    with pytest.raises(ConfigError, match="tail_chars"):
        make_fold_trace(0, FoldSettings(enabled=True, tail_chars=LONGEST - 1))
    with pytest.raises(ConfigError, match="enabled = false"):
        make_fold_trace(0, FoldSettings())
