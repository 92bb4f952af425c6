"""``wire/CONTROLS.md`` is the dialect objects' own data (regenerate it with
``python -m reasonwire.wire.inventory > src/reasonwire/wire/CONTROLS.md``)."""

from __future__ import annotations

from pathlib import Path

import reasonwire.wire
from reasonwire.wire.inventory import document, projection_list


def test_controls_document_is_current() -> None:
    doc = Path(reasonwire.wire.__file__).with_name("CONTROLS.md").read_text("utf-8")
    assert doc == document() + "\n", "regenerate wire/CONTROLS.md"


def test_projection_lists_name_no_reasoning_text_field() -> None:
    """Independent of the shapes: no visible path ends in a documented reasoning field."""
    hidden = {"reasoning_content", "reasoning", "reasoning_details", "thinking_blocks",
              "provider_specific_fields", "summary_text", "reasoning_text", "thought"}  # fmt: skip
    for name in ("chat", "responses", "anthropic", "gemini", "interactions"):
        for path in projection_list(name):
            assert path.rsplit(".", 1)[-1] not in hidden, (name, path)


def test_interactions_projection_shows_no_thought_summary() -> None:
    """A thought step's ``summary`` is readable reasoning (Google's thinking page: "an array
    of content ... summarizing the reasoning"): never on a visible path; its opaque
    ``signature`` is (it must come back)."""
    paths = projection_list("interactions")
    assert not [p for p in paths if "summary" in p]
    assert "steps[](type=thought).signature" in paths
