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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reasonwire.doctor.checks import Hit, _get, _matches
from reasonwire.doctor.facts import RULES
from reasonwire.doctor.model import Conversation, Document, Unreadable

TEXT_KEY = {"signature": "thinking"}
"""Carrier kind -> the key beside it whose text it covers (Anthropic: the signature covers
the thinking text, "thinking blocks cannot be modified")."""


def sha256(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def _carriers(conv: Conversation) -> Iterator[tuple[Hit, str, str | None]]:
    """(where, carrier value, covered text or None) of every opaque carrier."""
    for msg in conv.messages:
        rules = RULES.get(msg.dialect)
        if rules is None:
            continue
        for item in msg.items:
            for spec in rules.opaque:
                if not _matches(item.value, spec.match):
                    continue
                for path, holder, value, last, parent in _get(item.value, spec.path, item.path):
                    if not isinstance(value, str) or not value:
                        continue
                    text_key = TEXT_KEY.get(spec.kind)
                    text = holder.get(text_key) if text_key else None
                    hit = Hit(msg, item, path, "changed", spec.kind, holder, last, parent)
                    yield hit, value, text if isinstance(text, str) else None


def digests(docs: list[Document]) -> dict[str, str | None]:
    """carrier SHA-256 -> SHA-256 of the text it covers (None: it covers none)."""
    out: dict[str, str | None] = {}
    for doc in docs:
        for conv in doc.conversations:
            for _, value, text in _carriers(conv):
                out[sha256(value)] = sha256(text) if text is not None else None
    return out


def digest_lines(known: dict[str, str | None]) -> str:
    return "".join(
        json.dumps({"sha256": k, "text_sha256": v} if v else {"sha256": k}) + "\n"
        for k, v in sorted(known.items())
    )


def read_digests(path: Path) -> dict[str, str | None] | None:
    """A digest file's entries, or None when ``path`` is not one."""
    try:
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        rows = [json.loads(ln) for ln in lines]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not rows or not all(isinstance(r, dict) and isinstance(r.get("sha256"), str) for r in rows):
        return None
    return {r["sha256"]: r.get("text_sha256") for r in rows}


def hits(doc: Document, known: dict[str, str | None]) -> list[Hit]:
    """Carriers not among the originals, and signed texts that differ from theirs."""
    out: list[Hit] = []
    if not known:
        raise Unreadable("--against holds no carriers to compare with")
    for conv in doc.conversations:
        for hit, value, text in _carriers(conv):
            digest = sha256(value)
            if digest not in known:
                out.append(_with(hit, hit.path, f"{hit.detail}: not a carrier the provider "
                                 "returned (no original has this value)"))  # fmt: skip
            elif text is not None and known[digest] not in (None, sha256(text)):
                key = TEXT_KEY[hit.detail]
                path = hit.path.rsplit(".", 1)[0] + "." + key
                out.append(_with(hit, path, f"the {key} text under this {hit.detail} was "
                                 "changed (the signature covers the original text)"))  # fmt: skip
    return out


def _with(hit: Hit, path: str, detail: str) -> Hit:
    return Hit(hit.message, hit.item, path, "changed", detail, hit.holder, hit.key, hit.parent)


def load(paths: list[Path], read: Any) -> dict[str, str | None]:
    """The originals from digest files or readable files (``read``: the doctor's reader)."""
    known: dict[str, str | None] = {}
    for p in paths:
        table = read_digests(p)
        known.update(table if table is not None else digests([read(p)]))
    return known
