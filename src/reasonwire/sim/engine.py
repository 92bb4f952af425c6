"""Deterministic generation shared by every dialect: what the model "saw" and what it answers.

A request is read (by the dialect module) into a :class:`Seen`: the texts the model's prompt
holds after the behaviour decided which replayed carriers to keep. :func:`plan` then answers:

- the last input asks for the verification word (a probe) -> that word if the canary sentence
  ``The verification word for this task is <word>.`` is in what the model saw, else ``NONE``;
  one that asks for the verification *words* -> every such word seen, in prompt order (the
  fold evidence places one canary in each region of a long trace);
- tools are offered and the last input is a fresh user task -> reasoning (holding the canary
  sentence for this task) and one tool call;
- the last input is a tool result saying ``next tool: <name>`` for an offered tool -> short
  reasoning and a call of that tool (so a client can drive a multi-round tool loop);
- otherwise -> short reasoning and a final answer.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from reasonwire.sim.seal import Sealer
from reasonwire.sim.tokens import MESSAGE_OVERHEAD, count

if TYPE_CHECKING:
    from reasonwire.wire.model import JSON, JsonObject

CANARY = "The verification word for this task is {word}."
CANARY_RE = re.compile(r"The verification word for this task is ([A-Za-z]+)\.")
PROBE_RE = re.compile(r"verification word", re.IGNORECASE)
ALL_WORDS_RE = re.compile(r"verification words", re.IGNORECASE)
EARLIER_RE = re.compile(r"earlier reasoning", re.IGNORECASE)
NEXT_TOOL_RE = re.compile(r"next tool: ([A-Za-z_][A-Za-z0-9_-]*)")
WORDS = (
    "amber",
    "basalt",
    "cobalt",
    "dahlia",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kelp",
    "lantern",
    "marble",
    "nectar",
    "onyx",
    "pebble",
    "quartz",
    "raven",
    "saffron",
    "thistle",
    "umber",
    "velvet",
    "willow",
    "xenon",
    "yarrow",
    "zephyr",
)


class Seen:
    """What the model's prompt holds: token count, texts, and the cacheable prefix."""

    __slots__ = ("prefix", "texts", "tokens")

    def __init__(self) -> None:
        self.tokens = 0
        self.prefix = 0
        self.texts: list[str] = []

    def message(self) -> None:
        """A new message starts; everything before it counts as a cacheable prefix."""
        self.prefix = self.tokens
        self.tokens += MESSAGE_OVERHEAD

    def add(self, text: str) -> None:
        if text:
            self.tokens += count(text)
            self.texts.append(text)

    def cached(self, enabled: bool) -> int:
        """Prompt-cache hits: whole 64-token blocks of the prefix (deterministic)."""
        return (self.prefix // 64) * 64 if enabled else 0

    def canary_word(self) -> str | None:
        found = None
        for t in self.texts:
            for m in CANARY_RE.finditer(t):
                found = m.group(1)
        return found

    def canary_words(self) -> list[str]:
        """Every canary word seen, in prompt order, each once."""
        found: dict[str, None] = {}
        for t in self.texts:
            for m in CANARY_RE.finditer(t):
                found[m.group(1)] = None
        return list(found)


@dataclass
class Plan:
    reasoning: str
    text: str
    tool: tuple[str, str] | None  # (name, arguments JSON text)
    probe: bool = False
    earlier: bool = False  # the probe mentions "earlier reasoning"

    @property
    def tool_args(self) -> JsonObject:
        return json.loads(self.tool[1]) if self.tool else {}


def word_for(seed: int, task: str) -> str:
    h = hashlib.sha256(f"{seed}|{task}".encode()).digest()
    return WORDS[int.from_bytes(h[:4], "big") % len(WORDS)]


def _sample(schema: JSON, name: str) -> JSON:
    typ = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(schema, dict) and isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if typ in ("integer", "number", "INTEGER", "NUMBER"):
        return 4
    if typ in ("boolean", "BOOLEAN"):
        return True
    if typ in ("array", "ARRAY"):
        return []
    if typ in ("object", "OBJECT"):
        return {}
    return f"{name} value"


def tool_arguments(schema: JSON) -> str:
    props = schema.get("properties") if isinstance(schema, dict) else None
    args: JsonObject = {}
    if isinstance(props, dict):
        required = schema.get("required")
        names = required if isinstance(required, list) and required else list(props)
        for n in names:
            if isinstance(n, str) and n in props:
                args[n] = _sample(props[n], n)
    return json.dumps(args, separators=(",", ":"))


def plan(
    seed: int,
    task: str,
    last: str,
    fresh: bool,
    tools: list[tuple[str, JSON]],
    seen: Seen,
    reasons: bool = True,
) -> Plan:
    """The deterministic answer for a request (see the module docstring)."""
    if PROBE_RE.search(last) and not CANARY_RE.search(last):
        words = seen.canary_words() if ALL_WORDS_RE.search(last) else [seen.canary_word() or ""]
        return Plan(
            reasoning="The user asks for the verification word; I check what I was given."
            if reasons
            else "",
            text=" ".join(w for w in words if w) or "NONE",
            tool=None,
            probe=True,
            earlier=bool(EARLIER_RE.search(last)),
        )
    if fresh and tools:
        name, schema = tools[0]
        gist = " ".join(task.split()[:12])
        reasoning = f"The user asks: {gist}. I will call {name} first. " + CANARY.format(
            word=word_for(seed, task)
        )
        return Plan(
            reasoning=reasoning if reasons else "",
            text=f"Let me use {name}.",
            tool=(name, tool_arguments(schema)),
        )
    follow = NEXT_TOOL_RE.search(last) if not fresh else None
    offered = dict(tools)
    if follow and follow.group(1) in offered:
        name = follow.group(1)
        return Plan(
            reasoning=f"The tool result asks for {name} next; I call it." if reasons else "",
            text=f"Now {name}.",
            tool=(name, tool_arguments(offered[name])),
        )
    gist = " ".join(last.split()[:10])
    return Plan(
        reasoning="I have what I need and can answer now." if reasons else "",
        text=f"Done. {gist}".strip(),
        tool=None,
    )


V = TypeVar("V")


@dataclass
class SimState:
    """Per-server state: keys, lane counter, Responses store, pairing map."""

    seed: int = 0
    sealer: Sealer = field(init=False)
    _calls: itertools.count[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    responses: OrderedDict[str, list[JSON]] = field(default_factory=OrderedDict)
    items: OrderedDict[str, JSON] = field(default_factory=OrderedDict)
    pairs: OrderedDict[str, str] = field(default_factory=OrderedDict)

    def __post_init__(self) -> None:
        self.sealer = Sealer(self.seed)

    def lane(self, prefixes: list[str]) -> str:
        """The lane for the next call of a multi-lane route: seeded, call by call."""
        with self._lock:
            n = next(self._calls)
        h = hashlib.sha256(f"{self.seed}|lane|{n}".encode()).digest()
        return prefixes[h[0] % len(prefixes)]

    def ident(self, *parts: object) -> str:
        """A deterministic hex id for a request (same request, same ids)."""
        return hashlib.sha256("|".join(map(str, (self.seed, *parts))).encode()).hexdigest()

    def remember(self, table: OrderedDict[str, V], key: str, value: V) -> None:
        with self._lock:
            table[key] = value
            table.move_to_end(key)
            while len(table) > 50_000:
                table.popitem(last=False)
