"""Reader for the recorded provider traffic in ``../shared/conformance`` (read, never copied).

Tests skip with a clear message when the corpus is absent.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

CORPUS = Path(
    os.environ.get(
        "REASONWIRE_CORPUS",
        str(Path(__file__).resolve().parents[3] / "shared" / "conformance" / "cassettes"),
    )
)
"""The first recordings folder (2024-25 traffic); MANIFEST.md sits in its parent."""
FOLDERS: tuple[Path, ...] = (CORPUS, CORPUS.parent / "cassettes-2026")
"""Every recordings folder the MANIFEST describes: ``cassettes/`` and ``cassettes-2026/``."""
# Whether the recordings are there; without them (a fresh clone with no ../shared beside it)
# every test of tests/conformance not marked ``no_corpus`` skips with ABSENT (conftest.py).
PRESENT = CORPUS.is_dir()
ABSENT = f"conformance corpus not found at {CORPUS} (set REASONWIRE_CORPUS)"


@dataclass(frozen=True)
class Interaction:
    """One recorded request/response pair. ``response_json`` is set for JSON bodies,
    ``response_text`` for streamed (SSE) bodies."""

    uri: str
    request: Any
    status: int
    response_json: Any
    response_text: str | None

    @property
    def streamed(self) -> bool:
        return self.response_text is not None


def corpus_dir() -> Path:
    """The first recordings folder; skips the calling test when the corpus is absent."""
    if not CORPUS.is_dir():
        pytest.skip(ABSENT)
    return CORPUS


def _folders() -> list[Path]:
    return [f for f in FOLDERS if f.is_dir()]


def corpus_files(pattern: str = "*") -> list[str]:
    """File names (not paths) matching ``pattern`` in every folder; empty when absent.

    Names are unique across the folders (the MANIFEST lists each once), so a name is enough
    to find its file (:func:`corpus_path`).
    """
    return sorted(p.name for folder in _folders() for p in folder.glob(pattern))


def corpus_path(name: str) -> Path:
    """The path of recording ``name`` in whichever folder holds it (skips when absent)."""
    corpus_dir()
    for folder in _folders():
        path = folder / name
        if path.is_file():
            return path
    raise FileNotFoundError(f"no recording named {name!r} in {', '.join(map(str, FOLDERS))}")


def manifest_entries() -> dict[str, dict[str, str]]:
    """FILE -> its MANIFEST fields (``provider``, ``carriers``, ``what``...), read as text.

    Counts and expectations in tests come from here, not from numbers written in the tests.
    """
    text = (corpus_dir().parent / "MANIFEST.md").read_text(encoding="utf-8")
    out: dict[str, dict[str, str]] = {}
    for block in text.split("FILE: ")[1:]:
        name, _, rest = block.partition("\n")
        fields: dict[str, str] = {}
        for line in rest.split("```", 1)[0].splitlines():
            key, sep, value = line.strip().partition(": ")
            if sep and key.isidentifier():
                fields.setdefault(key, value)
        out[name.strip()] = fields
    return out


def load_cassette(name: str) -> list[Interaction]:
    data = yaml.safe_load(corpus_path(name).read_text(encoding="utf-8"))
    out: list[Interaction] = []
    for it in data["interactions"]:
        req, resp = it["request"], it["response"]
        body = resp.get("body") or {}
        text = body.get("string") if isinstance(body, dict) else None
        out.append(
            Interaction(
                uri=req["uri"],
                request=req.get("parsed_body"),
                status=int(resp["status"]["code"]),
                response_json=resp.get("parsed_body"),
                response_text=text if "parsed_body" not in resp else None,
            )
        )
    return out


def load_json(name: str) -> Any:
    return json.loads(corpus_path(name).read_text(encoding="utf-8"))


def load_chunks(name: str) -> list[Any]:
    """A vercel ``.chunks.txt`` file: one JSON payload per line."""
    lines = corpus_path(name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def chunks_as_sse(name: str) -> bytes:
    """Re-frame a ``.chunks.txt`` file as an SSE byte stream (``data: <json>\\n\\n``).

    Anthropic and Responses streams carry an ``event:`` line naming the payload ``type``;
    it is added from the payload so the framing matches the providers' own.
    """
    parts: list[str] = []
    for line in corpus_path(name).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        payload = json.loads(line)
        typ = payload.get("type") if isinstance(payload, dict) else None
        prefix = f"event: {typ}\n" if isinstance(typ, str) else ""
        parts.append(f"{prefix}data: {line}\n\n")
    return "".join(parts).encode("utf-8")


def manifest_dialect(name: str) -> str:
    """The dialect recording ``name`` speaks, read off its MANIFEST ``provider`` line.

    "OpenAI Responses -> Anthropic" is a Responses body (the arrow names the model behind it);
    every other OpenAI-compatible vendor line ends in "Chat Completions" or names its style.
    """
    provider = manifest_entries()[name]["provider"]
    if provider.startswith("Gemini Interactions"):
        return "interactions"
    if provider.startswith("Gemini"):
        return "gemini"
    if "Responses" in provider:
        return "responses"
    if provider.startswith("Anthropic"):
        return "anthropic"
    return "chat"
