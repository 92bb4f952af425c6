"""An independent count of a captured stream, written for the tests only.

It does not use the probe, ``wire/`` decoders or the shared SSE decoder: a plain split on
blank lines, ``data:`` lines, ``json.loads``, and the delta fields each wire API documents.
Returns (reasoning, text, tool) UTF-8 byte counts of the streamed deltas.
"""

from __future__ import annotations

import json
from typing import Any


def _b(s: Any) -> int:
    return len(s.encode("utf-8")) if isinstance(s, str) else 0


def sse_payloads(raw: bytes) -> list[Any]:
    text = raw.decode("utf-8").replace("\r\n", "\n")
    out = []
    for block in text.split("\n\n"):
        data = [ln[5:].lstrip(" ") if ln.startswith("data:") else None for ln in block.split("\n")]
        joined = "\n".join(d for d in data if d is not None)
        if joined.strip() and joined.strip() != "[DONE]":
            out.append(json.loads(joined))
    return out


def count(dialect: str, raw: bytes) -> tuple[int, int, int]:
    r = t = k = 0
    for p in sse_payloads(raw):
        if dialect == "chat":
            for ch in p.get("choices") or []:
                d = ch.get("delta") or {}
                r += _b(d.get("reasoning_content")) or _b(d.get("reasoning"))
                t += _b(d.get("content"))
                for tc in d.get("tool_calls") or []:
                    k += _b((tc.get("function") or {}).get("arguments"))
        elif dialect == "responses":
            typ = p.get("type", "")
            if typ in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
                r += _b(p.get("delta"))
            elif typ == "response.output_text.delta":
                t += _b(p.get("delta"))
            elif typ == "response.function_call_arguments.delta":
                k += _b(p.get("delta"))
        elif dialect == "anthropic":
            if p.get("type") == "content_block_delta":
                d = p["delta"]
                r += _b(d.get("thinking"))
                t += _b(d.get("text"))
                k += _b(d.get("partial_json"))
        elif dialect == "gemini":
            for cand in p.get("candidates") or []:
                for part in (cand.get("content") or {}).get("parts") or []:
                    if part.get("thought"):
                        r += _b(part.get("text"))
                    else:
                        t += _b(part.get("text"))
                    if "functionCall" in part:
                        k += _b(json.dumps(part["functionCall"].get("args", {}),
                                           separators=(",", ":"), ensure_ascii=False))  # fmt: skip
        elif dialect == "interactions":
            if p.get("event_type") == "step.start":
                step = p.get("step") or {}
                for item in step.get("summary") or []:
                    r += _b(item.get("text"))
                for item in step.get("content") or []:
                    t += _b(item.get("text"))
                if step.get("type") == "function_call" and step.get("arguments"):
                    k += _b(json.dumps(step["arguments"], separators=(",", ":"),
                                       ensure_ascii=False))  # fmt: skip
            elif p.get("event_type") == "step.delta":
                d = p.get("delta") or {}
                if d.get("type") == "thought_summary":
                    r += _b((d.get("content") or {}).get("text"))
                elif d.get("type") == "text":
                    t += _b(d.get("text"))
                elif d.get("type") == "arguments_delta":
                    k += _b(d.get("arguments"))
    return r, t, k
