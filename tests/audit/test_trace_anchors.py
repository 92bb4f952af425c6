"""Where a traced string's host is (audit.trace.issue): the innermost enclosing object with
strong anchors of its own (ids, text, arguments: not a label), and only when there is none,
the innermost with labels (a function name). Expected values written from that rule."""

from __future__ import annotations

import json

from reasonwire.audit.trace import Anchors, issue
from reasonwire.wire.registry import get_dialect

TEXT = "Let me look that up for you."
SIGNATURE = "c2lnbmF0dXJlLWJ5dGVzLWxvbmc="
ANSWER = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": TEXT},
                    {
                        "functionCall": {"name": "lookup", "args": {"city": "Paris"}},
                        "thoughtSignature": SIGNATURE,
                    },
                ],
            },
            "finishReason": "STOP",
        }
    ],
    "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 5, "totalTokenCount": 10},
}


def test_the_host_is_the_innermost_object_with_strong_anchors_not_the_one_with_labels() -> None:
    dialect = get_dialect("gemini")
    issued = issue(1, dialect, dialect.parse_response(json.dumps(ANSWER).encode()))
    (atom,) = issued.atoms
    assert (atom.value, atom.item, atom.ipath) == (SIGNATURE, 0, ("parts", 1, "thoughtSignature"))
    # the part holding the signature has labels only ("lookup", "Paris"); the message has text
    part, message = issued.anchors[(0, ("parts", 1))], issued.anchors[(0, ())]
    assert isinstance(part, Anchors) and (part.strong, part.every) == (
        frozenset(),
        {"lookup", "Paris"},
    )
    assert message.strong == {TEXT} and message.every == {TEXT, "model", "lookup", "Paris"}
    assert atom.host == ()  # the message: strong anchors first
