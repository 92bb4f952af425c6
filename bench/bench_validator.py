"""``qualify validate`` in linear time: each input shape at 1x, 4x and 16x, the ratio printed.

A linear validator takes ~16x the time on 16x the input (``16x/1x`` near 16; noise makes
small inputs read high); a quadratic one takes ~256x. Issue 25 found time growing faster
than the input; the shapes below are the ones a hostile or careless evidence file can grow:
many observations, negative cases or repeated keys (each a problem message), long values of
base64 or of near-miss key prefixes (every prefix the detector and the validator's table
know), JSON escapes, and values nested at the depth bound (deeper is refused unread).

Times are the best CPU time of ``--repeat`` runs. ``no-gc`` is the same ratio with Python's
cyclic garbage collector paused during the call: on inputs that build many objects (thousands
of observations or cases) its generational passes add a share that grows with the live heap
(measured here: 16x/1x ~21 with it, ~16.5 without), which is the interpreter's, not the
validator's. No threshold is asserted (the tests assert none either); read the ratio columns.

Run: ``.venv/bin/python bench/bench_validator.py [--base 20000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import random
import string
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.govern.test_validator import good

from reasonwire.errors import EvidenceError
from reasonwire.govern.validator import MAX_DEPTH, validate_text

HEAD = "a" * 40


def _doc() -> dict[str, Any]:
    return good(HEAD)


def _with_limitation(n: int, make: Callable[[int], str]) -> str:
    doc = _doc()
    doc["limitations"].append(make(n))
    return json.dumps(doc)


def _b64(n: int) -> str:
    rnd = random.Random(3)
    return "".join(rnd.choices(string.ascii_letters + string.digits + "+/", k=n))


def _observations(n: int) -> str:
    doc = _doc()
    first = doc["observations"][0]
    doc["observations"] = [dict(first, evidence_call_ids=[f"c{i}"]) for i in range(n // 200)]
    return json.dumps(doc)


def _negative_cases(n: int) -> str:
    doc = _doc()
    for i in range(n // 50):
        doc["negative_cases"][f"case-{i}"] = {"outcome": "accepted", "reason": "x"}
    return json.dumps(doc)


def _repeated_keys(n: int) -> str:
    body = json.dumps(_doc())
    members = ", ".join(f'"k{i % 997}": {i}' for i in range(n // 12))
    return body[:-1] + ', "extra": {' + members + "}}"


def _deep(n: int) -> str:
    """Many leaves at the deepest accepted level."""
    body = json.dumps(_doc())
    leaves = ",".join(["1"] * (n // 2))
    inner = "[" * (MAX_DEPTH - 1) + leaves + "]" * (MAX_DEPTH - 1)
    return body[:-1] + ', "extra": ' + inner + "}"


NEAR_MISS: tuple[str, ...] = (
    "sk-",
    "xai-",
    "AIza",
    "ghp_",
    "hf_",
    "AKIA",
    "eyJab.",
    "gsk_",
    "csk-",
    "nvapi-",
    "r8_",
    "Bearer ",
    "-----BEGIN ",
    "api ",
)

SHAPES: dict[str, Callable[[int], str]] = {
    "base64 value": lambda n: _with_limitation(n, _b64),
    "near-miss prefixes": lambda n: _with_limitation(
        n, lambda k: "".join(NEAR_MISS) * (k // sum(map(len, NEAR_MISS)))
    ),
    "JSON escapes": lambda n: (
        json.dumps(_doc())[:-1] + ', "limitations": ["' + "\\u0073k-" * (n // 8) + '"]}'
    ),
    "observations": _observations,
    "negative cases": _negative_cases,
    "repeated keys": _repeated_keys,
    "deep leaves": _deep,
}


def _time(text: str, repeat: int, collect: bool = True) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        if not collect:
            gc.disable()
        try:
            t0 = time.process_time()
            with contextlib.suppress(EvidenceError):
                validate_text(text, HEAD)
            best = min(best, time.process_time() - t0)
        finally:
            gc.enable()
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=int, default=20_000, help="1x input size in characters")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(
        f"{'shape':<20} {'1x':>16} {'4x':>16} {'16x':>16} {'16x/1x':>7} {'no-gc':>6}  (linear: ~16)"
    )
    for name, make in SHAPES.items():
        cells, times, bare = [], [], []
        for mult in (1, 4, 16):
            text = make(args.base * mult)
            took = _time(text, args.repeat)
            times.append(took)
            bare.append(_time(text, args.repeat, collect=False))
            cells.append(f"{len(text) / 1e3:.0f}k {took * 1e3:.1f}ms")
        ratio = times[2] / times[0] if times[0] > 0 else float("nan")
        ratio_bare = bare[2] / bare[0] if bare[0] > 0 else float("nan")
        print(
            f"{name:<20} {cells[0]:>16} {cells[1]:>16} {cells[2]:>16} {ratio:>7.1f} "
            f"{ratio_bare:>6.1f}"
        )


if __name__ == "__main__":
    main()
