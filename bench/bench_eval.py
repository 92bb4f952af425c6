"""Bench: the full method over 100 chat models on the simulator with 1 s latency per call.

Bar: under 60 s with ``--workers 32`` (calls in flight across models, not model by model).
Peer in the same run: the same cells sent model by model (one model's calls at a time, still
32 in flight within a model), to show what overlapping models buys. Prints paid calls per chat
model for the full method.

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
from reasonwire.eval.embedded import sim_routes
from reasonwire.eval.records import read_jsonl
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--latency-ms", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=32)
    ap.add_argument("--peer-models", type=int, default=8, help="models for the serial peer")
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


if __name__ == "__main__":
    main()
