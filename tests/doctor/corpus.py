"""Where the doctor's test data is: ``../shared/sessions`` (real saved sessions) and the
conformance recordings (tests/conformance/corpus.py). Read in place, never copied; tests
skip with a clear message when absent (a fresh clone without ../shared beside it)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.corpus import CORPUS, PRESENT, corpus_files, corpus_path, load_cassette

SESSIONS = Path(os.environ.get("REASONWIRE_SESSIONS", str(CORPUS.parent.parent / "sessions")))
"""``REASONWIRE_SESSIONS``, else ``sessions/`` beside the conformance folder."""
SESSIONS_ABSENT = f"session corpus not found at {SESSIONS} (set REASONWIRE_SESSIONS)"


def session(name: str) -> Path:
    path = SESSIONS / name
    if not path.is_file():
        pytest.skip(SESSIONS_ABSENT)
    return path


def session_names() -> list[str]:
    if not SESSIONS.is_dir():
        return []
    return sorted(p.name for p in SESSIONS.iterdir() if p.name != "MANIFEST.md")


def units(name: str) -> Iterator[tuple[str, bytes]]:
    """(label, bytes) of each checkable body in recording ``name``: a cassette's request and
    response bodies (a streamed response as its raw SSE text), or the whole vercel file."""
    if name.endswith(".yaml"):
        for i, it in enumerate(load_cassette(name)):
            if isinstance(it.request, dict):
                yield f"{name}#{i}.request", json.dumps(it.request).encode()
            if it.response_text is not None:
                yield f"{name}#{i}.response", it.response_text.encode()
            elif it.response_json is not None:
                yield f"{name}#{i}.response", json.dumps(it.response_json).encode()
    else:
        yield name, corpus_path(name).read_bytes()


__all__ = [
    "PRESENT",
    "SESSIONS",
    "corpus_files",
    "corpus_path",
    "load_cassette",
    "session",
    "session_names",
    "units",
]
