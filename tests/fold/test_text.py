"""The fold of one text: the exact definition, its boundaries, and properties for any string
and any valid settings (hypothesis).

Definition (reasonwire.wire.fold): for ``n = len(text) >= floor_chars`` and a text not already
folded, ``h`` is the largest position <= ``head_chars`` where ``safe_cut`` holds and ``t`` the
smallest position >= ``n - tail_chars`` where it holds; the result is
``text[:h] + marker(t - h) + text[t:]``. For a text of plain code points (no combining mark,
joiner, modifier, flag half, CR before LF, Hangul jamo or surrogate) ``h == head_chars`` and
``t == n - tail_chars`` exactly.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from reasonwire.errors import ConfigError
from reasonwire.wire.fold import (
    FoldSettings,
    fold_text,
    head_cut,
    is_folded,
    marker,
    safe_cut,
    tail_cut,
)

SPECIAL = [
    "\u0301", "\u0308", "\u20e3", "\u200d", "\u200c", "\ufe0f", "\ufe0e", "\U000e0100",
    "\U0001f3fd", "\U0001f1eb", "\U0001f1f7", "\U000e0067", "\U000e007f", "\r", "\n",
    "\u1100", "\u1161", "\u11a8", "\uac00", "\uac01", "\u0903", "\u0915", "\u094d",
    "\U0001f468", "\U0001f469", "\u2764", "e", "a", " ", "é", "漢", "😀",
]  # fmt: skip
SURROGATES = ["\ud83d", "\ude00", "\ud800", "\udfff"]
chars = st.one_of(st.characters(), st.sampled_from(SPECIAL))
texts = st.text(alphabet=chars, max_size=220)
utf16_texts = st.text(alphabet=st.one_of(chars, st.sampled_from(SURROGATES)), max_size=220)
PLAIN = st.characters(
    categories=["Lu", "Ll", "Lo", "Nd", "Po", "Zs"],
    exclude_characters="\r\u200d\u200c",
).filter(lambda c: not (0x1100 <= ord(c) <= 0x11FF or 0xAC00 <= ord(c) <= 0xD7FF
                         or 0xA960 <= ord(c) <= 0xA97F))  # fmt: skip


@st.composite
def fold_settings(draw: st.DrawFn) -> FoldSettings:
    head = draw(st.integers(0, 60))
    tail = draw(st.integers(0, 60))
    floor = draw(st.integers(head + tail + 1, head + tail + 80))
    return FoldSettings(enabled=True, floor_chars=floor, head_chars=head, tail_chars=tail)


def _lone(s: str) -> int:
    """Surrogate code points that are not half of a high+low pair."""
    n = 0
    i = 0
    while i < len(s):
        cp = ord(s[i])
        if 0xD800 <= cp <= 0xDBFF and i + 1 < len(s) and 0xDC00 <= ord(s[i + 1]) <= 0xDFFF:
            i += 2
            continue
        if 0xD800 <= cp <= 0xDFFF:
            n += 1
        i += 1
    return n


PROPS = settings(max_examples=400, deadline=None)


@PROPS
@given(text=utf16_texts, s=fold_settings())
def test_fold_is_exactly_the_definition(text: str, s: FoldSettings) -> None:
    out = fold_text(text, s)
    n = len(text)
    if n < s.floor_chars or is_folded(text, s):  # the spec: floor is the minimum that folds
        assert out == text
        return
    # The definition read literally, not through head_cut/tail_cut: h is the largest safe
    # cut <= head, t the smallest safe cut >= n - tail (0 and n are always safe cuts);
    # safe_cut itself is pinned by the literal table of test_safe_cut_cases.
    h = max(c for c in range(min(s.head_chars, n) + 1) if safe_cut(text, c))
    t = min(c for c in range(max(n - s.tail_chars, 0), n + 1) if safe_cut(text, c))
    assert out == text[:h] + marker(t - h) + text[t:]
    assert out.startswith(text[:h]) and out.endswith(text[t:])  # prefix, suffix exact
    assert len(out) <= s.head_chars + s.tail_chars + len(marker(t - h))
    assert t > h  # something is folded: the floor exceeds head + tail


@PROPS
@given(text=utf16_texts, s=fold_settings())
def test_idempotent(text: str, s: FoldSettings) -> None:
    once = fold_text(text, s)
    assert fold_text(once, s) == once


@PROPS
@given(text=texts, s=fold_settings())
def test_valid_utf8_stays_valid(text: str, s: FoldSettings) -> None:
    assume(_lone(text) == 0)
    out = fold_text(text, s)
    assert out.encode("utf-8").decode("utf-8") == out


@PROPS
@given(text=utf16_texts, s=fold_settings())
def test_never_splits_a_surrogate_pair(text: str, s: FoldSettings) -> None:
    assert _lone(fold_text(text, s)) <= _lone(text)


@PROPS
@given(text=st.text(alphabet=PLAIN, min_size=0, max_size=220), s=fold_settings())
def test_plain_text_cuts_exactly_at_head_and_tail(text: str, s: FoldSettings) -> None:
    out = fold_text(text, s)
    n = len(text)
    if n < s.floor_chars:
        assert out == text
    else:
        h, t = s.head_chars, n - s.tail_chars
        assert out == text[:h] + marker(t - h) + text[t:]


def test_floor_boundary() -> None:
    s = FoldSettings(enabled=True, floor_chars=30, head_chars=10, tail_chars=5)
    # the spec: floor is "the minimum reasoning block length for the fold to apply"
    # expected strings written out by hand, not built with marker() or the cut functions
    at = "a" * 10 + "b" * 15 + "c" * 5  # len == floor: folds
    assert fold_text(at, s) == "aaaaaaaaaa\n\n[... 15 characters folded ...]\n\nccccc"
    over = "a" * 10 + "b" * 16 + "c" * 5  # floor + 1
    assert fold_text(over, s) == "aaaaaaaaaa\n\n[... 16 characters folded ...]\n\nccccc"
    assert fold_text("x" * 29, s) == "x" * 29  # floor - 1: kept


def test_tightest_valid_settings_still_idempotent() -> None:
    # floor == head + tail + 1: a folded text is longer than the floor, and stays as it is
    s = FoldSettings(enabled=True, floor_chars=16, head_chars=10, tail_chars=5)
    text = "h" * 10 + "m" + "t" * 6
    once = fold_text(text, s)
    assert once == "h" * 10 + marker(2) + "t" * 5 and len(once) > s.floor_chars
    assert is_folded(once, s) and fold_text(once, s) == once


@pytest.mark.parametrize(
    ("floor", "head", "tail"),
    [(15, 10, 5), (14, 10, 5), (0, 0, 0), (-1, 0, 0), (10, -1, 2)],
)
def test_floor_must_exceed_head_plus_tail(floor: int, head: int, tail: int) -> None:
    with pytest.raises(ConfigError):
        FoldSettings(floor_chars=floor, head_chars=head, tail_chars=tail)


def test_floor_one_above_head_plus_tail_is_valid() -> None:
    assert FoldSettings(floor_chars=16, head_chars=10, tail_chars=5).floor_chars == 16
    assert FoldSettings(floor_chars=1, head_chars=0, tail_chars=0).floor_chars == 1
    with pytest.raises(ConfigError):
        FoldSettings(floor_chars=True, head_chars=0, tail_chars=0)  # type: ignore[arg-type]


def test_defaults() -> None:
    s = FoldSettings()
    assert (s.enabled, s.floor_chars, s.head_chars, s.tail_chars) == (False, 12000, 4000, 2000)
    assert s.action("openai", "api.openai.com", "gpt") is None  # off by default


@pytest.mark.parametrize(
    ("text", "unsafe"),
    [
        ("e\u0301", [1]),  # combining acute stays with its e
        ("a\u0308\u0301b", [1, 2]),
        ("\U0001f44d\U0001f3fd", [1]),  # skin tone modifier
        ("\U0001f468\u200d\U0001f469\u200d\U0001f467", [1, 2, 3, 4]),  # ZWJ family
        ("\u2764\ufe0f", [1]),  # variation selector
        ("\U0001f1eb\U0001f1f7\U0001f1e9\U0001f1ea", [1, 3]),  # two flags: cut only between
        ("\r\n", [1]),
        ("\u1100\u1161\u11a8", [1, 2]),  # Hangul jamo syllable
        ("\uac00\u11a8", [1]),  # LV + T
        ("\ud83d\ude00", [1]),  # a surrogate pair held as two code points
        ("\U0001f3f4\U000e0067\U000e0062\U000e007f", [1, 2, 3]),  # emoji tag sequence
    ],
)
def test_safe_cut_cases(text: str, unsafe: list[int]) -> None:
    assert [i for i in range(len(text) + 1) if not safe_cut(text, i)] == unsafe


def test_cuts_move_to_keep_clusters_whole() -> None:
    s = FoldSettings(enabled=True, floor_chars=30, head_chars=10, tail_chars=5)
    # head boundary falls inside "e" + combining acute: the head cut moves back before "e"
    text = "a" * 9 + "e\u0301" + "x" * 20 + "\U0001f44d\U0001f3fd" + "yyyy"
    h, t = head_cut(text, 10), tail_cut(text, 5)
    n = len(text)
    # ... and the tail boundary falls between the thumb and its skin tone: it moves forward,
    # so the whole emoji is folded
    assert (h, t) == (9, n - 5 + 1)
    out = fold_text(text, s)
    assert out.startswith("a" * 9 + "\n") and out.endswith("yyyy")
    assert "\u0301" not in out and "\U0001f3fd" not in out


def test_one_giant_cluster_folds_whole() -> None:
    s = FoldSettings(enabled=True, floor_chars=30, head_chars=10, tail_chars=5)
    text = "e" + "\u0301" * 40
    assert fold_text(text, s) == marker(41)


def test_is_folded_only_at_the_folds_place() -> None:
    s = FoldSettings(enabled=True, floor_chars=30, head_chars=10, tail_chars=5)
    quoted = "x" * 12 + marker(3) + "y" * 40  # a marker, but not where the fold puts one
    assert not is_folded(quoted, s)
    assert fold_text(quoted, s) != quoted
