"""The fast subset of the frameworks run: the official openai and anthropic SDKs installed
beside reasonwire (this interpreter), each driven by the scenario's hand-written tool loop.
The full set, each framework in its own pinned venv, is ``make test-audit``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reasonwire.audit.frameworks import VARIANTS, get_framework, run_framework
from reasonwire.audit.report import build_cells

CASES = [
    ("openai-sdk", "chat"),
    ("openai-sdk", "responses-store"),
    ("openai-sdk", "responses-nostore"),
    ("anthropic-sdk", "anthropic"),
]


@pytest.mark.parametrize(("name", "variant"), CASES)
def test_sdk_hand_loop(name: str, variant: str) -> None:
    pytest.importorskip(name.split("-")[0])
    run = run_framework(get_framework(name), variant, Path(sys.executable), timeout=120)
    assert run.exit_code == 0, run.output_tail
    (cell,) = build_cells(run, 0)
    assert cell["column"] == VARIANTS[variant]
    assert cell["statuses"] == [200] * 6
    # measured: appending the SDK's own message / output objects replays every carrier
    # exactly, in the loop and across turns (the SDK serialises unknown fields back)
    assert cell["verdict"] == "kept"
    for kind in cell["kinds"].values():
        assert (kind["loop"], kind["cross"]) == ("kept", "kept")
    assert cell["resent_bytes"] > 0


def test_google_genai_afc_reencodes_thought_signatures() -> None:
    """google-genai's automatic function calling (this interpreter's google-genai): it calls
    ``/v1/models/...`` and sends ``parameters_json_schema``, and hands thought signatures back
    as urlsafe base64 (the same bytes, which Gemini accepts): ``re-encoded``, never ``kept``."""
    pytest.importorskip("google.genai")
    run = run_framework(get_framework("google-genai-afc"), "gemini", Path(sys.executable))
    assert run.exit_code == 0, run.output_tail
    (cell,) = build_cells(run, 0)
    assert cell["statuses"] == [200] * 6
    assert cell["verdict"] == "re-encoded"
    assert cell["kinds"]["thoughtSignature"]["loop"] == "re-encoded"
    assert cell["kinds"]["thought.text"]["loop"] == "kept"
    ev = next(e for e in cell["evidence"] if e["status"] == "altered")
    assert ev["diff"]["reencoded"] and ev["found_path"] == ev["expected_path"]
