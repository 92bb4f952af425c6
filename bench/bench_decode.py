# ruff: noqa: E501  (synthetic payload templates read best one event per line)
"""Stream decoding throughput: our dialect decoders against the openai SDK's SSE decoder.

For each dialect a synthetic SSE stream of about ``--mb`` MB is built, shaped like the recorded
traffic (one answer made of many small delta events: reasoning deltas, then text deltas, with
the dialect's opening and closing events and usage). It is fed in 64 KiB chunks to:

- ``ours``: the dialect's full stream decoder (SSE framing, JSON payloads, event assembly,
  the final Turn) via ``get_dialect(d).stream_decoder()``;
- ``sse``: our SSE decoder alone plus ``json.loads`` of every payload (for insight);
- ``sdk``: the official openai SDK's own ``openai._streaming.SSEDecoder.iter_bytes`` plus
  ``json.loads`` of every data payload (what the SDK's ``Stream`` does before building its
  models), on the same bytes.

The peer runs in the same process on the same bytes; the best of ``--repeat`` runs is kept.
The bars (issue 28, ``BARS``): ours >= 4x the SDK for chat and responses, >= 3.9x for
anthropic, >= 3x for gemini and interactions. ``--profile DIALECT`` prints a cProfile of our
decoder.

    .venv/bin/python bench/bench_decode.py [--mb 50] [--repeat 3] [--profile chat]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pstats
import random
import time
from collections.abc import Callable, Iterator

from reasonwire.wire import get_dialect
from reasonwire.wire.model import Done
from reasonwire.wire.sse import SSEDecoder

CHUNK = 64 * 1024
WORDS = [
    "the",
    "user",
    "wants",
    "a",
    "careful",
    "answer",
    "so",
    "let",
    "me",
    "check",
    "each",
    "step",
    "first",
    "compute",
    "the",
    "sum",
    "then",
    "verify",
    "the",
    "product",
    "carefully;",
    "résumé",
    "naïve",
    "世界",
    "🧠",
    "→",
    "42",
    "×",
    "3",
    "=",
    "126",
    "and",
    "(a",
    "+",
    "b)²",
    "≥",
    "0",
]


def _pieces(rnd: random.Random) -> Iterator[str]:
    """Delta texts as providers send them: one or two tokens, leading space."""
    while True:
        n = 1 if rnd.random() < 0.7 else 2
        yield "".join(" " + rnd.choice(WORDS) for _ in range(n))


def _sse(payload: dict[str, object], event: bool) -> str:
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {payload['type']}\n" if event else ""
    return f"{head}data: {data}\n\n"


def _fill(
    target: int, make: Callable[[str, bool], str], rnd: random.Random
) -> tuple[list[str], str, str]:
    """Reasoning deltas for 40% of the bytes, text deltas for the rest (until ``target``)."""
    parts: list[str] = []
    size = 0
    reasoning: list[str] = []
    text: list[str] = []
    pieces = _pieces(rnd)
    while size < target:
        thinking = size < target * 0.4
        piece = next(pieces)
        (reasoning if thinking else text).append(piece)
        s = make(piece, thinking)
        parts.append(s)
        size += len(s.encode("utf-8"))
    return parts, "".join(reasoning), "".join(text)


def build_chat(target: int, rnd: random.Random) -> bytes:
    top = {
        "id": "chatcmpl-9f8e7d6c5b4a",
        "object": "chat.completion.chunk",
        "created": 1764664568,
        "model": "deepseek-reasoner",
        "system_fingerprint": "fp_eaab8d114b_prod0820_fp8_kvcache",
    }

    def delta(piece: str, thinking: bool) -> str:
        d = {"content": None, "reasoning_content": piece} if thinking else {"content": piece}
        choice = {"index": 0, "delta": d, "logprobs": None, "finish_reason": None}
        return (
            "data: "
            + json.dumps(
                {**top, "choices": [choice], "usage": None},
                ensure_ascii=False,
                separators=(",", ":"),
            )
            + "\n\n"
        )

    first = {
        **top,
        "choices": [
            {
                "index": 0,
                "delta": {"role": "assistant", "content": None, "reasoning_content": ""},
                "logprobs": None,
                "finish_reason": None,
            }
        ],
    }
    body, _, _ = _fill(target, delta, rnd)
    last = {
        **top,
        "choices": [
            {"index": 0, "delta": {"content": ""}, "logprobs": None, "finish_reason": "stop"}
        ],
    }
    usage = {
        **top,
        "choices": [],
        "usage": {
            "prompt_tokens": 339,
            "completion_tokens": 90000,
            "total_tokens": 90339,
            "prompt_tokens_details": {"cached_tokens": 320},
            "completion_tokens_details": {"reasoning_tokens": 40000},
        },
    }
    out = ["data: " + json.dumps(first) + "\n\n", *body]
    out += [
        "data: " + json.dumps(last) + "\n\n",
        "data: " + json.dumps(usage) + "\n\n",
        "data: [DONE]\n\n",
    ]
    return "".join(out).encode("utf-8")


def build_responses(target: int, rnd: random.Random) -> bytes:
    rid, rs = "resp_01830d662ab3856501693c321345c88190b0de00f3b9975691", "rs_01830d662ab38565016"
    msg = "msg_01830d662ab3856501693c3216"
    seq = iter(range(10**9))
    response = {
        "id": rid,
        "object": "response",
        "created_at": 1765552659,
        "status": "in_progress",
        "model": "gpt-5.1",
        "output": [],
        "usage": None,
    }

    def ev(**kw: object) -> str:
        return _sse({"type": kw.pop("type"), "sequence_number": next(seq), **kw}, True)

    def obf() -> str:
        return "".join(
            rnd.choice("abcdefghijklmnopqrstuvwxyzABCDEF0123456789")
            for _ in range(rnd.randint(3, 12))
        )

    # about 200 bytes per delta event: draw the pieces first, then frame them
    pieces = _pieces(rnd)
    n = target // 200
    reasoning = [next(pieces) for _ in range(int(n * 0.4))]
    text = [next(pieces) for _ in range(n - len(reasoning))]
    summary, answer = "".join(reasoning), "".join(text)
    item = {
        "id": rs,
        "type": "reasoning",
        "encrypted_content": "gAAAAABpPDIV" + "x" * 1200,
        "summary": [{"type": "summary_text", "text": summary}],
    }
    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": answer}
    message = {
        "id": msg,
        "type": "message",
        "status": "completed",
        "content": [part],
        "role": "assistant",
    }
    usage = {
        "input_tokens": 134,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 90000,
        "output_tokens_details": {"reasoning_tokens": 40000},
        "total_tokens": 90134,
    }
    out = [
        ev(type="response.created", response=response),
        ev(type="response.in_progress", response=response),
        ev(
            type="response.output_item.added",
            output_index=0,
            item={"id": rs, "type": "reasoning", "summary": []},
        ),
        ev(
            type="response.reasoning_summary_part.added",
            item_id=rs,
            output_index=0,
            summary_index=0,
            part={"type": "summary_text", "text": ""},
        ),
    ]
    out += [
        ev(
            type="response.reasoning_summary_text.delta",
            item_id=rs,
            output_index=0,
            summary_index=0,
            delta=p,
            obfuscation=obf(),
        )
        for p in reasoning
    ]
    out += [
        ev(
            type="response.reasoning_summary_text.done",
            item_id=rs,
            output_index=0,
            summary_index=0,
            text=summary,
        ),
        ev(
            type="response.reasoning_summary_part.done",
            item_id=rs,
            output_index=0,
            summary_index=0,
            part={"type": "summary_text", "text": summary},
        ),
        ev(type="response.output_item.done", output_index=0, item=item),
        ev(
            type="response.output_item.added",
            output_index=1,
            item={
                "id": msg,
                "type": "message",
                "status": "in_progress",
                "content": [],
                "role": "assistant",
            },
        ),
        ev(
            type="response.content_part.added",
            item_id=msg,
            output_index=1,
            content_index=0,
            part={**part, "text": ""},
        ),
    ]
    out += [
        ev(
            type="response.output_text.delta",
            item_id=msg,
            output_index=1,
            content_index=0,
            delta=p,
            logprobs=[],
            obfuscation=obf(),
        )
        for p in text
    ]
    out += [
        ev(
            type="response.output_text.done",
            item_id=msg,
            output_index=1,
            content_index=0,
            text=answer,
            logprobs=[],
        ),
        ev(
            type="response.content_part.done",
            item_id=msg,
            output_index=1,
            content_index=0,
            part=part,
        ),
        ev(type="response.output_item.done", output_index=1, item=message),
        ev(
            type="response.completed",
            response={**response, "status": "completed", "output": [item, message], "usage": usage},
        ),
    ]
    return "".join(out).encode("utf-8")


def build_anthropic(target: int, rnd: random.Random) -> bytes:
    started = []

    def delta(piece: str, thinking: bool) -> str:
        pre = ""
        if not thinking and not started:
            started.append(True)
            pre = (
                _sse(
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {
                            "type": "signature_delta",
                            "signature": "EqQBCkgIBxABGAIqQL" + "A" * 400,
                        },
                    },
                    True,
                )
                + _sse({"type": "content_block_stop", "index": 0}, True)
                + _sse(
                    {
                        "type": "content_block_start",
                        "index": 1,
                        "content_block": {"type": "text", "text": ""},
                    },
                    True,
                )
            )
        if thinking:
            return _sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": piece},
                },
                True,
            )
        return pre + _sse(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": piece},
            },
            True,
        )

    usage = {
        "input_tokens": 69,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 1,
    }
    head = [
        _sse(
            {
                "type": "message_start",
                "message": {
                    "model": "claude-sonnet-4-5-20250929",
                    "id": "msg_01Y6V41gqPaKWEw7iPouH7iW",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
            True,
        ),
        _sse(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
            True,
        ),
        'event: ping\ndata: {"type": "ping"}\n\n',
    ]
    body, _, _ = _fill(target, delta, rnd)
    tail = [
        _sse({"type": "content_block_stop", "index": 1}, True),
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 90000},
            },
            True,
        ),
        _sse({"type": "message_stop"}, True),
    ]
    return "".join(head + body + tail).encode("utf-8")


def build_gemini(target: int, rnd: random.Random) -> bytes:
    def chunk(parts: list[dict[str, object]], finish: str | None = None) -> str:
        cand: dict[str, object] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            cand["finishReason"] = finish
        payload = {
            "candidates": [cand],
            "usageMetadata": {
                "promptTokenCount": 29,
                "totalTokenCount": 29,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 29}],
            },
            "modelVersion": "gemini-2.5-pro",
            "responseId": "QHiLaa6LBrb8vdIPoNztsAg",
        }
        return (
            "data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\r\n\r\n"
        )

    def delta(piece: str, thinking: bool) -> str:
        return chunk([{"text": piece, "thought": True}] if thinking else [{"text": piece}])

    body, _, _ = _fill(target, delta, rnd)
    final = {
        "candidates": [
            {
                "content": {
                    "parts": [{"text": "", "thoughtSignature": "CiQB0e2Kb" + "Q" * 600}],
                    "role": "model",
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 29,
            "candidatesTokenCount": 50000,
            "totalTokenCount": 90029,
            "thoughtsTokenCount": 40000,
        },
        "modelVersion": "gemini-2.5-pro",
        "responseId": "QHiLaa6LBrb8vdIPoNztsAg",
    }
    return ("".join(body) + "data: " + json.dumps(final) + "\r\n\r\n").encode("utf-8")


def build_interactions(target: int, rnd: random.Random) -> bytes:
    """The recorded Interactions stream's shape (cassettes-2026/vercel__google-interactions__
    tool-call-step1.chunks.txt): created, a thought step (summary deltas, then its signature),
    a model_output step of text deltas, completed with usage."""

    def ev(payload: dict[str, object]) -> str:
        return "data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n\n"

    opened = [False]

    def delta(piece: str, thinking: bool) -> str:
        if thinking:
            d = {"content": {"type": "text", "text": piece}, "type": "thought_summary"}
            return ev({"index": 0, "delta": d, "event_type": "step.delta"})
        head = ""
        if not opened[0]:
            opened[0] = True
            sig = {"signature": "CiQBDDnWx" + "Q" * 600, "type": "thought_signature"}
            head = (
                ev({"index": 0, "delta": sig, "event_type": "step.delta"})
                + ev({"index": 0, "event_type": "step.stop"})
                + ev(
                    {
                        "index": 1,
                        "step": {"type": "model_output", "content": []},
                        "event_type": "step.start",
                    }
                )
            )
        return head + ev(
            {"index": 1, "delta": {"text": piece, "type": "text"}, "event_type": "step.delta"}
        )

    iid = "v1_ChdVbXNIYXVEUkVacmpxdHNQb3JQeXlBRRIXVW1zSGF1RFJFWnJqcXRzUG9yUHl5QUU"
    head = [
        ev(
            {
                "interaction": {
                    "id": iid,
                    "status": "in_progress",
                    "object": "interaction",
                    "model": "gemini-3-flash",
                },
                "event_type": "interaction.created",
            }
        ),
        ev({"index": 0, "step": {"type": "thought"}, "event_type": "step.start"}),
    ]
    body, _, _ = _fill(target, delta, rnd)
    usage = {"total_tokens": 90053, "total_input_tokens": 53, "total_cached_tokens": 0,
             "total_output_tokens": 50000, "total_tool_use_tokens": 0, "total_thought_tokens": 40000}  # fmt: skip
    tail = [
        ev({"index": 1, "event_type": "step.stop"}),
        ev(
            {
                "interaction": {
                    "id": iid,
                    "status": "completed",
                    "usage": usage,
                    "object": "interaction",
                },
                "event_type": "interaction.completed",
            }
        ),
    ]
    return "".join(head + body + tail).encode("utf-8")


BARS = {"chat": 4.0, "responses": 4.0, "anthropic": 3.9, "gemini": 3.0, "interactions": 3.0}
"""ours/sdk per dialect (issue 28; the Interactions row holds Gemini's bar)."""

BUILDERS: dict[str, Callable[[int, random.Random], bytes]] = {
    "chat": build_chat,
    "responses": build_responses,
    "anthropic": build_anthropic,
    "gemini": build_gemini,
    "interactions": build_interactions,
}


# --------------------------------------------------------------------------------------------
# Decoders under test
# --------------------------------------------------------------------------------------------


def chunks_of(data: bytes) -> list[bytes]:
    return [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)]


def run_ours(dialect: str, chunks: list[bytes]) -> int:
    dec = get_dialect(dialect).stream_decoder()
    n = 0
    for c in chunks:
        n += len(dec.feed(c))
    final = dec.close()
    assert isinstance(final[-1], Done)
    return n + len(final)


def run_sse_only(chunks: list[bytes]) -> int:
    dec = SSEDecoder()
    loads = json.loads
    n = 0
    for c in chunks:
        for ev in dec.feed(c):
            if ev.data != "[DONE]":
                loads(ev.data)
                n += 1
    return n


def run_sdk(chunks: list[bytes]) -> int:
    from openai._streaming import SSEDecoder as SDKDecoder

    loads = json.loads
    n = 0
    for sse in SDKDecoder().iter_bytes(iter(chunks)):
        if sse.data.startswith("[DONE]"):
            break
        loads(sse.data)
        n += 1
    return n


def interleaved(fns: dict[str, Callable[[], int]], repeat: int) -> dict[str, tuple[float, int]]:
    """Best CPU time (``time.process_time``) of each function over ``repeat`` rounds, the
    functions alternating within each round: load from other processes on a shared machine
    then hits every column alike instead of whichever ran during a busy spell."""
    best: dict[str, float] = {}
    result: dict[str, int] = {}
    for _ in range(repeat):
        for name, fn in fns.items():
            gc.collect()
            t0 = time.process_time()
            result[name] = fn()
            spent = time.process_time() - t0
            best[name] = min(best.get(name, spent), spent)
    return {name: (best[name], result[name]) for name in fns}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=50.0, help="stream size per dialect (MB)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dialect", action="append", choices=list(BUILDERS))
    ap.add_argument("--profile", choices=list(BUILDERS), help="cProfile our decoder on one dialect")
    args = ap.parse_args()
    target = int(args.mb * 1_000_000)

    if args.profile:
        data = BUILDERS[args.profile](target, random.Random(7))
        chunks = chunks_of(data)
        prof = cProfile.Profile()
        prof.runcall(run_ours, args.profile, chunks)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
        return

    import openai

    print(
        f"openai SDK {openai.__version__}; {args.mb:g} MB per dialect, {CHUNK // 1024} KiB chunks, "
        f"best CPU time of {args.repeat} interleaved rounds (MB per CPU second)"
    )
    print(
        f"{'dialect':<12} {'events':>8} {'ours MB/s':>10} {'sse+json':>10} {'sdk MB/s':>10} {'ours/sdk':>9}  target"
    )
    for dialect in args.dialect or list(BUILDERS):
        data = BUILDERS[dialect](target, random.Random(7))
        chunks = chunks_of(data)
        mb = len(data) / 1e6
        run_ours(dialect, chunks)  # warm-up: imports and first-use caches stay out of the timing
        timed = interleaved(
            {
                "ours": lambda: run_ours(dialect, chunks),  # noqa: B023
                "sse": lambda: run_sse_only(chunks),  # noqa: B023
                "sdk": lambda: run_sdk(chunks),  # noqa: B023
            },
            args.repeat,
        )
        (t_ours, _), (t_sse, events), (t_sdk, sdk_events) = (
            timed["ours"],
            timed["sse"],
            timed["sdk"],
        )
        assert sdk_events == events, (dialect, sdk_events, events)
        ratio = t_sdk / t_ours
        bar = BARS[dialect]
        goal = f">= {bar:g}x " + ("met" if ratio >= bar else "MISSED")
        print(
            f"{dialect:<12} {events:>8} {mb / t_ours:>10.1f} {mb / t_sse:>10.1f} "
            f"{mb / t_sdk:>10.1f} {ratio:>8.2f}x  {goal}"
        )


if __name__ == "__main__":
    main()
