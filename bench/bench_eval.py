"""Bench: the full method over 100 chat models on the simulator with 1 s latency per call.

Bar: under 60 s with ``--workers 32`` (calls in flight across models, not model by model).
Peer in the same run: the same cells sent model by model (one model's calls at a time, still
32 in flight within a model), to show what overlapping models buys. Prints paid calls per chat
model for the full method.

Then, on the real llama-server (one slot: ``--parallel 1``, ``total_slots`` 1) with the Qwen3,
Kimi-K3 and Llama-3.1 templates: calls per model against the reference count (13, from the
method's rules: see ``REFERENCE_CALLS``), and the
wall time at the default workers against one worker (bar: default <= 1.5x one worker; before
the per-route slot cap the default took 5.8-7.0 s against 0.7-1.0 s). ``--no-local`` skips it.

    .venv/bin/python bench/bench_eval.py [--models 100] [--latency-ms 1000] [--workers 32]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from reasonwire.eval import EvalConfig, Target, arun_eval
from reasonwire.eval._embedded import sim_routes
from reasonwire.eval._records import read_jsonl
from reasonwire.sim import SimServer
from reasonwire.sim.behaviours import BEHAVIOURS


def chat_targets(sim: SimServer, n: int, latency_ms: int) -> list[Target]:
    """``n`` distinct chat model ids cycling the chat behaviours, each answering after
    ``latency_ms`` (the sim's ``model@slow:<ms>`` fault; distinct ms keep the ids distinct)."""
    route = sim_routes(sim.base_url, sim.root_url)["chat"]
    chat = [m for m, b in BEHAVIOURS.items() if b.dialect == "chat" and not b.lanes]
    return [
        Target(route, f"{chat[i % len(chat)]}@slow:{latency_ms + i // len(chat)}") for i in range(n)
    ]


async def across(targets: list[Target], out: Path, workers: int) -> tuple[float, int]:
    t = time.monotonic()
    res = await arun_eval(EvalConfig(targets=targets, out=out, workers=workers))
    return time.monotonic() - t, res.sent


async def model_by_model(targets: list[Target], out: Path, workers: int) -> tuple[float, int]:
    t = time.monotonic()
    sent = 0
    for target in targets:
        res = await arun_eval(EvalConfig(targets=[target], out=out, workers=workers))
        sent += res.sent
    return time.monotonic() - t, sent


REFERENCE_CALLS = 10 + 3
"""Calls per model the method's documented rules give on this server with these templates
(docs/quickstart/consumption.md, "The method's rules"): the text step's 5 variants (``none``,
``reasoning_content``, ``reasoning``, ``reasoning_details``, ``all``) at 2 positions = 10, and
turn 1 at low, medium and high = 3: the tiny model never calls the tool, and since the effort
climbs on no tool call too (the rule added after this bench was written, when 12 was the
reference: turn 1 then stopped at its first level), turn 1 is sent once per level of the
ladder (``local-llama`` takes ``reasoning_effort``), with nothing for turn 2 to replay. T costs
no call (llama-server has no count endpoint: the chars/4 estimate). The calls are free
(loopback): the rule against a paid call that can no longer change the result does not bear
on them; the server's template ignores the effort (``/props`` ``chat_template_caps``
``supports_reasoning_effort`` false for all three), so the medium and high turn 1s render the
same prompt as low."""
LOCAL_TEMPLATES = ("Qwen-Qwen3-0.6B", "Kimi-K3", "meta-llama-Llama-3.1-8B-Instruct")


def one_slot(repeat: int = 3) -> None:
    """Calls per model and one-slot timings on the real llama-server (see the docstring)."""
    from reasonwire.eval._embedded import local_target
    from reasonwire.localserver.server import LocalServer

    default_workers = EvalConfig(targets=[], out=Path()).workers
    print(f"real llama-server, one slot; reference {REFERENCE_CALLS} calls per model")
    for template in LOCAL_TEMPLATES:
        with LocalServer(template, quiet=True) as server, tempfile.TemporaryDirectory() as tmp:
            times: dict[int, list[float]] = {default_workers: [], 1: []}
            calls: set[int] = set()
            for i in range(repeat):
                for workers in times:
                    target = local_target(server.base_url)
                    out = Path(tmp) / f"{workers}-{i}"
                    t = time.monotonic()
                    res = asyncio.run(
                        arun_eval(EvalConfig(targets=[target], out=out, workers=workers))
                    )
                    times[workers].append(time.monotonic() - t)
                    calls.update(res.calls_per_model.values())
            d, o = min(times[default_workers]), min(times[1])
            bar = "PASS" if d <= 1.5 * o + 0.05 and max(calls) <= REFERENCE_CALLS else "FAIL"
            print(
                f"  {template:34s} calls/model {sorted(calls)} (ref {REFERENCE_CALLS}); "
                f"workers {default_workers}: {d:.2f} s, workers 1: {o:.2f} s "
                f"(ratio {d / o:.2f}, bar <=1.5x): {bar}"
            )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--latency-ms", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=32)
    ap.add_argument("--peer-models", type=int, default=8, help="models for the serial peer")
    ap.add_argument("--no-local", action="store_true", help="skip the real llama-server part")
    args = ap.parse_args()
    with SimServer(seed=0) as sim, tempfile.TemporaryDirectory() as tmp:
        targets = chat_targets(sim, args.models, args.latency_ms)
        wall, sent = asyncio.run(across(targets, Path(tmp) / "across", args.workers))
        per_model: Counter[str] = Counter()
        for r in read_jsonl(Path(tmp) / "across" / "calls.jsonl"):
            per_model[r["model"]] += 1
        peer_targets = targets[: args.peer_models]
        peer_wall, _ = asyncio.run(model_by_model(peer_targets, Path(tmp) / "serial", args.workers))
    per = [per_model[t.model] for t in targets]
    bar = "PASS" if wall < 60 else "FAIL"
    print(f"models {args.models}, latency {args.latency_ms} ms, workers {args.workers}")
    print(
        f"across models: {wall:.1f} s for {sent} calls ({sent / wall:.1f} calls/s)"
        f"  bar <60 s: {bar}"
    )
    peer_per_model = peer_wall / len(peer_targets)
    print(
        f"peer, model by model ({len(peer_targets)} models): {peer_wall:.1f} s "
        f"({peer_per_model:.1f} s/model -> {peer_per_model * args.models:.0f} s for {args.models})"
    )
    print(
        f"ratio (model-by-model extrapolated / across): {peer_per_model * args.models / wall:.1f}x"
    )
    print(
        f"paid calls per chat model: median {statistics.median(per)}, "
        f"min {min(per)}, max {max(per)}"
    )
    base = {m.split("@")[0] for m in per_model}
    for b in sorted(base):
        counts = sorted({per_model[m] for m in per_model if m.split("@")[0] == b})
        print(f"  {b:18s} {counts}")
    if not args.no_local:
        one_slot()


if __name__ == "__main__":
    main()
