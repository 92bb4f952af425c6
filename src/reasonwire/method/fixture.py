"""The seeded fixture both measurements share: the trace, its canary, the positions, the tool.

Why one fixture: the offline template scan and the live harness must measure the same text,
so both take the reasoning trace from :meth:`SeededTrace.from_seed`. Everything is derived
from the seed (the filler words, the canary word), so a run is reproducible and two runs
with different seeds cannot share a memorised canary.

The trace is ~400 tokens of seeded filler with exactly one canary sentence
(:data:`CANARY_SENTENCE`). A reply (or a render) naming the word shows the trace was read; a
miss is not conclusive.

Both conversations around it are a weather task in Lisbon with one ``get_weather`` tool
(:data:`TOOL`): a system prompt, the user task, an assistant turn that calls the tool and
carries the trace, the tool result, then a probe asking for the word, at one of two
:data:`POSITIONS`:

- ``in_loop``: the probe rides in the tool result (no new user message since the tool call);
- ``cross_turn``: the tool result is plain, a final assistant answer follows, then a new user
  message holds the probe.

The wording of the two conversations differs (``reasonwire.eval.fixture`` as neutral
messages for every dialect, ``reasonwire.templates.fixture`` as the OpenAI-style dicts chat
templates read); each is hashed into its own records, so it stays as measured.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Final, Literal, Self

from reasonwire.wire.model import ToolSpec

Position = Literal["in_loop", "cross_turn"]
POSITIONS: Final[tuple[Position, Position]] = ("in_loop", "cross_turn")

DEFAULT_SEED: Final = 20261109
TRACE_WORDS: Final = 190
"""Filler words of the trace: about 400 tokens (chars/4 ~370-390, 396-419 on the Qwen2 and
Llama-3 vocabularies over five seeds; 300 words gave 577 and 616). Changing it changes every
fixture id: output directories of an earlier size do not resume."""

CANARY_SENTENCE: Final = "The verification word for this task is {word}."
"""The one sentence of the trace that names the canary word."""
CANARY_IN_TEXT: Final = re.compile(r"The verification word for this task is ([A-Za-z]+)\.")
"""Finds the canary sentence (and its word) in a text, e.g. a model's own reasoning."""

TOOL_NAME: Final = "get_weather"
TOOL: Final = ToolSpec(
    name=TOOL_NAME,
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
    },
)
"""The fixture's one tool, as the neutral spec every dialect expresses."""

_FILLER: Final = (
    "amber", "basalt", "cobalt", "dunlin", "egret", "fjord", "garnet", "heron", "isobar",
    "juniper", "kestrel", "lichen", "meridian", "nimbus", "obsidian", "plover", "quartz", "rill",
    "sorrel", "tundra", "umber", "vireo", "wren", "xylem", "yarrow", "zephyr", "barometer",
    "cirrus", "drizzle", "estuary", "front", "gust", "humidity", "inversion", "jetstream",
    "katabatic", "lull", "mistral", "north", "ocean", "pressure", "squall", "thermal", "updraft",
    "veer", "westerly", "coastal", "harbour", "tagus", "ridge",
)  # fmt: skip
CANARY_WORDS: Final = (
    "marzipan", "tamarind", "quillwort", "bergamot", "cardamom", "lodestar", "porphyry",
    "saltmarsh", "windlass", "hawthorn", "pimpernel", "sandpiper", "bracken", "gossamer",
)  # fmt: skip


@dataclass(frozen=True)
class SeededTrace:
    """The trace of one seed: ``trace`` is the reasoning text, ``canary`` its secret word."""

    seed: int
    canary: str
    trace: str

    @classmethod
    def from_seed(cls, seed: int = DEFAULT_SEED, words: int = TRACE_WORDS) -> Self:
        rng = random.Random(seed)
        canary = rng.choice(CANARY_WORDS)
        sentences = filler_sentences(rng, words)
        sentences.insert(len(sentences) // 2, CANARY_SENTENCE.format(word=canary))
        trace = "The user wants the weather in Lisbon; I should call get_weather. " + " ".join(
            sentences
        )
        return cls(seed=seed, canary=canary, trace=trace)

    @property
    def canary_sentence(self) -> str:
        return CANARY_SENTENCE.format(word=self.canary)

    @property
    def trace_tokens_estimate(self) -> int:
        """T by the chars/4 rule (used where no tokenizer or count endpoint measures it)."""
        return chars4(len(self.trace))


def chars4(chars: int) -> int:
    """Tokens of a text of ``chars`` characters by the chars/4 rule (the method's T rule)."""
    return max(1, round(chars / 4))


def filler_sentences(rng: random.Random, words: int) -> list[str]:
    """Seeded filler sentences of 8-14 words each, at least ``words`` words in all: the
    trace's body, and the fold evidence's longer trace (:mod:`reasonwire.fold.trace`)."""
    sentences: list[str] = []
    count = 0
    while count < words:
        n = rng.randint(8, 14)
        picked = [rng.choice(_FILLER) for _ in range(n)]
        sentences.append(" ".join(picked).capitalize() + ".")
        count += n
    return sentences


def canary_hit(reply: str, word: str) -> bool:
    """True when the reply names the canary word (case-insensitive)."""
    return bool(word) and word.lower() in reply.lower()


def canary_in(text: str) -> str | None:
    """The canary word of the first canary sentence in ``text``, if any."""
    m = CANARY_IN_TEXT.search(text)
    return m.group(1) if m else None


__all__ = [
    "CANARY_IN_TEXT",
    "CANARY_SENTENCE",
    "CANARY_WORDS",
    "DEFAULT_SEED",
    "POSITIONS",
    "TOOL",
    "TOOL_NAME",
    "TRACE_WORDS",
    "Position",
    "SeededTrace",
    "canary_hit",
    "canary_in",
    "chars4",
    "filler_sentences",
]
