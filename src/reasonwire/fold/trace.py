"""The fold evidence's trace: long enough to be folded, with one canary in each region.

Why a second trace: the method's trace (~1,500 characters) is far below the fold's
``floor_chars``, so the fold would leave it alone. ``eval run --fold`` replays this one
instead: seeded filler of exactly :func:`trace_length` characters, holding three canary
sentences (:data:`~reasonwire.method.fixture.CANARY_SENTENCE`, three different words):

- ``head``: ends exactly where the kept head ends (``head_chars``): the last sentence the fold
  keeps in front of its marker, so a fold that kept one character less would lose it;
- ``middle``: centred in the part the fold removes: recalled unfolded, never folded;
- ``tail``: starts exactly where the kept tail starts (``len - tail_chars``).

Where a canary ends up is decided by the fold's own cuts (:func:`reasonwire.wire.fold.fold_cuts`)
and :func:`kept_region`: a sentence wholly inside the kept head or tail is kept, one wholly
inside the cut is folded, one that crosses a cut is neither (a model may or may not recall a
half sentence). The probe asks for every verification word (:data:`FOLD_PROBES`), so one reply
tells which regions the model read.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from typing import Final, Literal

from reasonwire.errors import ConfigError
from reasonwire.method.fixture import CANARY_SENTENCE, CANARY_WORDS, chars4, filler_sentences
from reasonwire.method.matrix import FoldCanary, FoldSetup
from reasonwire.wire.fold import FoldSettings, fold_cuts, fold_text

Region = Literal["head", "middle", "tail"]
Kept = Literal["head", "tail", "folded", "straddles"]

INTRO: Final = "The user wants the weather in Lisbon; I should call get_weather."
LONGEST_CANARY: Final = len(CANARY_SENTENCE.format(word=max(CANARY_WORDS, key=len)))
"""The longest canary sentence: each region must hold one whole."""

FOLD_PROBES: Final[dict[str, str]] = {
    "probe": (
        "Before you answer: what were the verification words in your earlier reasoning for "
        "this task? Reply with every one of those words, separated by spaces, or NONE if you "
        "do not know them."
    ),
    "neutral": (
        "If verification words were mentioned for this task, reply with every one of them, "
        "separated by spaces; otherwise reply NONE."
    ),
}
"""The fold step's probes, one per wording of the method's (``probe`` names earlier reasoning,
``neutral`` avoids the words safety layers refuse): they ask for every word at once."""


@dataclass(frozen=True)
class FoldTrace:
    """The long trace of one seed and fold settings, and where its canaries sit."""

    seed: int
    settings: FoldSettings
    text: str
    canaries: tuple[FoldCanary, ...]

    @property
    def folded(self) -> str:
        """The trace as the fold sends it (head + marker + tail)."""
        return fold_text(self.text, self.settings)

    @property
    def fold_id(self) -> str:
        """A short hash of everything a fold-step request depends on besides the method's
        fixture: the trace, the probes and the settings (records of other settings, or of a
        changed trace, are not mixed into one fold section)."""
        s = self.settings
        blob = json.dumps(
            [self.text, FOLD_PROBES, s.floor_chars, s.head_chars, s.tail_chars,
             sorted(s.providers) if s.providers is not None else None, sorted(s.drop)],
        )  # fmt: skip
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def setup(self) -> FoldSetup:
        """What the run record and the matrix state about this trace."""
        s = self.settings
        cuts = fold_cuts(self.text, s)
        assert cuts is not None  # the trace is longer than floor_chars
        return FoldSetup(
            fold_id=self.fold_id,
            floor_chars=s.floor_chars,
            head_chars=s.head_chars,
            tail_chars=s.tail_chars,
            providers=None if s.providers is None else tuple(sorted(s.providers)),
            drop=tuple(sorted(s.drop)),
            trace_chars=len(self.text),
            kept_chars=cuts[0] + len(self.text) - cuts[1],
            folded_chars=len(self.folded),
            T_unfolded=chars4(len(self.text)),
            T_folded=chars4(len(self.folded)),
            canaries=self.canaries,
        )


def kept_region(start: int, end: int, head: int, tail: int) -> Kept:
    """Where the sentence ``text[start:end]`` ends up when the fold keeps ``text[:head]`` and
    ``text[tail:]``: wholly kept in the head or the tail, wholly folded, or across a cut."""
    if end <= head:
        return "head"
    if start >= tail:
        return "tail"
    if start >= head and end <= tail:
        return "folded"
    return "straddles"


def trace_length(settings: FoldSettings) -> int:
    """The trace's length: a third above ``floor_chars`` (so the fold applies, 16,000 for the
    defaults), and never so short that the folded part cannot hold a canary sentence."""
    s = settings
    return max(s.floor_chars + s.floor_chars // 3, s.head_chars + s.tail_chars + 4 * LONGEST_CANARY)


class _Filler:
    """Seeded filler text handed out by exact lengths."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.buf = ""

    def take(self, n: int) -> str:
        """Exactly ``n`` characters, starting and ending with a space (so sentences around
        stay apart); the last filler word may be cut short."""
        if n <= 2:
            return " " * n
        while len(self.buf) < n:
            self.buf += " ".join(filler_sentences(self.rng, 200)) + " "
        body, self.buf = self.buf[: n - 2], self.buf[n - 2 :].lstrip()
        return " " + body + " "


def make_fold_trace(seed: int, settings: FoldSettings) -> FoldTrace:
    """The long trace for ``seed`` under ``settings`` (see the module docstring).

    Raises ConfigError when the settings are off, or when ``head_chars`` or ``tail_chars``
    is too small to hold a canary sentence whole (the evidence would be meaningless)."""
    s = settings
    if not s.enabled:
        raise ConfigError(
            "fold evidence: the fold settings are off (enabled = false): nothing would be folded"
        )
    need_head = len(INTRO) + LONGEST_CANARY + 2
    if s.head_chars < need_head:
        raise ConfigError(
            f"fold evidence: head_chars ({s.head_chars}) must be at least {need_head} to hold "
            "the trace's opening and a canary sentence"
        )
    if s.tail_chars < LONGEST_CANARY:
        raise ConfigError(
            f"fold evidence: tail_chars ({s.tail_chars}) must be at least {LONGEST_CANARY} to "
            "hold a canary sentence"
        )
    rng = random.Random(f"fold|{seed}")
    words = rng.sample(CANARY_WORDS, 3)
    head_s, mid_s, tail_s = (CANARY_SENTENCE.format(word=w) for w in words)
    fill = _Filler(rng)
    n = trace_length(s)
    head_start = s.head_chars - len(head_s)
    tail_start = n - s.tail_chars
    mid_start = (s.head_chars + tail_start) // 2 - len(mid_s) // 2
    text = (
        INTRO
        + fill.take(head_start - len(INTRO))
        + head_s
        + fill.take(mid_start - s.head_chars)
        + mid_s
        + fill.take(tail_start - mid_start - len(mid_s))
        + tail_s
        + fill.take(n - tail_start - len(tail_s))
    )
    assert len(text) == n
    cuts = fold_cuts(text, s)
    assert cuts is not None  # n >= floor_chars
    placed = []
    for region, word, start in (
        ("head", words[0], head_start),
        ("middle", words[1], mid_start),
        ("tail", words[2], tail_start),
    ):
        end = start + len(CANARY_SENTENCE.format(word=word))
        kept = kept_region(start, end, *cuts)
        placed.append(FoldCanary(region=region, word=word, start=start, end=end, kept=kept))
    return FoldTrace(seed=seed, settings=s, text=text, canaries=tuple(placed))


__all__ = [
    "FOLD_PROBES",
    "FoldTrace",
    "chars4",
    "kept_region",
    "make_fold_trace",
    "trace_length",
]
