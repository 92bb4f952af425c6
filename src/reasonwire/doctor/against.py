"""``--against``: compare a session with the carriers the provider really returned.

Structure alone cannot see a carrier swapped for another well-formed one, two blocks
reordered, or the thinking text under a signature edited. Given the originals, the doctor
names the exact block: every opaque carrier in the session must be one that was returned
(its SHA-256 is known), and a signed thinking text must be the text returned with that
signature.

The originals come as a digest file (JSON lines ``{"sha256": ..., "text_sha256": ...}``,
``text_sha256`` for a signature that covers a text; what :func:`digest_lines` writes), or as
any file the doctor reads (saved answers or streams, request bodies, a session copy taken
before the damage): its carriers are digested here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from reasonwire.doctor.checks import Hit, _get, opaque_specs
from reasonwire.doctor.model import Conversation, Document
from reasonwire.errors import Unreadable
from reasonwire.wire.model import JsonObject

TEXT_KEY = {"signature": "thinking"}
"""Carrier kind -> the key beside it whose text it covers (Anthropic: the signature covers
the thinking text, "thinking blocks cannot be modified")."""


@dataclass
class Originals:
    """What the provider returned: carrier digest -> digest of the text it covers (None: it
    covers none), and -> (answer number, position in that answer) to tell the order."""

    texts: dict[str, str | None] = field(default_factory=dict)
    order: dict[str, tuple[int, int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.texts)


def sha256(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def _carriers(conv: Conversation) -> Iterator[tuple[Hit, str, str | None]]:
    """(where, carrier value, covered text or None) of every opaque carrier."""
    for msg in conv.messages:
        for item, spec in opaque_specs(msg):
            for path, holder, value, last, parent in _get(item.value, spec.path, item.path):
                if not isinstance(value, str) or not value:
                    continue
                text_key = TEXT_KEY.get(spec.kind)
                text = holder.get(text_key) if text_key else None
                hit = Hit(msg, item, path, "changed", spec.kind, holder, last, parent)
                yield hit, value, text if isinstance(text, str) else None


def digests(docs: list[Document], first_answer: int = 0) -> Originals:
    """The originals held by readable files: each assistant message is one answer."""
    out = Originals()
    answer = first_answer
    for doc in docs:
        for conv in doc.conversations:
            last: object = None
            pos = 0
            for hit, value, text in _carriers(conv):
                if hit.message is not last:
                    answer, pos, last = answer + 1, 0, hit.message
                digest = sha256(value)
                out.texts[digest] = sha256(text) if text is not None else None
                out.order.setdefault(digest, (answer, pos))
                pos += 1
    return out


def digest_lines(known: Originals) -> str:
    """The originals as a digest file (one JSON object per carrier)."""
    rows = []
    for k, v in sorted(known.texts.items()):
        row: JsonObject = {"sha256": k}
        if v:
            row["text_sha256"] = v
        if k in known.order:
            row["answer"], row["index"] = known.order[k]
        rows.append(json.dumps(row) + "\n")
    return "".join(rows)


def read_digests(path: Path) -> Originals | None:
    """A digest file's entries, or None when ``path`` is not one."""
    try:
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        rows = [json.loads(ln) for ln in lines]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not rows or not all(isinstance(r, dict) and isinstance(r.get("sha256"), str) for r in rows):
        return None
    out = Originals()
    for r in rows:
        out.texts[r["sha256"]] = r.get("text_sha256")
        if isinstance(r.get("answer"), int) and isinstance(r.get("index"), int):
            out.order[r["sha256"]] = (r["answer"], r["index"])
    return out


def hits(doc: Document, known: Originals) -> list[Hit]:
    """Carriers not among the originals, signed texts that differ from theirs, and carriers
    of one answer that come in another order than it gave them."""
    out: list[Hit] = []
    if not known:
        raise Unreadable("--against holds no carriers to compare with")
    for conv in doc.conversations:
        seen: dict[int, tuple[object, int]] = {}  # answer -> (message, last position seen)
        for hit, value, text in _carriers(conv):
            digest = sha256(value)
            where = known.order.get(digest)
            if where is not None:
                before = seen.get(where[0])
                if before is not None and before[0] is hit.message and before[1] > where[1]:
                    out.append(_with(hit, hit.path, f"{hit.detail}: the answer gave its blocks "
                                     "in another order (reordered)", "reordered"))  # fmt: skip
                seen[where[0]] = (hit.message, where[1])
            if digest not in known.texts:
                out.append(_with(hit, hit.path, f"{hit.detail}: not a carrier the provider "
                                 "returned (no original has this value)"))  # fmt: skip
            elif text is not None and known.texts[digest] not in (None, sha256(text)):
                key = TEXT_KEY[hit.detail]
                path = hit.path.rsplit(".", 1)[0] + "." + key
                out.append(_with(hit, path, f"the {key} text under this {hit.detail} was "
                                 "changed (the signature covers the original text)"))  # fmt: skip
    return out


def _with(hit: Hit, path: str, detail: str, kind: str = "changed") -> Hit:
    return Hit(hit.message, hit.item, path, kind, detail, hit.holder, hit.key, hit.parent)


def load(paths: list[Path], read: Callable[[Path], Document]) -> Originals:
    """The originals from digest files or readable files (``read``: the doctor's reader)."""
    known = Originals()
    for p in paths:
        table = read_digests(p)
        if table is None:
            table = digests(
                [read(p)], first_answer=max((a for a, _ in known.order.values()), default=0)
            )
        known.texts.update(table.texts)
        for k, v in table.order.items():
            known.order.setdefault(k, v)
    return known
