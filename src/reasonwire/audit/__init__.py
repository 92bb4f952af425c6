"""Continuity audit: which programs and agent frameworks keep reasoning intact, on the wire.

``reasonwire audit -- <command...>`` runs any program with the usual endpoint variables
(``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``, LiteLLM's and
DeepSeek's, dummy keys; :func:`reasonwire.audit.run.environment`) pointing at an in-process
simulator wrapped in a recording ASGI middleware (:mod:`reasonwire.audit.recorder`). Every
carrier the simulator hands out (signature, encrypted content, thought signature, reasoning
text, reasoning item id) is tagged and traced through every later request
(:mod:`reasonwire.audit.trace`): ``kept`` / ``server`` / ``moved`` / ``altered`` (first
differing byte, excerpts, ``reencoded``) / ``dropped``, in the loop or across user turns,
with the bytes re-sent across turns and the simulator's status for each request.
``reasonwire audit frameworks`` runs the built-in scenario (``scenarios/``) through each
framework of :data:`reasonwire.audit.frameworks.FRAMEWORKS`, each in its own pinned venv.

Outputs (:mod:`reasonwire.audit.report`): ``audit.json``, ``audit.md``, ``audit.html`` and
``exchanges/*.jsonl`` (every request and response, redacted).

``audit.json``, schema ``reasonwire.audit/1``::

    {
      "schema": "reasonwire.audit/1",
      "generated_at": "2026-12-01T20:00:00Z", "reasonwire": "0.1.0", "note": "...",
      "versions": {"<framework>": {"python": "3.11.7", "<dist>": "<version>", "pins": [..]}},
      "runs": [{
        "label": "<row>", "variant": "<column or null>", "argv": [..],
        "reproduce": "<one command>", "exit_code": 0, "seconds": 1.2, "error": null,
        "output_tail": "<last 4000 chars when captured>", "meta": {..},
        "carriers": [{                      # every traced string the simulator handed out
          "id": "r0.2", "response": 0, "dialect": "anthropic", "carrier": "thinking",
          "kind": "thinking.signature", "opaque": true, "bytes": 48, "sha256": "<16 hex>",
          "preview": "<first 37 chars>...", "response_path": "content[0].signature",
          "replay_path": "[0].content[0].signature"}],
        "requests": [{                      # every request the program made, in order
          "index": 1, "method": "POST", "path": "/v1/messages", "dialect": "anthropic",
          "variant": "anthropic", "model": "sim-claude", "stream": false, "status": 400,
          "accepted": false, "error": "<the simulator's message>", "final_answer": null,
          "request_bytes": 1234, "carrier_bytes": {"in_loop": 200, "cross_turn": 0},
          "issued": ["r1.1", ..],             # carriers its answer handed out
          "observations": [{                # each earlier carrier of the same dialect
            "carrier": "r0.2", "kind": "thinking.signature",
            "scope": "in_loop" | "cross_turn",
            "status": "kept" | "server" | "moved" | "altered" | "dropped",
            "expected_path": "messages[1].content[0].signature",   # its home, or null
            "found_path": "messages[1].content[0].signature",      # where it is, or null
            "message_path": "messages[1]", "same_message": true,
            "bytes": 48, "resent_bytes": 48,   # resent_bytes: cross_turn only
            "diff": {"offset": 24, "expected_bytes": 48, "got_bytes": 48,
                     "expected": "<excerpt>", "got": "<excerpt>", "reencoded": false},
            "note": "<e.g. replaced by the placeholder '...'>"}]}]
      }],
      "matrix": {
        "rows": ["<program>"], "columns": ["chat", "responses store=false", ..],
        "cells": [{
          "row": "<program>", "column": "<variant>", "run": 0,
          "verdict": "kept" | "re-encoded" | "dropped" | "moved" | "altered" | "rejected"
                     | "incomplete" | "no-carriers",
          "requests": 6, "accepted": 6, "rejected": 0, "statuses": [200, ..],
          "first_rejection": {"request": 1, "status": 400, "error": ".."} | null,
          "wire_variants": ["anthropic"],
          "kinds": {"<kind>": {"in_loop": {"kept": 4, "server": 0, "moved": 0, "altered": 0,
                                           "dropped": 0},
                               "cross_turn": {..}, "rejected": 0,
                               "loop": "<word>", "cross": "<word>"}},
          "resent_bytes": 1047,
          "evidence": [{"requests": [3, 4], "http_statuses": [200, 200], <observation>}],
          "reproduce": "<one command>", "exit_code": 0, "error": null}]
      },
      "unavailable": [{"framework": "<name>", "column": "<variant or null>", "reason": ".."}]
    }

A cell's verdict: ``rejected`` when the simulator refused one of its requests, else the worst
in-loop word over its carrier kinds (``kept`` < ``re-encoded`` < ``dropped`` < ``moved`` <
``altered``; ``server`` counts as kept), else ``incomplete`` when the program failed, else
``no-carriers``. Across-turn words are reported beside (``cross``), not in the verdict:
dropping earlier turns' reasoning is what some providers document.

Needs the ``sim`` extra (starlette, uvicorn, cryptography) and, for the command, ``cli``
(typer, rich). The frameworks run needs ``python3.11`` and the package registry.
"""

from __future__ import annotations

from reasonwire._extras import require as _require

_require("sim")  # the recording simulator is the simulator's app
from reasonwire.audit.recorder import AuditServer, Exchange, Recording  # noqa: E402
from reasonwire.audit.report import SCHEMA, build_document, write_report  # noqa: E402
from reasonwire.audit.run import DUMMY_KEY, RunResult, audit_command, environment  # noqa: E402
from reasonwire.audit.trace import Trace, analyse  # noqa: E402

__all__ = [
    "DUMMY_KEY",
    "SCHEMA",
    "AuditServer",
    "Exchange",
    "Recording",
    "RunResult",
    "Trace",
    "analyse",
    "audit_command",
    "build_document",
    "environment",
    "write_report",
]
