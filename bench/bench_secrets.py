"""Secret detection and redaction scale linearly: the detector against a plain regex pass.

The detector (``reasonwire.secrets_scan.scan_text``, ``reasonwire.credentials.redact``) runs
on every body the audit, the probe and the gateway keep. A quadratic pattern on a hostile
input (long runs of a key prefix, base64 without end) would stall them. For each input shape
the detector's time at 1x, 4x and 16x the input is printed with its growth ratio, beside a
baseline of the same bytes (one ``re.finditer`` of a plain token pattern over the text):
linear is ~4x per step.

    .venv/bin/python bench/bench_secrets.py [--kb 250]
"""

from __future__ import annotations

import argparse
import gc
import random
import re
import string
import time
from collections.abc import Callable

from reasonwire.credentials import redact
from reasonwire.secrets_scan import scan_text


def _b64(n: int) -> str:
    rnd = random.Random(7)
    return "".join(rnd.choices(string.ascii_letters + string.digits + "+/", k=n))


def _repeat(unit: str) -> Callable[[int], str]:
    return lambda n: (unit * (n // len(unit) + 1))[:n]


INPUTS: dict[str, Callable[[int], str]] = {
    "base64": _b64,
    "sk-": _repeat("sk-"),
    "eyJ.": _repeat("eyJab."),
    "AKIA": _repeat("AKIA"),
    "Bearer": _repeat("Bearer "),
    "BEGIN/END": _repeat("-----" + "BEGIN RSA PRIVATE KEY-----x-----" + "END RSA PRIVATE KEY-----"),
    "escaped": _repeat("\\u0073k-"),
}  # fmt: skip

_TOKEN = re.compile(r"[A-Za-z0-9_\-]{20,}")


def _best(fn: Callable[[], object], runs: int) -> float:
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(runs):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
    finally:
        gc.enable()
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb", type=int, default=250, help="the 1x input size (kB)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sizes = [args.kb * 1000 * k for k in (1, 4, 16)]
    print(f"{'input':<10} {'what':<9} {'1x ms':>9} {'4x ms':>9} {'16x ms':>9} {'16x/1x':>8}")
    for name, make in INPUTS.items():
        texts = [make(n) for n in sizes]
        rows = {
            "scan": [_best(lambda t=t: scan_text(t), args.repeat) for t in texts],
            "redact": [_best(lambda t=t: redact(t), 1) for t in texts],
            "baseline": [
                _best(lambda t=t: sum(1 for _ in _TOKEN.finditer(t)), args.repeat) for t in texts
            ],
        }
        for what, ts in rows.items():
            print(
                f"{name:<10} {what:<9} {ts[0] * 1e3:>9.1f} {ts[1] * 1e3:>9.1f} "
                f"{ts[2] * 1e3:>9.1f} {ts[2] / ts[0]:>7.1f}x"
            )


if __name__ == "__main__":
    main()
